package query

import (
	"fmt"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Dialect is the SQL dialect a Query compiles to. It decides the
// placeholders, how LIKE and ILIKE are written, how NULLs sort, and how
// dates and timestamps are bound.
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

// likeEscape is the ESCAPE character of compiled LIKE patterns. It is not
// a backslash, so that the clause reads the same in every dialect and every
// string-literal mode, and a backslash in a pattern is an ordinary
// character.
const likeEscape = '!'

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

// PlaceholderFormat returns the squirrel placeholder format of d.
func (d Dialect) PlaceholderFormat() sq.PlaceholderFormat {
	if d == Postgres {
		return sq.Dollar
	}
	return sq.Question
}

// SQL renders s, built with ? placeholders, and converts the placeholders
// once, at the top, to d's format. Converting at the top and not in nested
// builders keeps PostgreSQL's $n numbering right.
func (d Dialect) SQL(s sq.Sqlizer) (string, []any, error) {
	sql, args, err := s.ToSql()
	if err != nil {
		return "", nil, err
	}
	if d == Postgres {
		sql, err = sq.Dollar.ReplacePlaceholders(sql)
	}
	return sql, args, err
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

// Where returns the filters of q as one squirrel condition, ANDed, every
// value a bound ? parameter. It returns nil when q has no filters.
func (q *Query) Where(d Dialect) sq.Sqlizer {
	if len(q.Filters) == 0 {
		return nil
	}
	return where{filters: q.Filters, dialect: d}
}

// OrderBy returns the ORDER BY terms of q, the tiebreaker last.
func (q *Query) OrderBy(d Dialect) []string {
	terms := make([]string, len(q.Sort))
	for i, o := range q.Sort {
		terms[i] = o.term(d)
	}
	return terms
}

// Page adds q's filters, order, limit and offset to b, a SELECT that
// already names its columns, its table and any conditions of the caller
// (the tenant, say). Limit and offset are bound parameters, so every page
// of a request shape has the same SQL text. When q has a cursor (After),
// Page adds its condition, as Keyset returns it, instead of an offset:
// LIMIT alone, the rows strictly after the cursor's position.
func (q *Query) Page(d Dialect, b sq.SelectBuilder) sq.SelectBuilder {
	if q.After != nil {
		// One Where for the filters and the cursor: each squirrel builder
		// call copies the builder's state.
		return b.Where(where{filters: q.Filters, dialect: d, seek: &keyset{sort: q.Sort, after: q.After, dialect: d}}).
			OrderBy(q.OrderBy(d)...).Suffix("LIMIT ?", q.Limit)
	}
	if len(q.Filters) > 0 {
		b = b.Where(where{filters: q.Filters, dialect: d})
	}
	return b.OrderBy(q.OrderBy(d)...).Suffix("LIMIT ? OFFSET ?", q.Limit, q.Offset)
}

// Keyset returns the condition of q's cursor: the rows that come strictly
// after the position After in the order OrderBy gives, every value a bound
// ? parameter. It returns nil when q has no cursor. Page adds it; Keyset
// is for a caller that builds its statement with Where and OrderBy.
//
// When every sort key has the same direction and none is Nullable, the
// condition is one row-value comparison, (a, b, id) > (?, ?, ?) (< when
// descending), which an index on (a, b, id) serves directly. Otherwise it
// is the equivalent chain a > ? OR (a = ? AND (b < ? OR (b = ? AND id <
// ?))), led by a bound on the first key (a >= ?) where one holds, in which
// a NULL sorts after every value ascending and before every value
// descending, as OrderBy places NULLs.
func (q *Query) Keyset(d Dialect) sq.Sqlizer {
	if q.After == nil {
		return nil
	}
	return keyset{sort: q.Sort, after: q.After, dialect: d}
}

// Count adds q's filters to b, typically sq.Select("COUNT(*)").From(table)
// with the caller's conditions, for the total of every matching record. A
// cursor does not change the count: it is the total of the whole list.
func (q *Query) Count(d Dialect, b sq.SelectBuilder) sq.SelectBuilder {
	if len(q.Filters) > 0 {
		b = b.Where(where{filters: q.Filters, dialect: d})
	}
	return b
}

func (o Order) term(d Dialect) string {
	switch {
	case d == SQLite && o.nullable && o.Desc:
		return o.column + " DESC NULLS FIRST"
	case d == SQLite && o.nullable:
		return o.column + " ASC NULLS LAST"
	case o.Desc:
		return o.column + " DESC"
	}
	return o.column + " ASC"
}

// where is the squirrel condition of a list of filters, and of a cursor
// when seek is set.
type where struct {
	filters []Filter
	dialect Dialect
	seek    *keyset
}

// ToSql implements sq.Sqlizer. The SQL text holds only column names from
// the schema, operators and ? placeholders: no byte of a client's value.
func (w where) ToSql() (string, []any, error) {
	var b strings.Builder
	b.Grow(32 * len(w.filters))
	nargs := 0
	for _, f := range w.filters {
		nargs += len(f.Values)
	}
	args := make([]any, 0, nargs)
	for i, f := range w.filters {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(f.column)
		switch f.Op {
		case IsNull:
			if f.Values[0].(bool) {
				b.WriteString(" IS NULL")
			} else {
				b.WriteString(" IS NOT NULL")
			}
			continue
		case In:
			b.WriteString(" IN (")
			for j := range f.Values {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString("?")
			}
			b.WriteString(")")
		case Like, ILike:
			pattern := f.Values[0].(string)
			switch {
			case w.dialect == SQLite && f.Op == Like:
				b.WriteString(" GLOB ?")
				args = append(args, globPattern(pattern))
				continue
			case w.dialect == SQLite, f.Op == Like:
				b.WriteString(" LIKE ? ESCAPE '!'")
			default:
				b.WriteString(" ILIKE ? ESCAPE '!'")
			}
			args = append(args, likePattern(pattern))
			continue
		default:
			b.WriteString(comparison(f.Op))
		}
		for _, v := range f.Values {
			args = append(args, w.dialect.bind(f.typ, v))
		}
	}
	if w.seek != nil {
		sql, seekArgs, err := w.seek.ToSql()
		if err != nil {
			return "", nil, err
		}
		if len(w.filters) > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(sql)
		args = append(args, seekArgs...)
	}
	return b.String(), args, nil
}

// comparison returns the SQL of a comparison operator with its placeholder.
func comparison(op Op) string {
	switch op {
	case Ne:
		return " <> ?"
	case Gt:
		return " > ?"
	case Gte:
		return " >= ?"
	case Lt:
		return " < ?"
	case Lte:
		return " <= ?"
	}
	return " = ?"
}

// bind converts a parsed value to what d binds for a field of type t.
func (d Dialect) bind(t Type, v any) any {
	switch t {
	case Date:
		return d.Date(v.(time.Time))
	case Timestamp:
		return d.Timestamp(v.(time.Time))
	}
	return v
}

// likePattern turns a client pattern, where % is the only wildcard, into a
// LIKE pattern with ESCAPE '!': _ and ! are escaped, % stays a wildcard,
// every other character (\ included, as no backslash escape is in force)
// matches itself.
func likePattern(p string) string {
	if !strings.ContainsAny(p, "_!") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 4)
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '_' || c == likeEscape {
			b.WriteByte(likeEscape)
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// globPattern turns a client pattern, where % is the only wildcard, into a
// SQLite GLOB pattern: % becomes *, and GLOB's own special characters *, ?
// and [ become one-character classes that match them literally.
func globPattern(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 4)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%':
			b.WriteByte('*')
		case '*', '?', '[':
			b.WriteByte('[')
			b.WriteByte(c)
			b.WriteByte(']')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// keyset is the squirrel condition of a cursor: the rows strictly after a
// position in the order of sort.
type keyset struct {
	sort    []Order
	after   []any
	dialect Dialect
}

// ToSql implements sq.Sqlizer. The SQL holds column names, operators and
// placeholders only; which of IS NULL and = a key gets depends on whether
// the position holds NULL there, never on a value.
func (k keyset) ToSql() (string, []any, error) {
	if len(k.after) != len(k.sort) || len(k.sort) == 0 {
		return "", nil, fmt.Errorf("query: the cursor position has %d values for %d sort keys", len(k.after), len(k.sort))
	}
	for i, o := range k.sort {
		if k.after[i] == nil && !o.nullable {
			return "", nil, fmt.Errorf("query: the cursor position is NULL for %q, which is not Nullable", o.Field)
		}
	}
	var b strings.Builder
	b.Grow(24 * len(k.sort))
	args := make([]any, 0, 2*len(k.sort))
	if k.rowValue() {
		op := " > "
		if k.sort[0].Desc {
			op = " < "
		}
		if len(k.sort) == 1 {
			b.WriteString(k.sort[0].column)
			b.WriteString(op)
			b.WriteString("?")
		} else {
			b.WriteString("(")
			for i, o := range k.sort {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(o.column)
			}
			b.WriteString(")")
			b.WriteString(op)
			b.WriteString("(")
			for i := range k.sort {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("?")
			}
			b.WriteString(")")
		}
		for i, o := range k.sort {
			args = append(args, k.dialect.bind(o.typ, k.after[i]))
		}
		return b.String(), args, nil
	}
	// A bound on the first key lets an index on it start the scan at the
	// cursor: every row after a non-NULL position has a first key at least
	// (ascending, NULLs aside) or at most (descending) the position's.
	if first := k.sort[0]; len(k.sort) > 1 && k.after[0] != nil && (first.Desc || !first.nullable) {
		b.WriteString(first.column)
		if first.Desc {
			b.WriteString(" <= ? AND ")
		} else {
			b.WriteString(" >= ? AND ")
		}
		args = append(args, k.dialect.bind(first.typ, k.after[0]))
	}
	b.WriteString("(")
	args = k.chain(&b, args, 0)
	b.WriteString(")")
	return b.String(), args, nil
}

// rowValue reports whether the keys can be compared as one row value: the
// same direction and no NULLs.
func (k keyset) rowValue() bool {
	for _, o := range k.sort {
		if o.nullable || o.Desc != k.sort[0].Desc {
			return false
		}
	}
	return true
}

// chain writes the condition "after the position on keys i and on":
// after on key i, or equal on key i and after on the keys that follow.
func (k keyset) chain(b *strings.Builder, args []any, i int) []any {
	o, v := k.sort[i], k.after[i]
	last := i == len(k.sort)-1
	// After on key i; nothing comes after a NULL ascending, as NULLs are
	// last then.
	switch {
	case v == nil && !o.Desc:
		if last {
			b.WriteString("1 = 0")
			return args
		}
	case v == nil:
		b.WriteString(o.column)
		b.WriteString(" IS NOT NULL")
	case o.Desc:
		b.WriteString(o.column)
		b.WriteString(" < ?")
		args = append(args, k.dialect.bind(o.typ, v))
	case o.nullable:
		b.WriteString("(")
		b.WriteString(o.column)
		b.WriteString(" > ? OR ")
		b.WriteString(o.column)
		b.WriteString(" IS NULL)")
		args = append(args, k.dialect.bind(o.typ, v))
	default:
		b.WriteString(o.column)
		b.WriteString(" > ?")
		args = append(args, k.dialect.bind(o.typ, v))
	}
	if last {
		return args
	}
	if v != nil || o.Desc {
		b.WriteString(" OR ")
	}
	b.WriteString("(")
	b.WriteString(o.column)
	if v == nil {
		b.WriteString(" IS NULL AND (")
	} else {
		b.WriteString(" = ? AND (")
		args = append(args, k.dialect.bind(o.typ, v))
	}
	args = k.chain(b, args, i+1)
	b.WriteString("))")
	return args
}
