package query

import (
	"fmt"
	"time"
)

// Dialect is the SQL dialect a Query is compiled for, by the subpackage
// sqlbuild or by the caller's own code. It decides the placeholders, how
// LIKE and ILIKE are written, how NULLs sort, and how dates and timestamps
// are bound; this package holds only what binds and reads values (Date,
// Timestamp, ScanTimestamp), which needs no SQL builder.
type Dialect uint8

// The supported dialects.
const (
	// Postgres is PostgreSQL: $n placeholders, LIKE and ILIKE with an
	// ESCAPE clause, timestamps bound as time.Time.
	Postgres Dialect = iota + 1
	// SQLite is SQLite: ? placeholders; like is GLOB (case-sensitive) and
	// ilike is LIKE with an ESCAPE clause (case-insensitive for ASCII
	// letters, as SQLite's LIKE is); timestamps are stored and bound as
	// text in SQLiteTimestampLayout so that they compare in time order.
	SQLite
)

// SQLiteTimestampLayout is the layout of timestamps stored in SQLite: UTC,
// fixed width, microseconds, so that text order is time order. A schema
// that keeps timestamps in SQLite must write them with Dialect.Timestamp.
const SQLiteTimestampLayout = "2006-01-02T15:04:05.000000Z"

// String returns "postgres" or "sqlite".
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	}
	return fmt.Sprintf("Dialect(%d)", uint8(d))
}

// Timestamp returns the value to bind or store for a timestamp in d: a UTC
// time.Time for PostgreSQL, a text in SQLiteTimestampLayout for SQLite.
func (d Dialect) Timestamp(t time.Time) any {
	if d == SQLite {
		return t.UTC().Format(SQLiteTimestampLayout)
	}
	return t.UTC()
}

// ScanTimestamp returns a timestamp as a driver reads it from either
// dialect, in UTC: a time.Time from PostgreSQL, text in
// SQLiteTimestampLayout (or any RFC 3339 text) from SQLite. NULL (nil) is
// the zero time.
func ScanTimestamp(v any) (time.Time, error) {
	switch v := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return v.UTC(), nil
	case []byte:
		return ScanTimestamp(string(v))
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		return t.UTC(), err
	}
	return time.Time{}, fmt.Errorf("query: a timestamp of type %T", v)
}

// Date returns the value to bind or store for a date in d: YYYY-MM-DD text,
// which PostgreSQL reads as a date and SQLite compares in date order.
func (d Dialect) Date(t time.Time) any {
	return t.Format(time.DateOnly)
}
