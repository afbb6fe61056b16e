package sqlbuild

import (
	"fmt"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/query"
)

// likeEscape is the ESCAPE character of compiled LIKE patterns. It is not
// a backslash, so that the clause reads the same in every dialect and every
// string-literal mode, and a backslash in a pattern is an ordinary
// character.
const likeEscape = '!'

// Placeholders returns the squirrel placeholder format of d: $n for
// PostgreSQL, ? for SQLite. SQL applies it; a caller that renders a
// builder itself sets it once, on the outermost builder.
func Placeholders(d query.Dialect) sq.PlaceholderFormat {
	if d == query.Postgres {
		return sq.Dollar
	}
	return sq.Question
}

// SQL renders s, built with ? placeholders, and converts the placeholders
// once, at the top, to d's format. Converting at the top and not in nested
// builders keeps PostgreSQL's $n numbering right.
func SQL(d query.Dialect, s sq.Sqlizer) (string, []any, error) {
	sql, args, err := s.ToSql()
	if err != nil {
		return "", nil, err
	}
	if d == query.Postgres {
		sql, err = sq.Dollar.ReplacePlaceholders(sql)
	}
	return sql, args, err
}

// Where returns the filters of q as one squirrel condition, ANDed, every
// value a bound ? parameter. It returns nil when q has no filters.
func Where(d query.Dialect, q *query.Query) sq.Sqlizer {
	if len(q.Filters) == 0 {
		return nil
	}
	return where{filters: q.Filters, dialect: d}
}

// OrderBy returns the ORDER BY terms of q, the tiebreaker last. On SQLite
// a Nullable key gets NULLS LAST ascending and NULLS FIRST descending, so
// that NULLs sort as PostgreSQL sorts them.
func OrderBy(d query.Dialect, q *query.Query) []string {
	terms := make([]string, len(q.Sort))
	for i := range q.Sort {
		terms[i] = term(d, &q.Sort[i])
	}
	return terms
}

// Page adds q's filters, order, limit and offset to b, a SELECT that
// already names its columns, its table and any conditions of the caller
// (the tenant, say). Limit and offset are bound parameters, so every page
// of a request shape has the same SQL text. When q has a cursor (After),
// Page adds its condition, as Keyset returns it, instead of an offset:
// LIMIT alone, the rows strictly after the cursor's position.
func Page(d query.Dialect, q *query.Query, b sq.SelectBuilder) sq.SelectBuilder {
	if q.After != nil {
		// One Where for the filters and the cursor: each squirrel builder
		// call copies the builder's state.
		return b.Where(where{filters: q.Filters, dialect: d, seek: &keyset{sort: q.Sort, after: q.After, dialect: d}}).
			OrderBy(OrderBy(d, q)...).Suffix("LIMIT ?", q.Limit)
	}
	if len(q.Filters) > 0 {
		b = b.Where(where{filters: q.Filters, dialect: d})
	}
	return b.OrderBy(OrderBy(d, q)...).Suffix("LIMIT ? OFFSET ?", q.Limit, q.Offset)
}

// Keyset returns the condition of q's cursor: the rows that come strictly
// after the position q.After in the order OrderBy gives, every value a
// bound ? parameter. It returns nil when q has no cursor. Page adds it;
// Keyset is for a caller that builds its statement with Where and OrderBy.
//
// When every sort key has the same direction and none is Nullable, the
// condition is one row-value comparison, (a, b, id) > (?, ?, ?) (< when
// descending), which an index on (a, b, id) serves directly. Otherwise it
// is the equivalent chain a > ? OR (a = ? AND (b < ? OR (b = ? AND id <
// ?))), led by a bound on the first key (a >= ?) where one holds, in which
// a NULL sorts after every value ascending and before every value
// descending, as OrderBy places NULLs.
func Keyset(d query.Dialect, q *query.Query) sq.Sqlizer {
	if q.After == nil {
		return nil
	}
	return keyset{sort: q.Sort, after: q.After, dialect: d}
}

// Count adds q's filters to b, typically sq.Select("COUNT(*)").From(table)
// with the caller's conditions, for the total of every matching record. A
// cursor does not change the count: it is the total of the whole list.
func Count(d query.Dialect, q *query.Query, b sq.SelectBuilder) sq.SelectBuilder {
	if len(q.Filters) > 0 {
		b = b.Where(where{filters: q.Filters, dialect: d})
	}
	return b
}

// term returns the ORDER BY term of one sort key.
func term(d query.Dialect, o *query.Order) string {
	c := o.Column()
	if d == query.SQLite && o.Nullable() {
		if o.Desc {
			return c + " DESC NULLS FIRST"
		}
		return c + " ASC NULLS LAST"
	}
	if o.Desc {
		return c + " DESC"
	}
	return c + " ASC"
}

// where is the squirrel condition of a list of filters, and of a cursor
// when seek is set.
type where struct {
	filters []query.Filter
	dialect query.Dialect
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
		b.WriteString(f.Column())
		switch f.Op {
		case query.IsNull:
			if f.Values[0].(bool) {
				b.WriteString(" IS NULL")
			} else {
				b.WriteString(" IS NOT NULL")
			}
			continue
		case query.In:
			b.WriteString(" IN (")
			writeMarks(&b, len(f.Values), ",")
			b.WriteString(")")
		case query.Like, query.ILike:
			pattern := f.Values[0].(string)
			switch {
			case w.dialect == query.SQLite && f.Op == query.Like:
				b.WriteString(" GLOB ?")
				args = append(args, globPattern(pattern))
				continue
			case w.dialect == query.SQLite, f.Op == query.Like:
				b.WriteString(" LIKE ? ESCAPE '!'")
			default:
				b.WriteString(" ILIKE ? ESCAPE '!'")
			}
			args = append(args, likePattern(pattern))
			continue
		default:
			b.WriteString(comparison(f.Op))
		}
		typ := f.Type()
		for _, v := range f.Values {
			args = append(args, bind(w.dialect, typ, v))
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
func comparison(op query.Op) string {
	switch op {
	case query.Ne:
		return " <> ?"
	case query.Gt:
		return " > ?"
	case query.Gte:
		return " >= ?"
	case query.Lt:
		return " < ?"
	case query.Lte:
		return " <= ?"
	}
	return " = ?"
}

// bind converts a parsed value to what d binds for a field of type t.
func bind(d query.Dialect, t query.Type, v any) any {
	switch t {
	case query.Date:
		return d.Date(v.(time.Time))
	case query.Timestamp:
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
	sort    []query.Order
	after   []any
	dialect query.Dialect
}

// ToSql implements sq.Sqlizer. The SQL holds column names, operators and
// placeholders only; which of IS NULL and = a key gets depends on whether
// the position holds NULL there, never on a value.
func (k keyset) ToSql() (string, []any, error) {
	if len(k.after) != len(k.sort) || len(k.sort) == 0 {
		return "", nil, fmt.Errorf("sqlbuild: the cursor position has %d values for %d sort keys", len(k.after), len(k.sort))
	}
	for i, o := range k.sort {
		if k.after[i] == nil && !o.Nullable() {
			return "", nil, fmt.Errorf("sqlbuild: the cursor position is NULL for %q, which is not Nullable", o.Field)
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
			b.WriteString(k.sort[0].Column())
			b.WriteString(op)
			b.WriteString("?")
		} else {
			b.WriteString("(")
			for i, o := range k.sort {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(o.Column())
			}
			b.WriteString(")")
			b.WriteString(op)
			b.WriteString("(")
			writeMarks(&b, len(k.sort), ", ")
			b.WriteString(")")
		}
		for i, o := range k.sort {
			args = append(args, bind(k.dialect, o.Type(), k.after[i]))
		}
		return b.String(), args, nil
	}
	// A bound on the first key lets an index on it start the scan at the
	// cursor: every row after a non-NULL position has a first key at least
	// (ascending, NULLs aside) or at most (descending) the position's.
	if first := k.sort[0]; len(k.sort) > 1 && k.after[0] != nil && (first.Desc || !first.Nullable()) {
		b.WriteString(first.Column())
		if first.Desc {
			b.WriteString(" <= ? AND ")
		} else {
			b.WriteString(" >= ? AND ")
		}
		args = append(args, bind(k.dialect, first.Type(), k.after[0]))
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
		if o.Nullable() || o.Desc != k.sort[0].Desc {
			return false
		}
	}
	return true
}

// chain writes the condition "after the position on keys i and on":
// after on key i, or equal on key i and after on the keys that follow.
func (k keyset) chain(b *strings.Builder, args []any, i int) []any {
	o, v := k.sort[i], k.after[i]
	column := o.Column()
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
		b.WriteString(column)
		b.WriteString(" IS NOT NULL")
	case o.Desc:
		b.WriteString(column)
		b.WriteString(" < ?")
		args = append(args, bind(k.dialect, o.Type(), v))
	case o.Nullable():
		b.WriteString("(")
		b.WriteString(column)
		b.WriteString(" > ? OR ")
		b.WriteString(column)
		b.WriteString(" IS NULL)")
		args = append(args, bind(k.dialect, o.Type(), v))
	default:
		b.WriteString(column)
		b.WriteString(" > ?")
		args = append(args, bind(k.dialect, o.Type(), v))
	}
	if last {
		return args
	}
	if v != nil || o.Desc {
		b.WriteString(" OR ")
	}
	b.WriteString("(")
	b.WriteString(column)
	if v == nil {
		b.WriteString(" IS NULL AND (")
	} else {
		b.WriteString(" = ? AND (")
		args = append(args, bind(k.dialect, o.Type(), v))
	}
	args = k.chain(b, args, i+1)
	b.WriteString("))")
	return args
}

// writeMarks writes n placeholders ("?", numbered later for PostgreSQL)
// separated by sep.
func writeMarks(b *strings.Builder, n int, sep string) {
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString("?")
	}
}
