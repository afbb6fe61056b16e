package sqlbuild_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

var fuzzSeeds = []string{
	"",
	"limit=10&offset=20&sort=name:asc,packages:desc",
	"filter=status:eq:draft&filter=created_at:gte:2026-01-01T10:00:00Z",
	"filter=name:ilike:%25o'hara%25&filter=name:like:a_b%5C",
	`filter=name:in:"a,b","c""d",e`,
	"filter=comment:isnull:true&filter=day:isnull:false",
	"filter=weight:in:1,2.5,1e3&filter=packages:lt:-4",
	"filter=id:eq:0A1B2C3D-0000-4000-8000-00000000ABCD",
	"filter=name:eq:x'); DROP TABLE items; --",
	"filter=name:like:$1 ? ?? :name @p1",
	"filter=code:in:a,b&filter=day:lt:2026-02-01",
	"sort=day:desc&filter=active:ne:true",
	"filter=name:like:a*b?%25[c]!",
	"limit=1000&offset=999999999999999999",
}

// FuzzCompile checks, for any query string that Parse accepts: the query
// compiles on both dialects with as many placeholders as arguments, and
// the SQL text is exactly the SQL of the same query with every value
// replaced, so no byte of a client's value reaches the SQL.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	schema := testSchema()
	if err := schema.Validate(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if q, err := schema.ParseQuery(raw); err == nil {
			checkCompiles(t, q)
		}
	})
}

// FuzzCompileFilter feeds filter and sort values straight in, without the
// URL decoding that FuzzCompile has to get through first.
func FuzzCompileFilter(f *testing.F) {
	f.Add("name:ilike:%a_b%", "name:asc")
	f.Add(`name:in:"x,y",z`, "")
	f.Add("created_at:gte:2026-01-01T10:00:00+02:00", "created_at:desc,id:asc")
	f.Add("weight:gt:1e308", "weight")
	f.Add("status:in:draft,sent", "status:asc,")
	f.Add("name:like:\x00'\"\\", "day:desc")
	schema := testSchema()
	f.Fuzz(func(t *testing.T, filter, sort string) {
		v := url.Values{"filter": {filter, "comment:isnull:false"}}
		if sort != "" {
			v["sort"] = []string{sort}
		}
		if q, err := schema.Parse(v); err == nil {
			checkCompiles(t, q)
		}
	})
}

// FuzzCompileCursor checks the pages after a cursor: a position built
// from any bytes, for any sort, that NextCursor accepts makes a cursor that
// Parse accepts back, and the query compiles as FuzzCompile demands. Any
// after text is refused or compiles too.
func FuzzCompileCursor(f *testing.F) {
	f.Add("", "", []byte{})
	f.Add("name:asc,packages:desc", "", []byte("\x05x,y'z\x00\x00\x00\x00\x00\x00\x00\x03"))
	f.Add("day:desc,weight:asc", "", []byte{0, 0x40, 4, 0, 0, 0, 0, 0, 0})
	f.Add("day:asc,status:desc,created_at:asc", "", []byte{1, 0x10, 0x27, 4, 's', 'e', 'n', 't'})
	f.Add("comment:asc,active:desc", "", []byte{1, 3, '?', '$', '1', 1})
	f.Add("id:desc", "////", []byte{2})
	schema := testSchema()
	f.Fuzz(func(t *testing.T, sort, after string, payload []byte) {
		v := url.Values{}
		if sort != "" {
			v.Set("sort", sort)
		}
		base, err := schema.Parse(v)
		if err != nil {
			return
		}
		if after != "" {
			v.Set("after", after)
			if q, err := schema.Parse(v); err == nil {
				checkCompiles(t, q)
			}
		}
		c, err := base.NextCursor(position(base.Sort, payload))
		if err != nil {
			return
		}
		v.Set("after", c)
		q, err := schema.Parse(v)
		if err != nil {
			t.Fatalf("a cursor that NextCursor made is refused: %v", err)
		}
		checkCompiles(t, q)
	})
}

// position builds one value per sort key from b, of the key's type: nil
// for a Nullable key when the next byte is even, and zero values once b is
// used up.
func position(sort []query.Order, b []byte) []any {
	next := func(n int) []byte {
		out := make([]byte, n)
		b = b[copy(out, b):]
		return out
	}
	values := make([]any, len(sort))
	for i, o := range sort {
		if o.Nullable() && next(1)[0]%2 == 0 {
			continue
		}
		switch o.Type() {
		case query.UUID:
			u := next(16)
			values[i] = fmt.Sprintf("%x-%x-%x-%x-%x", u[:4], u[4:6], u[6:8], u[8:10], u[10:])
		case query.String, query.Enum:
			values[i] = string(next(int(next(1)[0] % 32)))
		case query.Integer:
			values[i] = int64(binary.BigEndian.Uint64(next(8)))
		case query.Number:
			values[i] = math.Float64frombits(binary.BigEndian.Uint64(next(8)))
		case query.Date:
			values[i] = time.Unix(int64(int16(binary.BigEndian.Uint16(next(2))))*86400, 0).UTC()
		case query.Timestamp:
			values[i] = time.UnixMicro(int64(binary.BigEndian.Uint64(next(8)) % (1 << 50))).UTC()
		case query.Boolean:
			values[i] = next(1)[0]%2 == 1
		}
	}
	return values
}

var dollar = regexp.MustCompile(`\$(\d+)`)

// checkCompiles checks that q compiles on both dialects, its page and its
// count, with as many placeholders as arguments, and that the page's SQL
// is that of q with every value replaced.
func checkCompiles(t *testing.T, q *query.Query) {
	t.Helper()
	skeleton := skeletonOf(q)
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		page := sqlbuild.Page(d, q, sq.Select("id").From("items").Where("org = ?", "o"))
		text, args, err := sqlbuild.SQL(d, page)
		if err != nil {
			t.Fatalf("%v: page does not compile: %v", d, err)
		}
		checkPlaceholders(t, d, text, args)
		want, _, err := sqlbuild.SQL(d, sqlbuild.Page(d, skeleton, sq.Select("id").From("items").Where("org = ?", "o")))
		if err != nil {
			t.Fatal(err)
		}
		if text != want {
			t.Fatalf("%v: the SQL depends on the values:\n got %s\nwant %s", d, text, want)
		}
		count := sqlbuild.Count(d, q, sq.Select("COUNT(*)").From("items").Where("org = ?", "o"))
		text, args, err = sqlbuild.SQL(d, count)
		if err != nil {
			t.Fatalf("%v: count does not compile: %v", d, err)
		}
		checkPlaceholders(t, d, text, args)
	}
}

func checkPlaceholders(t *testing.T, d query.Dialect, text string, args []any) {
	t.Helper()
	switch d {
	case query.SQLite:
		if n := strings.Count(text, "?"); n != len(args) {
			t.Fatalf("sqlite: %d placeholders, %d args: %s", n, len(args), text)
		}
	case query.Postgres:
		if strings.Contains(text, "?") {
			t.Fatalf("postgres: a ? is left: %s", text)
		}
		found := dollar.FindAllStringSubmatch(text, -1)
		if len(found) != len(args) {
			t.Fatalf("postgres: %d placeholders, %d args: %s", len(found), len(args), text)
		}
		for i, m := range found {
			if m[1] != strconv.Itoa(i+1) {
				t.Fatalf("postgres: placeholder %d is $%s: %s", i+1, m[1], text)
			}
		}
	}
}

// skeletonOf returns q with every client value replaced by a fixed value of
// the same type, keeping the number of values and the isnull choice, and
// keeping which keys of a cursor position are NULL.
func skeletonOf(q *query.Query) *query.Query {
	s := *q
	s.Filters = make([]query.Filter, len(q.Filters))
	for i, f := range q.Filters {
		f.Values = append([]any(nil), f.Values...)
		for j, v := range f.Values {
			if f.Op != query.IsNull {
				f.Values[j] = fixed(v)
			}
		}
		s.Filters[i] = f
	}
	if q.After != nil {
		s.After = make([]any, len(q.After))
		for i, v := range q.After {
			s.After[i] = fixed(v)
		}
	}
	s.Offset, s.Limit = 0, 1
	return &s
}

// fixed returns a fixed value of v's type; nil stays nil.
func fixed(v any) any {
	switch v.(type) {
	case string:
		return "v"
	case int64:
		return int64(1)
	case float64:
		return 1.0
	case time.Time:
		return time.Unix(0, 0).UTC()
	case bool:
		return true
	}
	return v
}
