package resource

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// column is what the handlers know of one selected column: its name and
// the type its values have.
type column struct {
	name string
	typ  query.Type
}

// selected returns the columns a resource's statements select and return:
// its fields, then organization_id, then branch_id for branch-scoped
// resources (null for the organization-wide records of branch-or-null
// ones).
func selected(r *Resource) []column {
	cols := make([]column, 0, len(r.fields)+2)
	for _, f := range r.fields {
		cols = append(cols, column{f.Name, f.Type})
	}
	cols = append(cols, column{OrganizationColumn, query.UUID})
	if r.ScopeType != tenancy.Organization {
		cols = append(cols, column{BranchColumn, query.UUID})
	}
	return cols
}

// normalize turns a value as a driver returns it into the Go type of its
// field (see Record): PostgreSQL's numeric text becomes float64, its dates
// YYYY-MM-DD, SQLite's timestamp text time.Time, its 0/1 booleans bool.
func normalize(t query.Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	switch t {
	case query.UUID, query.String, query.Enum:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case query.Integer:
		switch n := v.(type) {
		case int64:
			return n, nil
		case string:
			return strconv.ParseInt(n, 10, 64)
		}
	case query.Number:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int64:
			return float64(n), nil
		case string:
			return strconv.ParseFloat(n, 64)
		}
	case query.Date:
		switch d := v.(type) {
		case time.Time:
			return d.Format(time.DateOnly), nil
		case string:
			return d, nil
		}
	case query.Timestamp:
		return query.ScanTimestamp(v)
	case query.Boolean:
		switch b := v.(type) {
		case bool:
			return b, nil
		case int64:
			return b != 0, nil
		}
	}
	return nil, fmt.Errorf("resource: a %v column holds %T", t, v)
}

// appendValue appends v, a value of type t as the driver scanned it, as
// JSON: what appendJSON appends for normalize(t, v), without boxing the
// normalized value in an interface, for every field of every record a list
// answers (FuzzAppendJSON checks that the two agree).
func appendValue(b []byte, t query.Type, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		switch t {
		case query.UUID, query.String, query.Enum, query.Date:
			return appendString(b, v), nil
		case query.Number:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, err
			}
			return appendFloat(b, f), nil
		}
	case []byte:
		switch t {
		case query.UUID, query.String, query.Enum, query.Date:
			return appendString(b, v), nil
		}
	case time.Time:
		switch t {
		case query.Date:
			return append(v.AppendFormat(append(b, '"'), time.DateOnly), '"'), nil
		case query.Timestamp:
			return append(appendTimestamp(append(b, '"'), v), '"'), nil
		}
	case int64:
		switch t {
		case query.Integer:
			return strconv.AppendInt(b, v, 10), nil
		case query.Number:
			return appendFloat(b, float64(v)), nil
		}
	case float64:
		if t == query.Number {
			return appendFloat(b, v), nil
		}
	}
	n, err := normalize(t, v)
	if err != nil {
		return nil, err
	}
	return appendJSON(b, n), nil
}

// bind turns a Record value into what the dialect binds for type t.
func bind(d query.Dialect, t query.Type, v any) any {
	if v == nil {
		return nil
	}
	if t == query.Timestamp {
		return d.Timestamp(v.(time.Time))
	}
	return v
}

// appendJSON appends v, a Record value, as JSON: byte for byte what
// encoding/json writes (a timestamp as its text in
// query.SQLiteTimestampLayout), which FuzzAppendJSON checks, but about three
// times faster and without allocating (BenchmarkAppendJSON), for every value
// of every record a list answers.
func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		return appendFloat(b, v)
	case bool:
		return strconv.AppendBool(b, v)
	case time.Time:
		// RFC 3339 in UTC with microseconds, the precision both databases
		// keep: the layout SQLite stores them in.
		return append(appendTimestamp(append(b, '"'), v), '"')
	}
	return append(b, "null"...)
}

// appendFloat writes a float as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 becomes 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// characters escaped, and <, >, & as \u escapes so that the output is safe
// anywhere, as encoding/json does. Invalid UTF-8 becomes U+FFFD.
func appendString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == 0xFFFD && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeRune decodes the first rune of s, as utf8.DecodeRune does.
func decodeRune[S string | []byte](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	return utf8.DecodeRune(buf[:copy(buf[:], s)])
}

// quoteList writes names as a comma-separated list for messages.
func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
