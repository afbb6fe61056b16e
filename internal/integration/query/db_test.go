package query_test

import (
	"cmp"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/querytest"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// fixture is one row of the table every operator runs against, on
// PostgreSQL and on SQLite, with the expected results computed in Go.
type fixture struct {
	id        string
	name      string
	status    string
	packages  int64
	weight    float64
	day       *time.Time
	createdAt time.Time
	active    bool
	comment   *string
	code      string
}

// fixtureNames hold every character the pattern operators must treat right.
var fixtureNames = []string{
	"abc", "ABC", "a_c", "a%c", `a\c`, "aXc", "a*c", "a?c", "a[b]c", "a!c",
	"Hello, World", `say "hi"`, "ÄBC straße", "äbc STRASSE", "", "x",
	"50% off", "50", "Zeta", "zeta", "a\nc", "über", "ÜBER",
}

var fixtureBase = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func fixtures() []fixture {
	statuses := []string{"draft", "sent", "accepted"}
	weights := []float64{0.1, 2.5, 12.345, 0, 7, 2.5}
	var rows []fixture
	for i := range 60 {
		r := fixture{
			id:        fmt.Sprintf("%08x-0000-4000-8000-%012d", (i*7919)%1000, i),
			name:      fmt.Sprintf("item-%03d", i),
			status:    statuses[i%3],
			packages:  int64((i * 37) % 25),
			weight:    weights[i%len(weights)],
			createdAt: fixtureBase.Add(time.Duration(i/3) * 20 * time.Minute), // ties in threes
			active:    i%4 != 0,
			code:      fmt.Sprintf("C%d", i%5),
		}
		if i < len(fixtureNames) {
			r.name = fixtureNames[i]
		}
		if i%5 != 0 {
			d := time.Date(2026, 1, 1+(i*13)%59, 0, 0, 0, 0, time.UTC)
			r.day = &d
		}
		if i%3 == 1 {
			c := fmt.Sprintf("note %d", i)
			r.comment = &c
		}
		rows = append(rows, r)
	}
	return rows
}

const (
	postgresTable = `CREATE TABLE items (
		id uuid PRIMARY KEY, name text NOT NULL, status text NOT NULL,
		packages integer NOT NULL, weight numeric(12,3) NOT NULL, day date,
		created_at timestamptz NOT NULL, active boolean NOT NULL, comment text,
		ref_code text NOT NULL)`
	sqliteTable = `CREATE TABLE items (
		id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL,
		packages INTEGER NOT NULL, weight REAL NOT NULL, day TEXT,
		created_at TEXT NOT NULL, active INTEGER NOT NULL, comment TEXT,
		ref_code TEXT NOT NULL)`
)

func load(t *testing.T, db *sql.DB, d query.Dialect, rows []fixture) {
	t.Helper()
	ddl := postgresTable
	if d == query.SQLite {
		ddl = sqliteTable
	}
	_, err := db.Exec(ddl)
	require.NoError(t, err)
	insert(t, db, d, rows)
}

// insert adds rows to the items table.
func insert(t *testing.T, db *sql.DB, d query.Dialect, rows []fixture) {
	t.Helper()
	for _, r := range rows {
		var day, comment any
		if r.day != nil {
			day = d.Date(*r.day)
		}
		if r.comment != nil {
			comment = *r.comment
		}
		stmt := sq.Insert("items").
			Columns("id", "name", "status", "packages", "weight", "day", "created_at", "active", "comment", "ref_code").
			Values(r.id, r.name, r.status, r.packages, r.weight, day, d.Timestamp(r.createdAt), r.active, comment, r.code)
		text, args, err := sqlbuild.SQL(d, stmt)
		require.NoError(t, err)
		_, err = db.Exec(text, args...)
		require.NoError(t, err)
	}
}

// likeMatch is the reference semantics of like and ilike: % is the only
// wildcard and every other character matches itself. fold lowers the text
// and the pattern before matching, or is nil for a case-sensitive match.
func likeMatch(pattern, s string, fold func(string) string) bool {
	if fold != nil {
		pattern, s = fold(pattern), fold(s)
	}
	parts := strings.Split(pattern, "%")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*") + `\z`).MatchString(s)
}

// asciiLower folds ASCII letters only, as SQLite's LIKE does.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func TestOperatorsOnDatabases(t *testing.T) {
	t.Parallel()
	rows := fixtures()
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	upperID := strings.ToUpper(rows[7].id)
	unicodeFold := strings.ToLower

	type want func(r fixture, d query.Dialect) bool
	cases := []struct {
		name  string
		query string
		want  want
	}{
		{"like underscore is literal", "filter=name:like:a_c", func(r fixture, _ query.Dialect) bool { return r.name == "a_c" }},
		{"like percent is the wildcard", "filter=name:like:a%25c", func(r fixture, _ query.Dialect) bool { return likeMatch("a%c", r.name, nil) }},
		{"like backslash is literal", "filter=name:like:a%5Cc", func(r fixture, _ query.Dialect) bool { return r.name == `a\c` }},
		{"like star question bracket bang are literal", `filter=name:in:"a*c","a?c","a[b]c","a!c"&filter=name:like:a%25`, func(r fixture, _ query.Dialect) bool {
			return slices.Contains([]string{"a*c", "a?c", "a[b]c", "a!c"}, r.name)
		}},
		{"like star", "filter=name:like:a*c", func(r fixture, _ query.Dialect) bool { return r.name == "a*c" }},
		{"like question mark", "filter=name:like:a?c", func(r fixture, _ query.Dialect) bool { return r.name == "a?c" }},
		{"like brackets", "filter=name:like:a[b]%25", func(r fixture, _ query.Dialect) bool { return r.name == "a[b]c" }},
		{"like bang", "filter=name:like:%25!%25", func(r fixture, _ query.Dialect) bool { return strings.Contains(r.name, "!") }},
		{"like is case-sensitive", "filter=name:like:abc", func(r fixture, _ query.Dialect) bool { return r.name == "abc" }},
		{"like case-sensitive on non-ASCII", "filter=name:like:%C3%BCber", func(r fixture, _ query.Dialect) bool { return r.name == "über" }},
		{"like wildcard spans newlines", "filter=name:like:a%25c&filter=name:like:%25%0A%25", func(r fixture, _ query.Dialect) bool { return r.name == "a\nc" }},
		{"like with a literal percent sign in the data", "filter=name:like:50%25", func(r fixture, _ query.Dialect) bool { return strings.HasPrefix(r.name, "50") }},
		{"ilike ASCII", "filter=name:ilike:ABC", func(r fixture, _ query.Dialect) bool { return r.name == "abc" || r.name == "ABC" }},
		{"ilike underscore literal", "filter=name:ilike:A_C", func(r fixture, _ query.Dialect) bool { return r.name == "a_c" }},
		{"ilike contains", "filter=name:ilike:%25ZET%25", func(r fixture, _ query.Dialect) bool { return strings.EqualFold(r.name, "zeta") }},
		{"ilike non-ASCII", "filter=name:ilike:%C3%A4bc%25", func(r fixture, d query.Dialect) bool {
			if d == query.SQLite {
				return likeMatch("äbc%", r.name, asciiLower)
			}
			return likeMatch("äbc%", r.name, unicodeFold)
		}},
		{"ilike non-ASCII upper pattern", "filter=name:ilike:%C3%BCBER", func(r fixture, d query.Dialect) bool {
			if d == query.SQLite {
				return likeMatch("üBER", r.name, asciiLower)
			}
			return likeMatch("üBER", r.name, unicodeFold)
		}},
		{"eq empty string", "filter=name:eq:", func(r fixture, _ query.Dialect) bool { return r.name == "" }},
		{"in with a quoted comma", `filter=name:in:"Hello, World",x`, func(r fixture, _ query.Dialect) bool { return r.name == "Hello, World" || r.name == "x" }},
		{"in with a doubled quote", `filter=name:in:"say ""hi"""`, func(r fixture, _ query.Dialect) bool { return r.name == `say "hi"` }},
		{"timestamp with colons", "filter=created_at:gte:2026-01-01T10:00:00Z", func(r fixture, _ query.Dialect) bool { return !r.createdAt.Before(ts("2026-01-01T10:00:00Z")) }},
		{"timestamp with offset", "filter=created_at:lt:2026-01-01T12:00:00%2B02:00", func(r fixture, _ query.Dialect) bool { return r.createdAt.Before(ts("2026-01-01T10:00:00Z")) }},
		{"timestamp range", "filter=created_at:gt:2026-01-01T10:00:00Z&filter=created_at:lte:2026-01-01T12:20:00Z", func(r fixture, _ query.Dialect) bool {
			return r.createdAt.After(ts("2026-01-01T10:00:00Z")) && !r.createdAt.After(ts("2026-01-01T12:20:00Z"))
		}},
		{"timestamp eq", "filter=created_at:eq:2026-01-01T09:20:00Z", func(r fixture, _ query.Dialect) bool { return r.createdAt.Equal(ts("2026-01-01T09:20:00Z")) }},
		{"timestamp in", "filter=created_at:in:2026-01-01T09:00:00Z,2026-01-01T10:00:00Z", func(r fixture, _ query.Dialect) bool {
			return r.createdAt.Equal(ts("2026-01-01T09:00:00Z")) || r.createdAt.Equal(ts("2026-01-01T10:00:00Z"))
		}},
		{"isnull true", "filter=comment:isnull:true", func(r fixture, _ query.Dialect) bool { return r.comment == nil }},
		{"isnull false", "filter=comment:isnull:false", func(r fixture, _ query.Dialect) bool { return r.comment != nil }},
		{"enum ne", "filter=status:ne:draft", func(r fixture, _ query.Dialect) bool { return r.status != "draft" }},
		{"enum in", "filter=status:in:sent,accepted", func(r fixture, _ query.Dialect) bool { return r.status != "draft" }},
		{"integer range", "filter=packages:gt:5&filter=packages:lte:20", func(r fixture, _ query.Dialect) bool { return r.packages > 5 && r.packages <= 20 }},
		{"integer in", "filter=packages:in:0,3,24", func(r fixture, _ query.Dialect) bool { return slices.Contains([]int64{0, 3, 24}, r.packages) }},
		{"number eq decimal", "filter=weight:eq:0.1", func(r fixture, _ query.Dialect) bool { return r.weight == 0.1 }},
		{"number gte", "filter=weight:gte:2.5", func(r fixture, _ query.Dialect) bool { return r.weight >= 2.5 }},
		{"number lt", "filter=weight:lt:12.345", func(r fixture, _ query.Dialect) bool { return r.weight < 12.345 }},
		{"number in", "filter=weight:in:0.1,12.345", func(r fixture, _ query.Dialect) bool { return r.weight == 0.1 || r.weight == 12.345 }},
		{"date lt", "filter=day:lt:2026-02-01", func(r fixture, _ query.Dialect) bool { return r.day != nil && r.day.Before(ts("2026-02-01T00:00:00Z")) }},
		{"date isnull", "filter=day:isnull:true", func(r fixture, _ query.Dialect) bool { return r.day == nil }},
		{"date ne never matches NULL", "filter=day:ne:2026-01-14", func(r fixture, _ query.Dialect) bool {
			return r.day != nil && !r.day.Equal(ts("2026-01-14T00:00:00Z"))
		}},
		{"boolean eq", "filter=active:eq:true", func(r fixture, _ query.Dialect) bool { return r.active }},
		{"boolean ne", "filter=active:ne:true", func(r fixture, _ query.Dialect) bool { return !r.active }},
		{"uuid in upper case", "filter=id:eq:" + upperID, func(r fixture, _ query.Dialect) bool { return r.id == rows[7].id }},
		{"uuid in", "filter=id:in:" + rows[1].id + "," + rows[2].id, func(r fixture, _ query.Dialect) bool { return r.id == rows[1].id || r.id == rows[2].id }},
		{"renamed column", "filter=code:in:C1,C3", func(r fixture, _ query.Dialect) bool { return r.code == "C1" || r.code == "C3" }},
		{"filters are ANDed", "filter=status:eq:sent&filter=active:eq:true&filter=weight:gt:1", func(r fixture, _ query.Dialect) bool {
			return r.status == "sent" && r.active && r.weight > 1
		}},
		{"multi-key sort with ties", "sort=status:asc,packages:desc&limit=1000", func(fixture, query.Dialect) bool { return true }},
		{"sort on a nullable field ascending", "sort=day:asc&limit=1000", func(fixture, query.Dialect) bool { return true }},
		{"sort on a nullable field descending", "sort=day:desc&limit=1000", func(fixture, query.Dialect) bool { return true }},
		{"sort on numbers", "sort=weight:asc,created_at:desc&limit=1000", func(fixture, query.Dialect) bool { return true }},
		{"default sort with ties", "limit=1000", func(fixture, query.Dialect) bool { return true }},
		{"paging", "filter=status:ne:sent&sort=packages:asc&limit=7&offset=14", func(r fixture, _ query.Dialect) bool { return r.status != "sent" }},
		{"paging past the end", "filter=active:eq:true&limit=10&offset=1000", func(r fixture, _ query.Dialect) bool { return r.active }},
		{"paging last partial page", "sort=created_at:asc&limit=25&offset=50", func(fixture, query.Dialect) bool { return true }},
	}

	schema := querytest.Schema()
	require.NoError(t, schema.Validate())

	dbs := []struct {
		dialect query.Dialect
		open    func(testing.TB) *sql.DB
	}{
		{query.Postgres, testdb.Postgres},
		{query.SQLite, testdb.SQLite},
	}
	for _, target := range dbs {
		t.Run(target.dialect.String(), func(t *testing.T) {
			t.Parallel()
			db := target.open(t)
			load(t, db, target.dialect, rows)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					q, err := schema.ParseQuery(tc.query)
					require.NoError(t, err)

					var matched []fixture
					for _, r := range rows {
						if tc.want(r, target.dialect) {
							matched = append(matched, r)
						}
					}
					sortFixtures(matched, q.Sort)
					var want []string
					for i := q.Offset; i < int64(len(matched)) && i < q.Offset+int64(q.Limit); i++ {
						want = append(want, matched[i].id)
					}

					got, total := run(t, db, target.dialect, q)
					assert.Equal(t, want, got, "page")
					assert.Equal(t, len(matched), total, "total")
					if tc.name != "paging past the end" {
						assert.NotEmpty(t, got, "a case that matches nothing proves little")
					}
				})
			}
		})
	}
}

func run(t *testing.T, db *sql.DB, d query.Dialect, q *query.Query) ([]string, int) {
	t.Helper()
	text, args, err := sqlbuild.SQL(d, sqlbuild.Page(d, q, sq.Select("id").From("items")))
	require.NoError(t, err)
	rs, err := db.Query(text, args...)
	require.NoError(t, err, text)
	defer rs.Close()
	var ids []string
	for rs.Next() {
		var id string
		require.NoError(t, rs.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rs.Err())

	text, args, err = sqlbuild.SQL(d, sqlbuild.Count(d, q, sq.Select("COUNT(*)").From("items")))
	require.NoError(t, err)
	var total int
	require.NoError(t, db.QueryRow(text, args...).Scan(&total), text)
	return ids, total
}

// sortFixtures orders rows as the compiled ORDER BY must: every key in turn,
// NULLs last ascending and first descending (PostgreSQL's order, which the
// SQLite dialect reproduces).
func sortFixtures(rows []fixture, order []query.Order) {
	slices.SortStableFunc(rows, func(a, b fixture) int {
		for _, o := range order {
			c := compareField(a, b, o.Field)
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

// compareField compares one field; a NULL counts as larger than any value.
func compareField(a, b fixture, field string) int {
	switch field {
	case "id":
		return cmp.Compare(a.id, b.id)
	case "status":
		return cmp.Compare(a.status, b.status)
	case "packages":
		return cmp.Compare(a.packages, b.packages)
	case "weight":
		return cmp.Compare(a.weight, b.weight)
	case "created_at":
		return a.createdAt.Compare(b.createdAt)
	case "day":
		switch {
		case a.day == nil && b.day == nil:
			return 0
		case a.day == nil:
			return 1
		case b.day == nil:
			return -1
		}
		return a.day.Compare(*b.day)
	case "comment":
		switch {
		case a.comment == nil && b.comment == nil:
			return 0
		case a.comment == nil:
			return 1
		case b.comment == nil:
			return -1
		}
		return cmp.Compare(*a.comment, *b.comment)
	case "active":
		return cmp.Compare(boolInt(a.active), boolInt(b.active))
	}
	panic("no comparison for " + field)
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
