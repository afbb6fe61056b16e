package query

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Query is a parsed list request: the page, the order and the filters,
// every value already checked against its field's type. Build one with
// Schema.Parse; compile it to SQL with the subpackage sqlbuild (Page and
// Count), or read its fields to build a statement another way.
type Query struct {
	// Limit is the page size, between 1 and the schema's max limit.
	Limit int
	// Offset is the number of records skipped, at least 0; always 0 with a
	// cursor (After).
	Offset int64
	// Sort is the order, the tiebreaker always last.
	Sort []Order
	// Filters are ANDed.
	Filters []Filter
	// After is the position of the cursor that the after parameter gave:
	// the values of the sort keys of the last row of the previous page, in
	// the order of Sort (the tiebreaker last), nil for NULL, with the Go
	// types that Filter.Values documents. The page is the rows that come
	// strictly after it (sqlbuild.Page). Nil when there is no cursor.
	After []any

	schema *Schema // the schema that parsed the query, for NextCursor
}

// Order is one sort key.
type Order struct {
	// Field is the field's API name.
	Field string
	// Desc is true for descending order.
	Desc bool

	column   string
	nullable bool
	typ      Type
}

// Filter is one parsed filter=field:op:value.
type Filter struct {
	// Field is the field's API name.
	Field string
	// Op is the operator.
	Op Op
	// Values holds the typed values: one for most operators, several for
	// In, and a bool for IsNull. Their Go types by field type: UUID, String
	// and Enum string (a UUID in lower case); Integer int64; Number float64;
	// Date and Timestamp time.Time (UTC); Boolean bool. For Like and ILike the
	// value is the pattern as the client wrote it.
	Values []any

	column string
	typ    Type
}

// Column returns the SQL column the filter reads: the schema's
// Field.Column, or its Name, a plain identifier that Schema.Validate
// checked. It is the only text of a filter that a compiler may write into
// SQL; the Values are bound.
func (f Filter) Column() string { return f.column }

// Type returns the type of the filtered field, which decides how each of
// the Values is bound (Dialect.Date, Dialect.Timestamp).
func (f Filter) Type() Type { return f.typ }

// Column returns the SQL column of the sort key, as Filter.Column does.
func (o Order) Column() string { return o.column }

// Type returns the type of the sort key's field, which decides how the
// key's value in a cursor position (Query.After) is bound.
func (o Order) Type() Type { return o.typ }

// Nullable reports whether the sort key's column may hold NULL
// (Field.Nullable): its order must then place NULLs last ascending and
// first descending, and a cursor position may hold nil for it.
func (o Order) Nullable() bool { return o.nullable }

// The query parameters every list endpoint understands.
const (
	paramLimit  = "limit"
	paramOffset = "offset"
	paramSort   = "sort"
	paramFilter = "filter"
	paramAfter  = "after"
)

// ParseQuery decodes a raw query string (r.URL.RawQuery) and parses it as
// Parse does. A query string that does not decode, such as one with a bare
// % that is not an escape, is an invalid_request error.
func (s *Schema) ParseQuery(rawQuery string) (*Query, error) {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, apierrors.InvalidRequest("the query string does not decode: %s", describeDecodeError(err))
	}
	return s.Parse(values)
}

// describeDecodeError keeps the reason of a url decoding error and drops the
// Go-specific wrapping.
func describeDecodeError(err error) string {
	if e, ok := err.(url.EscapeError); ok {
		return "invalid escape " + quote(string(e)) + "; a literal %, such as the wildcard of like and ilike, is written %25 in a URL"
	}
	return err.Error()
}

// Parse reads limit, offset, after, sort and filter from values, as the
// package documentation describes them; after is refused when the schema
// has no CursorKey, and with offset. Any other parameter that the schema does
// not list in Params is rejected: a filter is never dropped silently. Every error is an
// invalid_request *apierrors.Error that names the parameter or field and
// the reason, but for a schema that does not validate: that fails every
// Parse with an internal (500) *apierrors.Error that wraps Validate's
// error.
func (s *Schema) Parse(values url.Values) (*Query, error) {
	if err := s.check(); err != nil {
		return nil, apierrors.Internal(err)
	}
	if err := s.checkParams(values); err != nil {
		return nil, err
	}
	_, hasOffset := values[paramOffset]
	after, hasAfter := values[paramAfter]
	if hasAfter && hasOffset {
		return nil, apierrors.InvalidRequest("after and offset cannot be combined: after continues from the last row of the previous page, whatever its offset; drop offset")
	}
	q := &Query{Limit: s.defaultLimit(), schema: s}
	if v, ok := values[paramLimit]; ok {
		n, err := single(paramLimit, v)
		if err != nil {
			return nil, err
		}
		limit, ok := parseCount(n)
		if !ok || limit < 1 || limit > int64(s.maxLimit()) {
			return nil, apierrors.InvalidRequest("limit must be an integer from 1 to %d, not %s", s.maxLimit(), quote(n))
		}
		q.Limit = int(limit)
	}
	if v, ok := values[paramOffset]; ok {
		n, err := single(paramOffset, v)
		if err != nil {
			return nil, err
		}
		offset, ok := parseCount(n)
		if !ok {
			return nil, apierrors.InvalidRequest("offset must be an integer of at least 0, not %s", quote(n))
		}
		q.Offset = offset
	}
	sorts := values[paramSort]
	if len(sorts) == 0 && s.DefaultSort != "" {
		sorts = []string{s.DefaultSort}
	}
	sort, err := s.parseSort(sorts)
	if err != nil {
		return nil, err
	}
	q.Sort = sort
	if filters := values[paramFilter]; len(filters) > 0 {
		if len(filters) > MaxFilters {
			return nil, apierrors.InvalidRequest("at most %d filters are allowed, not %d", MaxFilters, len(filters))
		}
		q.Filters = make([]Filter, len(filters))
		for i, raw := range filters {
			if err := s.parseFilter(raw, &q.Filters[i]); err != nil {
				return nil, err
			}
		}
	}
	if hasAfter {
		cursor, err := single(paramAfter, after)
		if err != nil {
			return nil, err
		}
		if q.After, err = q.decodeCursor(cursor); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// checkParams rejects the first unknown parameter, in sorted order so the
// answer does not depend on map iteration.
func (s *Schema) checkParams(values url.Values) error {
	var unknown string
	found := false
	for k := range values {
		switch k {
		case paramLimit, paramOffset, paramAfter, paramSort, paramFilter:
			continue
		}
		if slices.Contains(s.Params, k) {
			continue
		}
		if !found || k < unknown {
			unknown, found = k, true
		}
	}
	if found {
		return apierrors.InvalidRequest("unknown query parameter %s; a list takes %s", quote(unknown), s.paramList())
	}
	return nil
}

// paramList names the parameters a list takes, the caller's Params included:
// "limit, offset, sort and filter".
func (s *Schema) paramList() string {
	names := []string{paramLimit, paramOffset}
	if s.CursorKey != nil {
		names = append(names, paramAfter)
	}
	names = append(names, paramSort, paramFilter)
	for _, p := range s.Params {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func single(name string, v []string) (string, error) {
	if len(v) != 1 {
		return "", apierrors.InvalidRequest("%s may be given once, not %d times", name, len(v))
	}
	return v[0], nil
}

// parseCount parses a non-negative decimal integer of at most 18 digits,
// without sign, spaces or anything else.
func parseCount(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseSort parses sort values ("field:asc", "a:desc,b:asc", repeatable) and
// appends the tiebreaker unless a key already names it.
func (s *Schema) parseSort(values []string) ([]Order, error) {
	n := 1
	for _, v := range values {
		n += strings.Count(v, ",") + 1
	}
	if n-1 > MaxSortKeys {
		return nil, apierrors.InvalidRequest("at most %d sort keys are allowed", MaxSortKeys)
	}
	orders := make([]Order, 0, n)
	for _, v := range values {
		for key := range strings.SplitSeq(v, ",") {
			name, dir, hasDir := strings.Cut(key, ":")
			if name == "" {
				return nil, apierrors.InvalidRequest("sort %s: expected field:asc or field:desc", quote(v))
			}
			var desc bool
			switch {
			case !hasDir || dir == "asc":
			case dir == "desc":
				desc = true
			default:
				return nil, apierrors.InvalidRequest("sort on %s: direction must be asc or desc, not %s", quote(name), quote(dir))
			}
			f := s.field(name)
			switch {
			case slices.Contains(s.Reserved, name):
				return nil, apierrors.InvalidRequest("sort on %s: the field is set by the server and cannot be sorted on", quote(name))
			case f == nil:
				return nil, apierrors.InvalidRequest("sort on %s: unknown field; sortable fields: %s", quote(name), s.listFields(func(f *Field) bool { return f.Sortable }))
			case !f.Sortable:
				return nil, apierrors.InvalidRequest("sort on %s: the field cannot be sorted on; sortable fields: %s", quote(name), s.listFields(func(f *Field) bool { return f.Sortable }))
			}
			for _, o := range orders {
				if o.Field == name {
					return nil, apierrors.InvalidRequest("sort on %s: the field is named twice", quote(name))
				}
			}
			orders = append(orders, Order{Field: name, Desc: desc, column: f.column(), nullable: f.Nullable, typ: f.Type})
		}
	}
	tb := s.tiebreaker()
	for _, o := range orders {
		if o.Field == tb {
			return orders, nil
		}
	}
	f := s.field(tb)
	desc := len(orders) > 0 && orders[len(orders)-1].Desc
	return append(orders, Order{Field: tb, Desc: desc, column: f.column(), nullable: f.Nullable, typ: f.Type}), nil
}

// parseFilter parses one field:op:value, split on its first two colons only.
func (s *Schema) parseFilter(raw string, out *Filter) error {
	name, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return apierrors.InvalidRequest("filter %s: expected field:operator:value", quote(raw))
	}
	op, value, ok := strings.Cut(rest, ":")
	if !ok {
		return apierrors.InvalidRequest("filter on %s: expected field:operator:value", quote(name))
	}
	f := s.field(name)
	switch {
	case slices.Contains(s.Reserved, name):
		return apierrors.InvalidRequest("filter on %s: the field is set by the server and cannot be filtered", quote(name))
	case f == nil:
		return apierrors.InvalidRequest("filter on %s: unknown field; filterable fields: %s", quote(name), s.listFields(func(f *Field) bool { return f.Filterable }))
	case !f.Filterable:
		return apierrors.InvalidRequest("filter on %s: the field cannot be filtered; filterable fields: %s", quote(name), s.listFields(func(f *Field) bool { return f.Filterable }))
	case !knownOp(Op(op)):
		return apierrors.InvalidRequest("filter on %s: unknown operator %s", quote(name), quote(op))
	case !f.allows(Op(op)):
		return apierrors.InvalidRequest("filter on %s: operator %s is not allowed; the field allows %s", quote(name), quote(op), joinOps(f))
	case len(value) > MaxValueLength:
		return apierrors.InvalidRequest("filter on %s: the value is longer than %d bytes", quote(name), MaxValueLength)
	case !utf8.ValidString(value) || strings.IndexByte(value, 0) >= 0:
		return apierrors.InvalidRequest("filter on %s: the value must be UTF-8 text without NUL characters", quote(name))
	}
	*out = Filter{Field: name, Op: Op(op), column: f.column(), typ: f.Type}
	values, err := parseValues(f, Op(op), value)
	if err != nil {
		return apierrors.InvalidRequest("filter on %s: %s", quote(name), err.Error())
	}
	out.Values = values
	return nil
}

func knownOp(op Op) bool {
	switch op {
	case Eq, Ne, Gt, Gte, Lt, Lte, In, Like, ILike, IsNull:
		return true
	}
	return false
}

func joinOps(f *Field) string {
	ops := f.Ops
	if ops == nil {
		ops = DefaultOps(f.Type)
	}
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(op))
	}
	return b.String()
}

func (s *Schema) listFields(keep func(*Field) bool) string {
	var names []string
	for i := range s.Fields {
		if keep(&s.Fields[i]) {
			names = append(names, s.Fields[i].Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// quote quotes client text for an error description, cut to 64 bytes at a
// rune boundary, with control characters escaped.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}
