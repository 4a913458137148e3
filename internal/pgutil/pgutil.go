// Package pgutil holds the small helpers every PostgreSQL package of the
// venue uses (store/postgres, handshake/postgres, pircan/pgstate): how a
// zero time is stored, how a nullable timestamp is read back, and which
// SQLSTATE codes mean a transaction lost a race and may run again
// (ARCHITECTURE.md "Packages").
package pgutil

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// NullTime is t as a query argument: NULL (nil) for the zero time, else t.
func NullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// UTC is a scanned nullable timestamp in UTC: the zero time for NULL (nil).
func UTC(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// SQLSTATE codes of a transaction that lost to another.
const (
	CodeSerializationFailure = "40001"
	CodeDeadlockDetected     = "40P01"
)

// Code is the SQLSTATE of err's *pgconn.PgError, or "" when it has none.
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Retryable reports whether err says the transaction lost a serialization
// race or a deadlock to another and may simply be run again.
func Retryable(err error) bool {
	c := Code(err)
	return c == CodeSerializationFailure || c == CodeDeadlockDetected
}
