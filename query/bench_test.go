package query_test

import (
	"maps"
	"net/url"
	"testing"
	"time"

	"github.com/waybillhq/waybill/query"
)

// The typical list request of the benchmarks: three filters, one sort,
// limit and offset. The package sqlbuild measures the compilation of the
// same request, and compares it with squirrel alone.
var benchValues = url.Values{
	"filter": {"status:eq:draft", "valid_until:gte:2026-01-01", "quotation_number:ilike:%Q-2026%"},
	"sort":   {"quotation_date:desc"},
	"limit":  {"50"},
	"offset": {"100"},
}

func benchSchema() *query.Schema {
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

// BenchmarkParse is the parser's own share, without SQL.
func BenchmarkParse(b *testing.B) {
	s := benchSchema()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Parse(benchValues); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCursorValues is benchValues with a cursor in place of the offset:
// the same filters and sort, the page after a row of 2026-03-01.
func benchCursorValues(tb testing.TB, s *query.Schema) url.Values {
	tb.Helper()
	q, err := s.Parse(benchValues)
	if err != nil {
		tb.Fatalf("Parse(%v) = %v", benchValues, err)
	}
	c, err := q.NextCursor([]any{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "0a1b2c3d-0000-4000-8000-000000001234"})
	if err != nil {
		tb.Fatalf("NextCursor: %v", err)
	}
	v := maps.Clone(benchValues)
	delete(v, "offset")
	v.Set("after", c)
	return v
}

// BenchmarkParseCursor is BenchmarkParse with after=<cursor> instead of
// offset=100: the cursor's decoding and HMAC on top of the same work.
func BenchmarkParseCursor(b *testing.B) {
	s := benchSchema()
	v := benchCursorValues(b, s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Parse(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextCursor is the making of one cursor, once a page.
func BenchmarkNextCursor(b *testing.B) {
	s := benchSchema()
	q, err := s.Parse(benchValues)
	if err != nil {
		b.Fatal(err)
	}
	last := []any{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "0a1b2c3d-0000-4000-8000-000000001234"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.NextCursor(last); err != nil {
			b.Fatal(err)
		}
	}
}
