package resource

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/waybillhq/waybill/query"
)

// A RowReader reads the rows of an export, or of a list's page, on a
// database driver's own connection, without the copy and the conversion
// database/sql makes of every value it reads: through database/sql an
// export spends most of its time, and all its garbage, there, and a page
// of 50 records a thousand allocations. A registry whose RowReader is set
// reads its exports' rows and its lists' pages through it (a list's total,
// on the same connection, and single records still read through
// database/sql); package pgxrows has one for PostgreSQL through pgx. A
// list then takes one connection from the pool for its total and its page,
// and gives it back before it writes its answer.
type RowReader interface {
	// Query runs text, its parameters bound to args, on driverConn (what
	// sql.Conn.Raw hands to its func: inside the export's transaction, or
	// a connection of its own for a list's page),
	// and returns its rows. ok is false, and nothing is run, when the
	// reader does not read from connections of driverConn's kind: the
	// export then reads through database/sql.
	Query(ctx context.Context, driverConn any, text string, args []any) (rows Rows, ok bool, err error)
}

// Rows are the rows of a RowReader's query, read one at a time. After a
// Next that returns true, each column of the row is read by the accessor
// of its field's type (see query.Type): Text for a UUID, String, Enum or
// Date (a date as YYYY-MM-DD), Int for an Integer, Float for a Number,
// Time for a Timestamp, Bool for a Boolean; Null first, since the others
// do not take null. A slice Text returns is valid until the next Next.
type Rows interface {
	Next() bool
	// Err is the error that ended the rows, if any.
	Err() error
	// Close ends the query; it may be called more than once.
	Close()
	Null(i int) bool
	Text(i int) ([]byte, error)
	Int(i int) (int64, error)
	Float(i int) (float64, error)
	Time(i int) (time.Time, error)
	Bool(i int) (bool, error)
}

// sqlRows are the Rows of a query through database/sql: each row scanned
// and the values of the columns it reads (only; nil: all) normalized (see
// normalize); the text of a value is copied into a buffer of its column,
// which the next row reuses.
type sqlRows struct {
	rows       *sql.Rows
	cols       []column
	only       []bool
	vals, ptrs []any
	text       [][]byte
	err        error
}

// sqlRows returns the Rows of rows, a query of the handlers' columns, of
// which only (nil: all) are read.
func (h *handlers) sqlRows(rows *sql.Rows, only []bool) *sqlRows {
	vals, ptrs := h.scratch()
	return &sqlRows{rows: rows, cols: h.cols, only: only, vals: vals, ptrs: ptrs, text: make([][]byte, len(h.cols))}
}

func (s *sqlRows) Next() bool {
	if s.err != nil || !s.rows.Next() {
		return false
	}
	if s.err = s.rows.Scan(s.ptrs...); s.err != nil {
		return false
	}
	for i, c := range s.cols {
		if s.only != nil && !s.only[i] {
			continue
		}
		if s.vals[i], s.err = normalize(c.typ, s.vals[i]); s.err != nil {
			return false
		}
	}
	return true
}

func (s *sqlRows) Err() error {
	if s.err != nil {
		return s.err
	}
	return s.rows.Err()
}

func (s *sqlRows) Close()          { _ = s.rows.Close() }
func (s *sqlRows) Null(i int) bool { return s.vals[i] == nil }

func (s *sqlRows) Text(i int) ([]byte, error) {
	v, ok := s.vals[i].(string)
	if !ok {
		return nil, s.mismatch(i, "text")
	}
	s.text[i] = append(s.text[i][:0], v...)
	return s.text[i], nil
}

func (s *sqlRows) Int(i int) (int64, error)     { return value[int64](s, i, "an integer") }
func (s *sqlRows) Float(i int) (float64, error) { return value[float64](s, i, "a number") }
func (s *sqlRows) Time(i int) (time.Time, error) {
	return value[time.Time](s, i, "a timestamp")
}
func (s *sqlRows) Bool(i int) (bool, error) { return value[bool](s, i, "a boolean") }

func (s *sqlRows) mismatch(i int, want string) error {
	return fmt.Errorf("resource: column %s holds %T, read as %s", s.cols[i].name, s.vals[i], want)
}

// value returns the normalized value of column i as a T.
func value[T any](s *sqlRows, i int, want string) (T, error) {
	v, ok := s.vals[i].(T)
	if !ok {
		return v, s.mismatch(i, want)
	}
	return v, nil
}

// appendColumn appends column i of the current row, of type t, as JSON
// (csv false: exactly what appendJSON writes of its Record value) or as a
// CSV cell and its comma (what appendCSVCell writes).
func appendColumn(b []byte, rows Rows, i int, t query.Type, csv bool) ([]byte, error) {
	if rows.Null(i) {
		if csv {
			return append(b, ','), nil
		}
		return append(b, "null"...), nil
	}
	var err error
	switch t {
	case query.UUID, query.String, query.Enum, query.Date:
		var s []byte
		if s, err = rows.Text(i); csv {
			b = appendCSVText(b, s)
		} else {
			b = appendString(b, s)
		}
	case query.Integer:
		var n int64
		n, err = rows.Int(i)
		b = strconv.AppendInt(b, n, 10)
	case query.Number:
		var f float64
		f, err = rows.Float(i)
		b = appendFloat(b, f)
	case query.Timestamp:
		var ts time.Time
		ts, err = rows.Time(i)
		if csv {
			b = appendTimestamp(b, ts)
		} else {
			b = append(appendTimestamp(append(b, '"'), ts), '"')
		}
	case query.Boolean:
		var v bool
		v, err = rows.Bool(i)
		b = strconv.AppendBool(b, v)
	default:
		err = fmt.Errorf("resource: a column of type %v", t)
	}
	if csv {
		b = append(b, ',')
	}
	return b, err
}

// appendTimestamp appends t in UTC in query.SQLiteTimestampLayout, as
// t.UTC().AppendFormat does, about five times faster for the years 0 to
// 9999 (every other year goes through AppendFormat).
func appendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, query.SQLiteTimestampLayout)
	}
	hour, min, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), min, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends n, 0 <= n < 10^width, in width (at most 6) digits.
func appendDigits(b []byte, n, width int) []byte {
	start := len(b)
	b = append(b, "000000"[:width]...)
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}
