package query

import (
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
)

func fuzzSchema() *Schema {
	return &Schema{
		Fields: []Field{
			{Name: "id", Type: UUID, Filterable: true, Sortable: true},
			{Name: "name", Type: String, Filterable: true, Sortable: true},
			{Name: "status", Type: Enum, Values: []string{"draft", "sent"}, Filterable: true, Sortable: true},
			{Name: "packages", Type: Integer, Filterable: true, Sortable: true},
			{Name: "weight", Type: Number, Filterable: true, Sortable: true},
			{Name: "day", Type: Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: Timestamp, Filterable: true, Sortable: true},
			{Name: "active", Type: Boolean, Filterable: true},
			{Name: "comment", Type: String, Filterable: true, Nullable: true},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
	}
}

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
	"filter=organization_id:eq:x",
	"sort=day:desc&filter=active:ne:true",
	"filter=name:eq:%ff%fe",
	"limit=1000&offset=999999999999999999",
}

// FuzzParseQuery checks, for any query string: Parse never panics; it
// either refuses with a 400 invalid_request or yields a query that compiles
// on both dialects with as many placeholders as arguments; and the SQL text
// is exactly the SQL of the same query with every value replaced, so no byte
// of a client's value reaches the SQL.
func FuzzParseQuery(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	schema := fuzzSchema()
	if err := schema.Validate(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := schema.ParseQuery(raw)
		checkParsed(t, q, err)
	})
}

// FuzzFilter feeds filter and sort values straight in, without the URL
// decoding that FuzzParseQuery has to get through first.
func FuzzFilter(f *testing.F) {
	f.Add("name:ilike:%a_b%", "name:asc")
	f.Add(`name:in:"x,y",z`, "")
	f.Add("created_at:gte:2026-01-01T10:00:00+02:00", "created_at:desc,id:asc")
	f.Add("weight:gt:1e308", "weight")
	f.Add("status:in:draft,sent", "status:asc,")
	f.Add("name:like:\x00'\"\\", "day:desc")
	schema := fuzzSchema()
	f.Fuzz(func(t *testing.T, filter, sort string) {
		v := url.Values{"filter": {filter, "comment:isnull:false"}}
		if sort != "" {
			v["sort"] = []string{sort}
		}
		q, err := schema.Parse(v)
		checkParsed(t, q, err)
	})
}

var dollar = regexp.MustCompile(`\$(\d+)`)

func checkParsed(t *testing.T, q *Query, err error) {
	t.Helper()
	if err != nil {
		e, ok := apierrors.As(err)
		if !ok || e.Code != apierrors.CodeInvalidRequest || e.Status != 400 {
			t.Fatalf("refusal is not a 400 invalid_request: %#v", err)
		}
		if q != nil {
			t.Fatalf("a refusal came with a query")
		}
		return
	}
	if q.Limit < 1 || q.Limit > MaxLimit || q.Offset < 0 {
		t.Fatalf("page out of range: limit %d offset %d", q.Limit, q.Offset)
	}
	if len(q.Sort) == 0 || q.Sort[len(q.Sort)-1].Field != "id" && !hasSortKey(q, "id") {
		t.Fatalf("id is not a sort key: %+v", q.Sort)
	}
	skeleton := skeletonOf(q)
	for _, d := range []Dialect{Postgres, SQLite} {
		page := q.Page(d, sq.Select("id").From("items").Where("org = ?", "o"))
		text, args, err := d.SQL(page)
		if err != nil {
			t.Fatalf("%v: page does not compile: %v", d, err)
		}
		checkPlaceholders(t, d, text, args)
		want, _, err := d.SQL(skeleton.Page(d, sq.Select("id").From("items").Where("org = ?", "o")))
		if err != nil {
			t.Fatal(err)
		}
		if text != want {
			t.Fatalf("%v: the SQL depends on the values:\n got %s\nwant %s", d, text, want)
		}
		count := q.Count(d, sq.Select("COUNT(*)").From("items").Where("org = ?", "o"))
		text, args, err = d.SQL(count)
		if err != nil {
			t.Fatalf("%v: count does not compile: %v", d, err)
		}
		checkPlaceholders(t, d, text, args)
	}
}

func hasSortKey(q *Query, field string) bool {
	for _, o := range q.Sort {
		if o.Field == field {
			return true
		}
	}
	return false
}

func checkPlaceholders(t *testing.T, d Dialect, text string, args []any) {
	t.Helper()
	switch d {
	case SQLite:
		if n := strings.Count(text, "?"); n != len(args) {
			t.Fatalf("sqlite: %d placeholders, %d args: %s", n, len(args), text)
		}
	case Postgres:
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
// the same type, keeping the number of values and the isnull choice.
func skeletonOf(q *Query) *Query {
	s := *q
	s.Filters = make([]Filter, len(q.Filters))
	for i, f := range q.Filters {
		f.Values = append([]any(nil), f.Values...)
		for j, v := range f.Values {
			switch v.(type) {
			case string:
				f.Values[j] = "v"
			case int64:
				f.Values[j] = int64(1)
			case float64:
				f.Values[j] = 1.0
			case time.Time:
				f.Values[j] = time.Unix(0, 0).UTC()
			case bool:
				if f.Op != IsNull {
					f.Values[j] = true
				}
			}
		}
		s.Filters[i] = f
	}
	s.Offset, s.Limit = 0, 1
	return &s
}

// FuzzCursor checks cursors two ways. Any after text, with any sort, is
// refused with a 400 or yields a query that compiles as FuzzParseQuery
// demands, never a panic. And any position bytes, signed as this server
// signs them so that they get past the HMAC, either are refused or decode
// to a position that NextCursor encodes into a cursor of the same
// position.
func FuzzCursor(f *testing.F) {
	schema := fuzzSchema()
	schema.Name = "items"
	schema.CursorKey = []byte("fuzz cursor key, 32 bytes or more")
	if err := schema.Validate(); err != nil {
		f.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	id := "0a1b2c3d-0000-4000-8000-00000000abcd"
	for _, seed := range []struct {
		sort string
		last []any
	}{
		{"", []any{at, id}},
		{"name:asc,packages:desc", []any{"x,y", int64(-3), id}},
		{"day:desc,weight:asc", []any{nil, 2.5, id}},
		{"day:asc,status:desc,created_at:asc", []any{at, "sent", at, id}},
	} {
		v := url.Values{}
		if seed.sort != "" {
			v.Set("sort", seed.sort)
		}
		q, err := schema.Parse(v)
		if err != nil {
			f.Fatal(err)
		}
		c, err := q.NextCursor(seed.last)
		if err != nil {
			f.Fatal(err)
		}
		raw, _ := cursorEncoding.DecodeString(c)
		f.Add(seed.sort, c, raw[1+fingerprintSize:len(raw)-tagSize])
		f.Add(seed.sort, c[:len(c)-1]+"A", raw[1+fingerprintSize:])
	}
	f.Add("id:desc", "", []byte{})
	f.Add("day:asc", "////", []byte{2})
	f.Fuzz(func(t *testing.T, sort, after string, payload []byte) {
		v := url.Values{"after": {after}}
		if sort != "" {
			v["sort"] = []string{sort}
		}
		q, err := schema.Parse(v)
		checkParsed(t, q, err)
		if err == nil {
			checkReencodes(t, schema, v, q)
		}

		delete(v, "after")
		base, err := schema.Parse(v)
		if err != nil {
			return
		}
		digest := base.digest()
		body := append([]byte{cursorVersion}, digest[:fingerprintSize]...)
		body = append(body, payload...)
		body = append(body, schema.tag(&digest, body)...)
		v.Set("after", cursorEncoding.EncodeToString(body))
		q, err = schema.Parse(v)
		checkParsed(t, q, err)
		if err == nil {
			checkReencodes(t, schema, v, q)
		}
	})
}

// checkReencodes checks that the position of q, parsed from v, makes a
// cursor that parses to the same position.
func checkReencodes(t *testing.T, schema *Schema, v url.Values, q *Query) {
	t.Helper()
	if len(q.After) != len(q.Sort) {
		t.Fatalf("a position of %d values for %d sort keys", len(q.After), len(q.Sort))
	}
	c, err := q.NextCursor(q.After)
	if err != nil {
		t.Fatalf("an accepted position does not encode: %v", err)
	}
	v.Set("after", c)
	again, err := schema.Parse(v)
	if err != nil {
		t.Fatalf("a cursor made from an accepted position is refused: %v", err)
	}
	if !reflect.DeepEqual(q.After, again.After) {
		t.Fatalf("the position changed:\n got %#v\nwant %#v", again.After, q.After)
	}
}
