package query_test

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/query"
)

func TestSchemaValidate(t *testing.T) {
	if err := testSchema().Validate(); err != nil {
		t.Fatalf("Validate() of the test schema = %v, want nil", err)
	}

	cases := []struct {
		name   string
		schema *query.Schema
		want   string
	}{
		{"no name", &query.Schema{Fields: []query.Field{{Type: query.UUID}}}, "has no name"},
		{"duplicate", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "id", Type: query.UUID}}}, "declared twice"},
		{"bad column", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "x", Column: "x; DROP TABLE t", Type: query.String}}}, "not a plain identifier"},
		{"leading digit column", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "x", Column: "1x", Type: query.String}}}, "not a plain identifier"},
		{"bad type", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "x"}}}, "unknown type"},
		{"empty enum", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "x", Type: query.Enum}}}, "has no values"},
		{"op beyond type", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID, Ops: []query.Op{query.Like}}}}, "cannot allow"},
		{"reserved filterable", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "branch_id", Type: query.UUID, Filterable: true}}, Reserved: []string{"branch_id"}}, "reserved"},
		{"no tiebreaker", &query.Schema{Fields: []query.Field{{Name: "name", Type: query.String}}}, "tiebreaker"},
		{"default above max", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}}, DefaultLimit: 60, MaxLimit: 10}, "above the max"},
		{"bad default sort", &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}}, DefaultSort: "nope:desc"}, "default sort"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.schema.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "query: ") {
				t.Errorf("Validate() = %q, want the prefix \"query: \"", err)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	type order struct {
		field string
		desc  bool
	}
	cases := []struct {
		name    string
		query   string
		limit   int
		offset  int64
		sort    []order
		filters []query.Filter
	}{
		{
			name: "defaults", query: "",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
		},
		{
			name: "limit and offset", query: "limit=1000&offset=0",
			limit: 1000, sort: []order{{"created_at", true}, {"id", true}},
		},
		{
			name: "large offset", query: "limit=1&offset=123456789012",
			limit: 1, offset: 123456789012, sort: []order{{"created_at", true}, {"id", true}},
		},
		{
			name: "sort asc appends id asc", query: "sort=name:asc",
			limit: 50, sort: []order{{"name", false}, {"id", false}},
		},
		{
			name: "sort without direction is asc", query: "sort=name",
			limit: 50, sort: []order{{"name", false}, {"id", false}},
		},
		{
			name: "comma separated keys", query: "sort=status:asc,packages:desc",
			limit: 50, sort: []order{{"status", false}, {"packages", true}, {"id", true}},
		},
		{
			name: "repeated keys", query: "sort=status:desc&sort=packages:asc",
			limit: 50, sort: []order{{"status", true}, {"packages", false}, {"id", false}},
		},
		{
			name: "explicit id is not appended twice", query: "sort=id:desc,name:asc",
			limit: 50, sort: []order{{"id", true}, {"name", false}},
		},
		{
			name: "eq on enum", query: "filter=status:eq:draft",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "status", Op: query.Eq, Values: []any{"draft"}}},
		},
		{
			name: "timestamp with colons splits on the first two only", query: "filter=created_at:gte:2026-01-01T10:00:00Z",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "created_at", Op: query.Gte, Values: []any{ts("2026-01-01T10:00:00Z")}}},
		},
		{
			name: "timestamp with offset", query: "filter=created_at:lt:2026-01-01T12:00:00%2B02:00",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "created_at", Op: query.Lt, Values: []any{ts("2026-01-01T10:00:00Z")}}},
		},
		{
			name: "timestamp as a date", query: "filter=created_at:gte:2026-03-01",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "created_at", Op: query.Gte, Values: []any{ts("2026-03-01T00:00:00Z")}}},
		},
		{
			name: "date", query: "filter=day:lt:2026-02-28",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "day", Op: query.Lt, Values: []any{ts("2026-02-28T00:00:00Z")}}},
		},
		{
			name: "uuid upper case is lowered", query: "filter=id:eq:0A1B2C3D-0000-4000-8000-00000000ABCD",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "id", Op: query.Eq, Values: []any{"0a1b2c3d-0000-4000-8000-00000000abcd"}}},
		},
		{
			name: "integer and number", query: "filter=packages:gte:-3&filter=weight:lte:1.5e2",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{
				{Field: "packages", Op: query.Gte, Values: []any{int64(-3)}},
				{Field: "weight", Op: query.Lte, Values: []any{150.0}},
			},
		},
		{
			name: "boolean", query: "filter=active:ne:false",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "active", Op: query.Ne, Values: []any{false}}},
		},
		{
			name: "in with quoted comma and doubled quote", query: `filter=name:in:a,"Hello, World","say ""hi""",""`,
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "name", Op: query.In, Values: []any{"a", "Hello, World", `say "hi"`, ""}}},
		},
		{
			name: "in on enum", query: "filter=status:in:draft,sent",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "status", Op: query.In, Values: []any{"draft", "sent"}}},
		},
		{
			name: "ilike keeps the pattern as written", query: "filter=name:ilike:%25a_b%5C%25",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "name", Op: query.ILike, Values: []any{`%a_b\%`}}},
		},
		{
			name: "eq with colons in the value", query: "filter=name:eq:a:b:c",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "name", Op: query.Eq, Values: []any{"a:b:c"}}},
		},
		{
			name: "empty string eq", query: "filter=name:eq:",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "name", Op: query.Eq, Values: []any{""}}},
		},
		{
			name: "isnull true and false", query: "filter=comment:isnull:true&filter=day:isnull:false",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{
				{Field: "comment", Op: query.IsNull, Values: []any{true}},
				{Field: "day", Op: query.IsNull, Values: []any{false}},
			},
		},
		{
			name: "narrowed ops on a renamed column", query: "filter=code:in:x,y",
			limit: 50, sort: []order{{"created_at", true}, {"id", true}},
			filters: []query.Filter{{Field: "code", Op: query.In, Values: []any{"x", "y"}}},
		},
	}
	s := testSchema()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := s.ParseQuery(tc.query)
			if err != nil {
				t.Fatalf("ParseQuery(%q) = %v, want no error", tc.query, err)
			}
			if q.Limit != tc.limit {
				t.Errorf("ParseQuery(%q).Limit = %d, want %d", tc.query, q.Limit, tc.limit)
			}
			if q.Offset != tc.offset {
				t.Errorf("ParseQuery(%q).Offset = %d, want %d", tc.query, q.Offset, tc.offset)
			}
			var got []order
			for _, o := range q.Sort {
				got = append(got, order{o.Field, o.Desc})
			}
			checkEqual(t, fmt.Sprintf("ParseQuery(%q).Sort", tc.query), got, tc.sort)
			if len(q.Filters) != len(tc.filters) {
				t.Fatalf("ParseQuery(%q).Filters = %+v, want %d filters %+v", tc.query, q.Filters, len(tc.filters), tc.filters)
			}
			for i, f := range tc.filters {
				g := q.Filters[i]
				if g.Field != f.Field || g.Op != f.Op || !reflect.DeepEqual(g.Values, f.Values) {
					t.Errorf("ParseQuery(%q).Filters[%d] = {%s %s %#v}, want {%s %s %#v}", tc.query, i, g.Field, g.Op, g.Values, f.Field, f.Op, f.Values)
				}
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	cases := []struct {
		name  string
		query string
		want  string // a part of the description
	}{
		{"unknown parameter", "limit=5&page=2", `unknown query parameter "page"`},
		{"misspelled filter", "filters=status:eq:draft", `unknown query parameter "filters"`},
		{"empty parameter name", "=x", `unknown query parameter ""`},
		{"bare percent", "filter=name:like:50%", "does not decode"},
		{"bare percent hints at %25", "filter=name:like:50%", "is written %25 in a URL"},
		{"bad escape", "filter=name:eq:%zz", "does not decode"},
		{"limit zero", "limit=0", "limit must be an integer from 1 to 1000"},
		{"limit over max", "limit=1001", "limit must be"},
		{"limit negative", "limit=-1", "limit must be"},
		{"limit not integer", "limit=ten", "limit must be"},
		{"limit float", "limit=1.5", "limit must be"},
		{"limit plus sign", "limit=%2B5", "limit must be"},
		{"limit space", "limit=%205", "limit must be"},
		{"limit empty", "limit=", "limit must be"},
		{"limit twice", "limit=5&limit=6", "limit may be given once"},
		{"limit huge", "limit=99999999999999999999", "limit must be"},
		{"offset negative", "offset=-1", "offset must be"},
		{"offset not integer", "offset=x", "offset must be"},
		{"offset too long", "offset=9999999999999999999", "offset must be"},
		{"sort bad direction", "sort=name:up", `direction must be asc or desc, not "up"`},
		{"sort unknown field", "sort=nope:asc", `sort on "nope": unknown field`},
		{"sort not sortable", "sort=comment:asc", `sort on "comment": the field cannot be sorted on`},
		{"sort reserved", "sort=organization_id:asc", `sort on "organization_id": the field is set by the server`},
		{"sort reserved branch", "sort=branch_id", `sort on "branch_id": the field is set by the server`},
		{"sort empty key", "sort=name:asc,", "expected field:asc or field:desc"},
		{"sort twice", "sort=name:asc,name:desc", "named twice"},
		{"sort too many", "sort=a,b,c,d,e,f,g,h,i", "at most 8 sort keys"},
		{"filter no colon", "filter=status", "expected field:operator:value"},
		{"filter one colon", "filter=status:eq", `filter on "status": expected field:operator:value`},
		{"filter unknown field", "filter=nope:eq:1", `filter on "nope": unknown field`},
		{"filter not filterable", "filter=secret:eq:x", `filter on "secret": the field cannot be filtered`},
		{"filter reserved", "filter=organization_id:eq:0a1b2c3d-0000-4000-8000-00000000abcd", `filter on "organization_id": the field is set by the server`},
		{"filter reserved branch", "filter=branch_id:isnull:true", `filter on "branch_id": the field is set by the server`},
		{"unknown operator", "filter=status:like2:x", `filter on "status": unknown operator "like2"`},
		{"operator upper case", "filter=status:EQ:draft", `unknown operator "EQ"`},
		{"operator not allowed on enum", "filter=status:gt:draft", `filter on "status": operator "gt" is not allowed`},
		{"like not allowed on uuid", "filter=id:like:%25", `filter on "id": operator "like"`},
		{"like not allowed on integer", "filter=packages:like:1", `operator "like" is not allowed`},
		{"gt not allowed on boolean", "filter=active:gt:true", `operator "gt" is not allowed`},
		{"in not allowed on boolean", "filter=active:in:true", `operator "in" is not allowed`},
		{"narrowed ops", "filter=code:ne:x", `filter on "code": operator "ne" is not allowed; the field allows eq, in`},
		{"bad enum value", "filter=status:eq:archived", `filter on "status": "archived" is not one of draft, sent, accepted`},
		{"bad uuid", "filter=id:eq:not-a-uuid", `filter on "id": "not-a-uuid" is not a UUID`},
		{"uuid with braces", "filter=id:eq:{0a1b2c3d-0000-4000-8000-00000000abcd}", "is not a UUID"},
		{"bad integer", "filter=packages:eq:1.5", `filter on "packages": "1.5" is not an integer`},
		{"integer overflow", "filter=packages:eq:99999999999999999999", "is not an integer"},
		{"integer plus", "filter=packages:eq:%2B1", "is not an integer"},
		{"bad number", "filter=weight:gt:abc", `filter on "weight": "abc" is not a number`},
		{"number NaN", "filter=weight:gt:NaN", "is not a number"},
		{"number Inf", "filter=weight:gt:Inf", "is not a number"},
		{"number hex", "filter=weight:gt:0x10", "is not a number"},
		{"number overflow", "filter=weight:gt:1e999", "is not a number"},
		{"number trailing dot", "filter=weight:gt:1.", "is not a number"},
		{"bad date", "filter=day:eq:2026-02-30", `filter on "day": "2026-02-30" is not a date`},
		{"date with time", "filter=day:eq:2026-02-01T00:00:00Z", "is not a date"},
		{"bad timestamp", "filter=created_at:gte:yesterday", `filter on "created_at": "yesterday" is not an RFC 3339 timestamp`},
		{"timestamp with unencoded plus", "filter=created_at:gte:2026-01-01T10:00:00+02:00", "%2B"},
		{"bad boolean", "filter=active:eq:yes", `filter on "active": "yes" is not true or false`},
		{"isnull bad value", "filter=comment:isnull:yes", `filter on "comment": isnull takes true or false`},
		{"isnull empty", "filter=comment:isnull:", "isnull takes true or false"},
		{"in empty", "filter=status:in:", "in needs at least one value"},
		{"in empty item", "filter=status:in:draft,,sent", "empty value in the list"},
		{"in trailing comma", "filter=status:in:draft,", "empty value at the end"},
		{"in unterminated quote", `filter=name:in:"abc`, "no closing quote"},
		{"in junk after quote", `filter=name:in:"abc"x`, "must be followed by a comma"},
		{"in bad enum", "filter=status:in:draft,gone", `"gone" is not one of`},
		{"in too many", "filter=packages:in:" + strings.Repeat("1,", 100) + "1", "at most 100 values"},
		{"invalid UTF-8", "filter=name:eq:%ff%fe", "must be UTF-8 text without NUL"},
		{"NUL byte", "filter=name:like:a%00b", "must be UTF-8 text without NUL"},
		{"value too long", "filter=name:eq:" + strings.Repeat("x", 1025), "longer than 1024 bytes"},
		{"too many filters", strings.Repeat("filter=name:eq:x&", 33), "at most 32 filters"},
	}
	s := testSchema()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := s.ParseQuery(tc.query)
			if q != nil {
				t.Errorf("ParseQuery(%q) = %+v with the error, want a nil query", tc.query, q)
			}
			checkInvalid(t, err, tc.want)
		})
	}
}

func TestParseCustomParams(t *testing.T) {
	s := testSchema()
	s.Params = []string{"expand"}
	if _, err := s.Parse(url.Values{"expand": {"account"}, "limit": {"5"}}); err != nil {
		t.Errorf("Parse(expand=account&limit=5) = %v, want no error for a declared parameter", err)
	}
	_, err := s.Parse(url.Values{"fields": {"id"}})
	checkInvalid(t, err, `unknown query parameter "fields"; a list takes limit, offset, sort, filter and expand`)
}

func TestParseLimits(t *testing.T) {
	s := testSchema()
	s.MaxLimit = 20
	if q := mustParse(t, s, ""); q.Limit != 20 {
		t.Errorf("Limit = %d with MaxLimit 20, want 20: the default limit never exceeds a smaller max", q.Limit)
	}
	_, err := s.ParseQuery("limit=21")
	checkInvalid(t, err, "from 1 to 20")

	s.DefaultLimit = 5
	if q := mustParse(t, s, ""); q.Limit != 5 {
		t.Errorf("Limit = %d with DefaultLimit 5, want 5", q.Limit)
	}
}

func TestDialectValues(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 123456789, time.FixedZone("x", 3600))
	cases := []struct {
		name      string
		got, want any
	}{
		{"SQLite.Timestamp", query.SQLite.Timestamp(at), "2026-05-04T02:02:01.123456Z"},
		{"Postgres.Timestamp", query.Postgres.Timestamp(at), at.UTC()},
		{"SQLite.Date", query.SQLite.Date(at), "2026-05-04"},
		{"Postgres.String", query.Postgres.String(), "postgres"},
		{"SQLite.String", query.SQLite.String(), "sqlite"},
		{"Timestamp.String", query.Timestamp.String(), "timestamp"},
	}
	for _, tc := range cases {
		checkEqual(t, tc.name+"()", tc.got, tc.want)
	}
}
