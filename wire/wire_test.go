package wire

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	cases := map[string]int{
		CodeInvalidJSON:     http.StatusBadRequest,
		CodeInvalidArgument: http.StatusUnprocessableEntity,
		CodeUnknownType:     http.StatusUnprocessableEntity,
		CodeInvalidState:    http.StatusConflict,
		CodeConflict:        http.StatusConflict,
		CodeRateLimited:     http.StatusTooManyRequests,
		CodeUnauthorized:    http.StatusUnauthorized,
		CodeForbidden:       http.StatusForbidden,
		CodeNotFound:        http.StatusNotFound,
		CodeTooLarge:        http.StatusRequestEntityTooLarge,
		CodeUnavailable:     http.StatusServiceUnavailable,
		CodeOutcomeUnknown:  http.StatusServiceUnavailable,
		CodeTooManyGrants:   http.StatusConflict,
		CodeInternal:        http.StatusInternalServerError,
		"no_such_code":      http.StatusInternalServerError,
	}
	for code, want := range cases {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%q) = %d, want %d", code, got, want)
		}
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	var err error = Errorf(CodeInvalidArgument, "ttl_seconds must be a %s", "number")
	var we *Error
	if !errors.As(err, &we) || we.Code != CodeInvalidArgument || we.Message != "ttl_seconds must be a number" {
		t.Fatalf("Errorf: %#v", err)
	}
	if err.Error() != "invalid_argument: ttl_seconds must be a number" {
		t.Fatalf("Error() = %q", err.Error())
	}
}

func TestTime(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 30, 9, 19, 22, 134_999_999, paris)
	if got := Time(at); got != "2026-11-30T08:19:22.134Z" {
		t.Fatalf("Time = %q, want UTC with milliseconds", got)
	}
	if got := Time(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); got != "2026-01-02T03:04:05.000Z" {
		t.Fatalf("Time = %q, want the zero milliseconds written", got)
	}
	back, err := ParseTime(Time(at))
	if err != nil || !back.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("ParseTime(Time(t)) = %v, %v", back, err)
	}
	if _, err := ParseTime("2026-11-30 08:19:22"); err == nil {
		t.Fatal("ParseTime took a time that is not RFC 3339")
	}
}

// TestAppendTimeAsFormat: the digits AppendTime writes are time.Format's
// with TimeLayout, for times across and beyond the years it writes itself.
func TestAppendTimeAsFormat(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 28, 23, 59, 59, 1_000_000, time.FixedZone("X", -11*3600)),
	}
	for i := int64(0); i < 20000; i++ { // every few days over four centuries, odd nanoseconds
		times = append(times, time.Unix(-2_000_000_000+i*631_151, i*7_919_777%1_000_000_000))
	}
	for _, at := range times {
		want := at.UTC().Format(TimeLayout)
		if got := string(AppendTime([]byte("x"), at)); got != "x"+want {
			t.Fatalf("AppendTime(%v) = %q, want x%q", at, got, want)
		}
		if got := Time(at); got != want {
			t.Fatalf("Time(%v) = %q, want %q", at, got, want)
		}
	}
}

// FuzzAppendTime: AppendTime agrees with time.Format for any instant.
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1764576000), int64(123_456_789))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		at := time.Unix(sec, nsec)
		if got, want := string(AppendTime(nil, at)), at.UTC().Format(TimeLayout); got != want {
			t.Fatalf("AppendTime(%v) = %q, want %q", at, got, want)
		}
	})
}

func BenchmarkTime(b *testing.B) {
	at := time.Date(2026, 11, 30, 8, 19, 22, 134_999_999, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		timeSink = Time(at)
	}
}

var timeSink string
