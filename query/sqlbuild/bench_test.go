package sqlbuild_test

import (
	"net/url"
	"strings"
	"testing"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/internal/querytest"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// The typical list request of the benchmarks: three filters, one sort,
// limit and offset, inside a tenant condition.
var (
	benchColumns      = []string{"id", "quotation_number", "account_id", "quotation_date", "valid_until", "status", "total_weight_kg", "total_volume_m3", "total_packages", "created_at", "updated_at"}
	benchValues       = querytest.BenchValues
	benchSchema       = querytest.BenchSchema
	benchCursorValues = querytest.BenchCursorValues
	benchBranch       = "0a1b2c3d-0000-4000-8000-00000000abcd"
)

// parseCompile is the measured work: parse the request and build the page
// and count statements for PostgreSQL.
func parseCompile(s *query.Schema) (string, []any, string, []any, error) {
	return parseCompileValues(s, benchValues)
}

func parseCompileValues(s *query.Schema, values url.Values) (string, []any, string, []any, error) {
	q, err := s.Parse(values)
	if err != nil {
		return "", nil, "", nil, err
	}
	tenant := sq.Eq{"branch_id": benchBranch}
	page, pageArgs, err := sqlbuild.SQL(query.Postgres, sqlbuild.Page(query.Postgres, q, sq.Select(benchColumns...).From("quotations").Where(tenant)))
	if err != nil {
		return "", nil, "", nil, err
	}
	count, countArgs, err := sqlbuild.SQL(query.Postgres, sqlbuild.Count(query.Postgres, q, sq.Select("COUNT(*)").From("quotations").Where(tenant)))
	return page, pageArgs, count, countArgs, err
}

// floor builds the same two statements by hand with squirrel, the values
// already known: what any squirrel-based list endpoint pays at the least.
func floor() (string, []any, string, []any, error) {
	tenant := sq.Eq{"branch_id": benchBranch}
	status := sq.Eq{"status": "draft"}
	validUntil := sq.GtOrEq{"valid_until": "2026-01-01"}
	number := sq.Expr("quotation_number ILIKE ? ESCAPE '!'", "%Q-2026%")
	page, pageArgs, err := sq.Select(benchColumns...).From("quotations").
		Where(tenant).Where(sq.And{status, validUntil, number}).
		OrderBy("quotation_date DESC", "id DESC").Suffix("LIMIT ? OFFSET ?", 50, int64(100)).
		PlaceholderFormat(sq.Dollar).ToSql()
	if err != nil {
		return "", nil, "", nil, err
	}
	count, countArgs, err := sq.Select("COUNT(*)").From("quotations").
		Where(tenant).Where(sq.And{status, validUntil, number}).
		PlaceholderFormat(sq.Dollar).ToSql()
	return page, pageArgs, count, countArgs, err
}

// TestBenchmarkFloorIsTheSameSQL keeps the comparison honest: the floor
// builds exactly the statements the parser builds, but for the parentheses
// squirrel's And adds.
func TestBenchmarkFloorIsTheSameSQL(t *testing.T) {
	s := benchSchema()
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
	page, pageArgs, count, countArgs, err := parseCompile(s)
	if err != nil {
		t.Fatalf("parseCompile: %v", err)
	}
	fpage, fpageArgs, fcount, fcountArgs, err := floor()
	if err != nil {
		t.Fatalf("floor: %v", err)
	}
	const where = "branch_id = $1 AND status = $2 AND valid_until >= $3 AND quotation_number ILIKE $4 ESCAPE '!'"
	contains := []struct{ name, text, want string }{
		{"page", page, where},
		{"count", count, where},
		{"floor page", fpage, "branch_id = $1 AND (status = $2 AND valid_until >= $3 AND quotation_number ILIKE $4 ESCAPE '!')"},
		{"page", page, "ORDER BY quotation_date DESC, id DESC LIMIT $5 OFFSET $6"},
		{"floor page", fpage, "ORDER BY quotation_date DESC, id DESC LIMIT $5 OFFSET $6"},
	}
	for _, c := range contains {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s SQL =\n%s\nwant it to contain\n%s", c.name, c.text, c.want)
		}
	}
	checkEqual(t, "page args", pageArgs, fpageArgs)
	checkEqual(t, "count args", countArgs, fcountArgs)
	if want := "SELECT COUNT(*) FROM quotations WHERE " + where; count != want {
		t.Errorf("count SQL =\n%s\nwant\n%s", count, want)
	}
	if want := "SELECT COUNT(*) FROM quotations WHERE branch_id = $1 AND (status = $2 AND valid_until >= $3 AND quotation_number ILIKE $4 ESCAPE '!')"; fcount != want {
		t.Errorf("floor count SQL =\n%s\nwant\n%s", fcount, want)
	}
}

func BenchmarkParseCompile(b *testing.B) {
	s := benchSchema()
	if err := s.Validate(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, err := parseCompile(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile is sqlbuild's own share: the page and count statements
// of a query already parsed.
func BenchmarkCompile(b *testing.B) {
	q, err := benchSchema().Parse(benchValues)
	if err != nil {
		b.Fatal(err)
	}
	tenant := sq.Eq{"branch_id": benchBranch}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := sqlbuild.SQL(query.Postgres, sqlbuild.Page(query.Postgres, q, sq.Select(benchColumns...).From("quotations").Where(tenant))); err != nil {
			b.Fatal(err)
		}
		if _, _, err := sqlbuild.SQL(query.Postgres, sqlbuild.Count(query.Postgres, q, sq.Select("COUNT(*)").From("quotations").Where(tenant))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloorSquirrel(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, err := floor(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchmarkCursorSQL shows what BenchmarkParseCompileCursor builds: the
// same statements as with the offset, a row-value condition in place of
// OFFSET.
func TestBenchmarkCursorSQL(t *testing.T) {
	s := benchSchema()
	v := benchCursorValues(t, s)
	t.Logf("cursor: %s (%d bytes)", v.Get("after"), len(v.Get("after")))
	page, args, _, _, err := parseCompileValues(s, v)
	if err != nil {
		t.Fatalf("parseCompileValues: %v", err)
	}
	if want := "quotation_number ILIKE $4 ESCAPE '!' AND (quotation_date, id) < ($5, $6) ORDER BY quotation_date DESC, id DESC LIMIT $7"; !strings.Contains(page, want) {
		t.Errorf("page SQL =\n%s\nwant it to contain\n%s", page, want)
	}
	checkEqual(t, "page args", args, []any{benchBranch, "draft", "2026-01-01", "%Q-2026%", "2026-03-01", "0a1b2c3d-0000-4000-8000-000000001234", 50})
}

// BenchmarkParseCompileCursor is BenchmarkParseCompile with after=<cursor>
// instead of offset=100: the cursor's decoding and HMAC on top of the same
// work.
func BenchmarkParseCompileCursor(b *testing.B) {
	s := benchSchema()
	v := benchCursorValues(b, s)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, err := parseCompileValues(s, v); err != nil {
			b.Fatal(err)
		}
	}
}
