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
