package sqlbuild_test

import (
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

func TestCompile(t *testing.T) {
	base := func() (sq.SelectBuilder, sq.SelectBuilder) {
		return sq.Select("id", "name").From("items").Where("org = ?", "o1"),
			sq.Select("COUNT(*)").From("items").Where("org = ?", "o1")
	}
	cases := []struct {
		name      string
		query     string
		dialect   query.Dialect
		page      string
		count     string
		pageArgs  []any
		countArgs []any
	}{
		{
			name: "postgres", dialect: query.Postgres,
			query:     "filter=status:in:draft,sent&filter=name:ilike:%25a_b!%25&filter=comment:isnull:true&filter=code:eq:X&sort=packages:desc&limit=10&offset=20",
			page:      "SELECT id, name FROM items WHERE org = $1 AND status IN ($2,$3) AND name ILIKE $4 ESCAPE '!' AND comment IS NULL AND ref_code = $5 ORDER BY packages DESC, id DESC LIMIT $6 OFFSET $7",
			count:     "SELECT COUNT(*) FROM items WHERE org = $1 AND status IN ($2,$3) AND name ILIKE $4 ESCAPE '!' AND comment IS NULL AND ref_code = $5",
			pageArgs:  []any{"o1", "draft", "sent", "%a!_b!!%", "X", 10, int64(20)},
			countArgs: []any{"o1", "draft", "sent", "%a!_b!!%", "X"},
		},
		{
			name: "sqlite", dialect: query.SQLite,
			query:     "filter=name:like:a*b?%25[c]&filter=name:ilike:x_%25&filter=day:isnull:false&sort=day:asc",
			page:      "SELECT id, name FROM items WHERE org = ? AND name GLOB ? AND name LIKE ? ESCAPE '!' AND day IS NOT NULL ORDER BY day ASC NULLS LAST, id ASC LIMIT ? OFFSET ?",
			count:     "SELECT COUNT(*) FROM items WHERE org = ? AND name GLOB ? AND name LIKE ? ESCAPE '!' AND day IS NOT NULL",
			pageArgs:  []any{"o1", "a[*]b[?]*[[]c]", "x!_%", 50, int64(0)},
			countArgs: []any{"o1", "a[*]b[?]*[[]c]", "x!_%"},
		},
		{
			name: "sqlite nullable desc and timestamps", dialect: query.SQLite,
			query:     "filter=created_at:gte:2026-01-01T10:00:00Z&filter=day:lt:2026-02-01&sort=day:desc",
			page:      "SELECT id, name FROM items WHERE org = ? AND created_at >= ? AND day < ? ORDER BY day DESC NULLS FIRST, id DESC LIMIT ? OFFSET ?",
			count:     "SELECT COUNT(*) FROM items WHERE org = ? AND created_at >= ? AND day < ?",
			pageArgs:  []any{"o1", "2026-01-01T10:00:00.000000Z", "2026-02-01", 50, int64(0)},
			countArgs: []any{"o1", "2026-01-01T10:00:00.000000Z", "2026-02-01"},
		},
		{
			name: "postgres without filters", dialect: query.Postgres,
			query:     "",
			page:      "SELECT id, name FROM items WHERE org = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3",
			count:     "SELECT COUNT(*) FROM items WHERE org = $1",
			pageArgs:  []any{"o1", 50, int64(0)},
			countArgs: []any{"o1"},
		},
	}
	s := testSchema()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := mustParse(t, s, tc.query)
			page, count := base()
			sql, args, err := sqlbuild.SQL(tc.dialect, sqlbuild.Page(tc.dialect, q, page))
			if err != nil {
				t.Fatalf("Page: SQL() = %v", err)
			}
			if sql != tc.page {
				t.Errorf("Page SQL =\n%s\nwant\n%s", sql, tc.page)
			}
			checkEqual(t, "Page args", args, tc.pageArgs)
			sql, args, err = sqlbuild.SQL(tc.dialect, sqlbuild.Count(tc.dialect, q, count))
			if err != nil {
				t.Fatalf("Count: SQL() = %v", err)
			}
			if sql != tc.count {
				t.Errorf("Count SQL =\n%s\nwant\n%s", sql, tc.count)
			}
			checkEqual(t, "Count args", args, tc.countArgs)
		})
	}
}

func TestCursorCompile(t *testing.T) {
	s := testSchema()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	day := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		dialect query.Dialect
		query   string
		last    []any
		page    string
		args    []any
	}{
		{
			name: "tiebreaker only", dialect: query.Postgres, query: "sort=id:asc&limit=10", last: []any{anID},
			page: "SELECT id FROM items WHERE org = $1 AND id > $2 ORDER BY id ASC LIMIT $3",
			args: []any{"o1", anID, 10},
		},
		{
			name: "one direction: a row value", dialect: query.Postgres, query: "filter=status:eq:draft&sort=created_at:desc", last: []any{at, anID},
			page: "SELECT id FROM items WHERE org = $1 AND status = $2 AND (created_at, id) < ($3, $4) ORDER BY created_at DESC, id DESC LIMIT $5",
			args: []any{"o1", "draft", at, anID, 50},
		},
		{
			name: "one direction on SQLite binds SQLite's timestamp text", dialect: query.SQLite, query: "sort=packages:asc,created_at:asc", last: []any{int64(4), at, anID},
			page: "SELECT id FROM items WHERE org = ? AND (packages, created_at, id) > (?, ?, ?) ORDER BY packages ASC, created_at ASC, id ASC LIMIT ?",
			args: []any{"o1", int64(4), "2026-01-02T03:04:05.123456Z", anID, 50},
		},
		{
			name: "mixed directions: a bound and a chain", dialect: query.Postgres, query: "sort=status:asc,packages:desc", last: []any{"sent", int64(7), anID},
			page: "SELECT id FROM items WHERE org = $1 AND status >= $2 AND (status > $3 OR (status = $4 AND (packages < $5 OR (packages = $6 AND (id < $7))))) ORDER BY status ASC, packages DESC, id DESC LIMIT $8",
			args: []any{"o1", "sent", "sent", "sent", int64(7), int64(7), anID, 50},
		},
		{
			name: "nullable ascending at a value", dialect: query.SQLite, query: "sort=day:asc", last: []any{day, anID},
			page: "SELECT id FROM items WHERE org = ? AND ((day > ? OR day IS NULL) OR (day = ? AND (id > ?))) ORDER BY day ASC NULLS LAST, id ASC LIMIT ?",
			args: []any{"o1", "2026-02-01", "2026-02-01", anID, 50},
		},
		{
			name: "nullable ascending at NULL", dialect: query.Postgres, query: "sort=day:asc", last: []any{nil, anID},
			page: "SELECT id FROM items WHERE org = $1 AND ((day IS NULL AND (id > $2))) ORDER BY day ASC, id ASC LIMIT $3",
			args: []any{"o1", anID, 50},
		},
		{
			name: "nullable descending at a value", dialect: query.Postgres, query: "sort=day:desc", last: []any{day, anID},
			page: "SELECT id FROM items WHERE org = $1 AND day <= $2 AND (day < $3 OR (day = $4 AND (id < $5))) ORDER BY day DESC, id DESC LIMIT $6",
			args: []any{"o1", "2026-02-01", "2026-02-01", "2026-02-01", anID, 50},
		},
		{
			name: "nullable descending at NULL", dialect: query.SQLite, query: "sort=day:desc", last: []any{nil, anID},
			page: "SELECT id FROM items WHERE org = ? AND (day IS NOT NULL OR (day IS NULL AND (id < ?))) ORDER BY day DESC NULLS FIRST, id DESC LIMIT ?",
			args: []any{"o1", anID, 50},
		},
		{
			name: "booleans and a nullable string", dialect: query.SQLite, query: "sort=active:desc,comment:asc&limit=3", last: []any{true, nil, anID},
			page: "SELECT id FROM items WHERE org = ? AND active <= ? AND (active < ? OR (active = ? AND ((comment IS NULL AND (id > ?))))) ORDER BY active DESC, comment ASC NULLS LAST, id ASC LIMIT ?",
			args: []any{"o1", true, true, true, anID, 3},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cursorFor(t, s, tc.query, tc.last...)
			q := mustParse(t, s, tc.query+"&after="+c)
			text, args, err := sqlbuild.SQL(tc.dialect, sqlbuild.Page(tc.dialect, q, sq.Select("id").From("items").Where("org = ?", "o1")))
			if err != nil {
				t.Fatalf("Page: SQL() = %v", err)
			}
			if text != tc.page {
				t.Errorf("Page SQL =\n%s\nwant\n%s", text, tc.page)
			}
			checkEqual(t, "Page args", args, tc.args)
			if strings.Contains(text, "OFFSET") {
				t.Errorf("Page SQL with a cursor holds OFFSET: %s", text)
			}

			count, _, err := sqlbuild.SQL(tc.dialect, sqlbuild.Count(tc.dialect, q, sq.Select("COUNT(*)").From("items")))
			if err != nil {
				t.Fatalf("Count: SQL() = %v", err)
			}
			if strings.Contains(count, "id") {
				t.Errorf("Count SQL = %s, want no condition on id: a cursor leaves the count alone", count)
			}
		})
	}

	q := mustParse(t, s, "")
	if k := sqlbuild.Keyset(query.Postgres, q); k != nil {
		t.Errorf("Keyset() without a cursor = %#v, want nil: no cursor, no condition", k)
	}
	q.After = []any{at}
	_, _, err := sqlbuild.SQL(query.Postgres, sqlbuild.Page(query.Postgres, q, sq.Select("id").From("items")))
	checkErrorContains(t, err, "1 values for 2 sort keys")
}

// TestParts checks that Where, Keyset and OrderBy are the parts of Page:
// nil without filters or cursor, and together, with LIMIT, Page's SQL.
func TestParts(t *testing.T) {
	s := testSchema()
	q := mustParse(t, s, "sort=day:desc")
	if w := sqlbuild.Where(query.Postgres, q); w != nil {
		t.Errorf("Where() without filters = %#v, want nil", w)
	}

	raw := "filter=status:in:draft,sent&filter=created_at:lt:2026-03-01T00:00:00Z&sort=day:desc&limit=5"
	q = mustParse(t, s, raw+"&after="+cursorFor(t, s, raw, nil, anID))
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		page, pageArgs, err := sqlbuild.SQL(d, sqlbuild.Page(d, q, sq.Select("id").From("items")))
		if err != nil {
			t.Fatalf("%v: Page: %v", d, err)
		}
		parts, partsArgs, err := sqlbuild.SQL(d, sq.Select("id").From("items").
			Where(sq.And{sqlbuild.Where(d, q), sqlbuild.Keyset(d, q)}).
			OrderBy(sqlbuild.OrderBy(d, q)...).Suffix("LIMIT ?", q.Limit))
		if err != nil {
			t.Fatalf("%v: parts: %v", d, err)
		}
		// squirrel's And puts its conditions in parentheses; Page does not.
		if want := strings.Replace(strings.Replace(page, "WHERE ", "WHERE (", 1), " ORDER BY", ") ORDER BY", 1); parts != want {
			t.Errorf("%v: Where, Keyset and OrderBy =\n%s\nwant Page's\n%s", d, parts, want)
		}
		checkEqual(t, d.String()+" args", partsArgs, pageArgs)
	}
	checkEqual(t, "Placeholders(Postgres)", sqlbuild.Placeholders(query.Postgres), sq.Dollar)
	checkEqual(t, "Placeholders(SQLite)", sqlbuild.Placeholders(query.SQLite), sq.Question)
}
