package pgutil

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestNullTimeAndUTC(t *testing.T) {
	if NullTime(time.Time{}) != nil {
		t.Error("the zero time should be NULL")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	if got := NullTime(at); got != at {
		t.Errorf("NullTime(%v) = %v", at, got)
	}
	if !UTC(nil).IsZero() {
		t.Error("NULL should read back as the zero time")
	}
	if got := UTC(&at); got.Location() != time.UTC || !got.Equal(at) {
		t.Errorf("UTC(%v) = %v", at, got)
	}
}

func TestRetryable(t *testing.T) {
	for code, want := range map[string]bool{"40001": true, "40P01": true, "23505": false, "": false} {
		err := fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code})
		if got := Retryable(err); got != want {
			t.Errorf("Retryable(%q) = %v, want %v", code, got, want)
		}
	}
	if Retryable(errors.New("plain")) || Code(nil) != "" {
		t.Error("a plain error has no SQLSTATE")
	}
}
