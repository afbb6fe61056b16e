package query

import (
	"net/url"
	"reflect"
	"testing"
	"time"

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
// either refuses with a 400 invalid_request or yields a query whose page is
// in range, whose sort ends with the tiebreaker and whose every value has
// the Go type its field's type documents. That the SQL compiled from such a
// query holds no byte of a value is sqlbuild's FuzzCompile.
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
	checkTypes(t, q)
}

// checkTypes checks that every value of q has the Go type that
// Filter.Values documents for its field's type, as a compiler of q relies
// on: each filter with as many values as its operator takes, a bool for
// isnull, a string pattern for like and ilike; and that a cursor position
// has one value per sort key, nil only for a Nullable one.
func checkTypes(t *testing.T, q *Query) {
	t.Helper()
	for _, f := range q.Filters {
		switch {
		case len(f.Values) == 0, f.Op != In && len(f.Values) != 1:
			t.Fatalf("filter %s:%s has %d values", f.Field, f.Op, len(f.Values))
		case f.Op == IsNull:
			if _, ok := f.Values[0].(bool); !ok {
				t.Fatalf("isnull on %s holds a %T, not a bool", f.Field, f.Values[0])
			}
			continue
		case f.Op == Like || f.Op == ILike:
			if _, ok := f.Values[0].(string); !ok {
				t.Fatalf("%s on %s holds a %T, not a string", f.Op, f.Field, f.Values[0])
			}
			continue
		}
		for _, v := range f.Values {
			checkType(t, "filter on "+f.Field, f.typ, v)
		}
	}
	if q.After == nil {
		return
	}
	if len(q.After) != len(q.Sort) {
		t.Fatalf("a position of %d values for %d sort keys", len(q.After), len(q.Sort))
	}
	for i, o := range q.Sort {
		if q.After[i] == nil {
			if !o.nullable {
				t.Fatalf("the position is NULL for %s, which is not Nullable", o.Field)
			}
			continue
		}
		checkType(t, "position of "+o.Field, o.typ, q.After[i])
	}
}

// checkType checks that v has the Go type of a value of type typ.
func checkType(t *testing.T, what string, typ Type, v any) {
	t.Helper()
	ok := false
	switch typ {
	case UUID, String, Enum:
		_, ok = v.(string)
	case Integer:
		_, ok = v.(int64)
	case Number:
		_, ok = v.(float64)
	case Date, Timestamp:
		var at time.Time
		at, ok = v.(time.Time)
		ok = ok && at.Location() == time.UTC
	case Boolean:
		_, ok = v.(bool)
	}
	if !ok {
		t.Fatalf("%s: a %T (%#v) for a %v field", what, v, v, typ)
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

// FuzzCursor checks cursors two ways. Any after text, with any sort, is
// refused with a 400 or yields a query that FuzzParseQuery accepts, never a
// panic. And any position bytes, signed as this server signs them so that
// they get past the HMAC, either are refused or decode to a position of the
// sort keys' types that NextCursor encodes into a cursor of the same
// position. That every such position compiles is sqlbuild's
// FuzzCompileCursor.
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
