// Package querytest holds what the tests of query, of query/sqlbuild and
// of query against real databases (internal/integration/query) share: the
// fixture schemas, the benchmarks' list request and a few checks. It links
// the standard library and query only, so that the tests of query, which
// an importer's go mod tidy resolves too, stay free of modules.
package querytest

import (
	"maps"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/query"
)

// CursorKey is the cursor key of CursorSchema.
var CursorKey = []byte("test cursor key, 32 bytes or more")

// Schema returns the schema of the fixture table "items", a field of every
// type, without cursors.
func Schema() *query.Schema {
	return &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Filterable: true, Sortable: true},
			{Name: "packages", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "weight", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "day", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
			{Name: "active", Type: query.Boolean, Filterable: true, Sortable: true},
			{Name: "comment", Type: query.String, Filterable: true, Nullable: true},
			{Name: "code", Column: "ref_code", Type: query.String, Filterable: true, Ops: []query.Op{query.Eq, query.In}},
			{Name: "secret", Type: query.String},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
	}
}

// CursorSchema returns Schema with cursors on (CursorKey) and comment
// sortable, so that a nullable string can be a sort key.
func CursorSchema() *query.Schema {
	s := Schema()
	s.Name = "items"
	s.CursorKey = CursorKey
	for i := range s.Fields {
		if s.Fields[i].Name == "comment" {
			s.Fields[i].Sortable = true
		}
	}
	return s
}

// MustParse parses raw on s and stops the test if s refuses it.
func MustParse(t testing.TB, s *query.Schema, raw string) *query.Query {
	t.Helper()
	q, err := s.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	return q
}

// CursorFor parses raw on s and returns the cursor after the row whose
// sort keys hold last.
func CursorFor(t testing.TB, s *query.Schema, raw string, last ...any) string {
	t.Helper()
	q := MustParse(t, s, raw)
	c, err := q.NextCursor(last)
	if err != nil {
		t.Fatalf("NextCursor(%#v) after %q = %v, want no error", last, raw, err)
	}
	return c
}

// CheckErrorContains checks that err is not nil and that its text holds
// want.
func CheckErrorContains(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("err = nil, want an error containing %q", want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
}

// CheckEqual reports got and want, with what names them, when they are not
// deeply equal.
func CheckEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// BenchValues is the typical list request of the benchmarks, on
// BenchSchema: three filters, one sort, limit and offset.
var BenchValues = url.Values{
	"filter": {"status:eq:draft", "valid_until:gte:2026-01-01", "quotation_number:ilike:%Q-2026%"},
	"sort":   {"quotation_date:desc"},
	"limit":  {"50"},
	"offset": {"100"},
}

// BenchSchema returns the schema of the benchmarks: the quotations of the
// reference server, with cursors on.
func BenchSchema() *query.Schema {
	return &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "quotation_number", Type: query.String, Filterable: true, Sortable: true},
			{Name: "account_id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "quotation_date", Type: query.Date, Filterable: true, Sortable: true},
			{Name: "valid_until", Type: query.Date, Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted", "rejected", "expired", "cancelled"}, Filterable: true, Sortable: true},
			{Name: "total_weight_kg", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "total_volume_m3", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "total_packages", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
			{Name: "updated_at", Type: query.Timestamp, Filterable: true, Sortable: true},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
		Name:        "quotations",
		CursorKey:   []byte("benchmark cursor key of 32 bytes"),
	}
}

// BenchCursorValues is BenchValues with a cursor in place of the offset:
// the same filters and sort, the page after a row of 2026-03-01.
func BenchCursorValues(tb testing.TB, s *query.Schema) url.Values {
	tb.Helper()
	q, err := s.Parse(BenchValues)
	if err != nil {
		tb.Fatalf("Parse(%v) = %v", BenchValues, err)
	}
	c, err := q.NextCursor([]any{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "0a1b2c3d-0000-4000-8000-000000001234"})
	if err != nil {
		tb.Fatalf("NextCursor: %v", err)
	}
	v := maps.Clone(BenchValues)
	delete(v, "offset")
	v.Set("after", c)
	return v
}
