package query_test

import (
	"testing"
	"time"

	"github.com/waybillhq/waybill/internal/querytest"
)

// The typical list request of the benchmarks (three filters, one sort,
// limit and offset) and its schema, shared with sqlbuild, which measures
// the compilation of the same request and compares it with squirrel alone.
var (
	benchValues       = querytest.BenchValues
	benchSchema       = querytest.BenchSchema
	benchCursorValues = querytest.BenchCursorValues
)

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
