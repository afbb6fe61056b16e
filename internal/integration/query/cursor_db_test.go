package query_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
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

// cursorFixtures are the operator fixtures with timestamps that need their
// microseconds: ties in threes, the third of each one microsecond later.
func cursorFixtures() []fixture {
	rows := fixtures()
	for i := range rows {
		at := fixtureBase.Add(time.Duration(i/3)*20*time.Minute + 123456*time.Microsecond)
		if i%3 == 2 {
			at = at.Add(time.Microsecond)
		}
		rows[i].createdAt = at
	}
	return rows
}

var cursorDatabases = []struct {
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
}{
	{query.Postgres, testdb.Postgres},
	{query.SQLite, testdb.SQLite},
}

// cursorPage runs the page of q and returns its ids and the sort keys of
// its last row, scanned into an any each, as a handler would.
func cursorPage(t *testing.T, db *sql.DB, d query.Dialect, q *query.Query) (ids []string, last []any) {
	t.Helper()
	columns := []string{"id"}
	for _, o := range q.Sort {
		columns = append(columns, o.Field) // the fields of the test schema are their columns
	}
	text, args, err := sqlbuild.SQL(d, sqlbuild.Page(d, q, sq.Select(columns...).From("items")))
	require.NoError(t, err)
	rs, err := db.Query(text, args...)
	require.NoError(t, err, text)
	defer rs.Close()
	for rs.Next() {
		var id string
		keys := make([]any, len(q.Sort))
		ptrs := []any{&id}
		for i := range keys {
			ptrs = append(ptrs, &keys[i])
		}
		require.NoError(t, rs.Scan(ptrs...))
		ids = append(ids, id)
		last = keys
	}
	require.NoError(t, rs.Err())
	return ids, last
}

// walk reads every page of raw with cursors, calling between after each
// page but the last, and returns the ids in the order received.
func walk(t *testing.T, db *sql.DB, d query.Dialect, s *query.Schema, raw string, between func()) []string {
	t.Helper()
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 500, "the walk does not end")
		r := raw
		if after != "" {
			r += "&after=" + after
		}
		q, err := s.ParseQuery(r)
		require.NoError(t, err, r)
		ids, last := cursorPage(t, db, d, q)
		got = append(got, ids...)
		if len(ids) < q.Limit {
			return got
		}
		after, err = q.NextCursor(last)
		require.NoError(t, err)
		if between != nil {
			between()
		}
	}
}

// TestCursorWalkOnDatabases walks every page of many sorts with cursors, at
// several page sizes, on PostgreSQL and SQLite: the pages together must be
// the whole ordered list, every row once.
func TestCursorWalkOnDatabases(t *testing.T) {
	t.Parallel()
	rows := cursorFixtures()
	s := querytest.CursorSchema()
	lists := []struct {
		query string
		keep  func(fixture) bool
	}{
		{"", nil}, // the default sort, created_at:desc
		{"sort=created_at:asc", nil},
		{"sort=id:asc", nil},
		{"sort=id:desc", nil},
		{"sort=packages:asc", nil},
		{"sort=packages:desc", nil},
		{"sort=status:asc,packages:desc", nil},
		{"sort=status:desc,created_at:asc", nil},
		{"sort=active:desc,created_at:asc", nil},
		{"sort=active:asc,weight:desc", nil},
		{"sort=day:asc", nil},
		{"sort=day:desc", nil},
		{"sort=day:asc,packages:desc", nil},
		{"sort=day:desc,active:asc,created_at:desc", nil},
		{"sort=comment:asc", nil},
		{"sort=comment:desc,status:asc", nil},
		{"sort=weight:asc,created_at:desc", nil},
		{"sort=weight:desc,day:desc,active:asc", nil},
		{"sort=status:asc,active:asc,packages:asc,weight:asc", nil},
		{"sort=day:desc&filter=status:ne:sent", func(r fixture) bool { return r.status != "sent" }},
		{"sort=created_at:desc&filter=created_at:gte:2026-01-01T10:00:00.123457Z", func(r fixture) bool {
			return !r.createdAt.Before(time.Date(2026, 1, 1, 10, 0, 0, 123457000, time.UTC))
		}},
	}
	for _, target := range cursorDatabases {
		t.Run(target.dialect.String(), func(t *testing.T) {
			t.Parallel()
			db := target.open(t)
			load(t, db, target.dialect, rows)
			for _, l := range lists {
				q, err := s.ParseQuery(l.query)
				require.NoError(t, err)
				var want []string
				matched := slices.Clone(rows)
				if l.keep != nil {
					matched = slices.DeleteFunc(matched, func(r fixture) bool { return !l.keep(r) })
				}
				sortFixtures(matched, q.Sort)
				for _, r := range matched {
					want = append(want, r.id)
				}
				require.NotEmpty(t, want)
				for _, limit := range []int{1, 4, 7, 25, len(matched), 1000} {
					t.Run(fmt.Sprintf("%s limit %d", l.query, limit), func(t *testing.T) {
						got := walk(t, db, target.dialect, s, l.query+"&limit="+strconv.Itoa(limit), nil)
						assert.Equal(t, want, got)
					})
				}
			}
		})
	}
}

// TestCursorWalkWhileWriting inserts and deletes rows between the pages of
// a walk: every row that exists throughout comes exactly once, no row comes
// twice, and what comes is in order.
func TestCursorWalkWhileWriting(t *testing.T) {
	t.Parallel()
	s := querytest.CursorSchema()
	for _, target := range cursorDatabases {
		for _, sort := range []string{"sort=status:asc,packages:desc", "sort=day:desc", "sort=created_at:asc", "sort=comment:asc,weight:desc"} {
			t.Run(target.dialect.String()+" "+sort, func(t *testing.T) {
				t.Parallel()
				db := target.open(t)
				d := target.dialect
				rows := cursorFixtures()
				load(t, db, d, rows)
				all := map[string]fixture{}
				for _, r := range rows {
					all[r.id] = r
				}
				deleted := map[string]bool{}
				var seen []string
				n := 0
				between := func() {
					// Two new rows, anywhere in the order.
					var added []fixture
					for range 2 {
						n++
						r := fixture{
							id:        fmt.Sprintf("ffffffff-0000-4000-8000-%012d", n),
							name:      fmt.Sprintf("new-%d", n),
							status:    []string{"draft", "sent", "accepted"}[n%3],
							packages:  int64((n * 11) % 25),
							weight:    float64(n%7) * 1.5,
							createdAt: fixtureBase.Add(time.Duration(n*37%400)*time.Minute + time.Duration(n)*time.Microsecond),
							active:    n%2 == 0,
							code:      "N",
						}
						if n%4 != 0 {
							day := time.Date(2026, 1, 1+n*7%59, 0, 0, 0, 0, time.UTC)
							r.day = &day
						}
						if n%2 == 1 {
							c := fmt.Sprintf("new note %d", n)
							r.comment = &c
						}
						added = append(added, r)
						all[r.id] = r
					}
					insert(t, db, d, added)
					// One original row not read yet and one read already go.
					for _, r := range rows {
						if !deleted[r.id] && !slices.Contains(seen, r.id) && r.id[len(r.id)-1]%2 == 0 {
							remove(t, db, d, r.id)
							deleted[r.id] = true
							break
						}
					}
					if len(seen) > 0 {
						remove(t, db, d, seen[0])
						deleted[seen[0]] = true
					}
				}
				limit := 7
				raw := sort + "&limit=" + strconv.Itoa(limit)
				var got []string
				after := ""
				for pages := 0; ; pages++ {
					require.Less(t, pages, 500)
					r := raw
					if after != "" {
						r += "&after=" + after
					}
					q, err := s.ParseQuery(r)
					require.NoError(t, err)
					ids, last := cursorPage(t, db, d, q)
					got = append(got, ids...)
					seen = append(seen, ids...)
					if len(ids) < limit {
						break
					}
					after, err = q.NextCursor(last)
					require.NoError(t, err)
					between()
				}

				q, err := s.ParseQuery(sort)
				require.NoError(t, err)
				assert.Len(t, got, len(unique(got)), "no row comes twice")
				var throughout []string
				for _, r := range rows {
					if !deleted[r.id] {
						throughout = append(throughout, r.id)
					}
				}
				for _, id := range throughout {
					assert.Contains(t, got, id, "a row that existed throughout is missing")
				}
				received := make([]fixture, len(got))
				for i, id := range got {
					received[i] = all[id]
				}
				ordered := slices.Clone(received)
				sortFixtures(ordered, q.Sort)
				assert.Equal(t, ordered, received, "the rows come in order")
				assert.Greater(t, len(deleted), 5)
				assert.Greater(t, len(got), len(throughout), "some new rows were read too")
			})
		}
	}
}

func remove(t *testing.T, db *sql.DB, d query.Dialect, id string) {
	t.Helper()
	text, args, err := sqlbuild.SQL(d, sq.Delete("items").Where(sq.Eq{"id": id}))
	require.NoError(t, err)
	_, err = db.Exec(text, args...)
	require.NoError(t, err)
}

func unique(ids []string) []string {
	u := slices.Clone(ids)
	slices.Sort(u)
	return slices.Compact(u)
}
