package resource_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
)

func TestFieldSelection(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		created := e.mustCreate(t, token, accounts, `{"company_name":"Acme","account_type":"customer","comment":"c"}`)
		item := accounts + "/" + created["id"].(string)
		full := e.doWith(t, http.MethodGet, item, token, "", nil)

		keys := func(m map[string]any) []string {
			var ks []string
			for k := range m {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			return ks
		}
		r := e.doWith(t, http.MethodGet, accounts+"?fields=status,company_name", token, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Len(t, r.list(), 1)
		assert.Equal(t, []string{"company_name", "id", "status"}, keys(r.list()[0].(map[string]any)), "id always comes back")
		assert.EqualValues(t, 1, r.body["pagination"].(map[string]any)["total"])

		r = e.doWith(t, http.MethodGet, item+"?fields=comment&fields=branch_id", token, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, []string{"branch_id", "comment", "id"}, keys(r.data()))
		assert.Equal(t, full.header.Get("ETag"), r.header.Get("ETag"), "the tag is the record's version, whatever fields shows")
		assert.Contains(t, r.raw, `{"data":{"id":`, "fields keep the resource's order")

		for _, bad := range []string{"fields=colour", "fields=", "fields=id,,status", "fields=status,Status"} {
			for _, path := range []string{accounts, item} {
				r := e.doWith(t, http.MethodGet, path+"?"+bad, token, "", nil)
				assert.Equal(t, http.StatusBadRequest, r.status, "%s %s", path, bad)
				assert.Equal(t, "invalid_request", r.code())
				assert.Contains(t, r.body["error_description"], "fields:")
			}
		}
		r = e.doWith(t, http.MethodGet, accounts+"?fields=colour", token, "", nil)
		assert.Contains(t, r.body["error_description"], `accounts has no field "colour"; its fields are id, company_name`)
	})
}

// TestFieldSelectionBound: fields names at most as many fields as the
// resource has, counted as given; a name given twice is kept once. More
// is a 400 in the error shape, however many, and the Link of the next page
// carries the fields selected, not the parameter as sent.
func TestFieldSelectionBound(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		for _, name := range []string{"Acme", "Bolt"} {
			e.mustCreate(t, token, accounts, `{"company_name":"`+name+`","account_type":"customer"}`)
		}
		full := e.doWith(t, http.MethodGet, accounts+"?limit=1", token, "", nil)
		require.Equal(t, http.StatusOK, full.status, full.raw)
		var all []string
		for k := range full.list()[0].(map[string]any) {
			all = append(all, k)
		}
		require.Len(t, all, 10, "the fields of accounts, tenant columns included")

		r := e.doWith(t, http.MethodGet, accounts+"?limit=1&fields="+url.QueryEscape(" status , company_name,status"), token, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Len(t, r.list()[0].(map[string]any), 3, "id, company_name and status, each once")
		link := r.header.Get("Link")
		require.True(t, strings.HasPrefix(link, "<") && strings.HasSuffix(link, `>; rel="next"`), link)
		next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		require.NoError(t, err)
		assert.Equal(t, []string{"id,company_name,status"}, next.Query()["fields"], "the fields selected, in the resource's order")
		followed := e.doWith(t, http.MethodGet, next.String(), token, "", nil)
		require.Equal(t, http.StatusOK, followed.status, followed.raw)
		assert.Len(t, followed.list(), 1)

		every := strings.Join(all, ",")
		r = e.doWith(t, http.MethodGet, accounts+"?fields="+every, token, "", nil)
		assert.Equal(t, http.StatusOK, r.status, "every field once: %s", r.raw)

		for _, tc := range []struct{ name, query string }{
			{"eleven names", "fields=" + every + ",id"},
			{"eleven names in two parameters", "fields=" + every + "&fields=id"},
			{"one name 11 times", "fields=" + strings.Repeat("id,", 10) + "id"},
			{"50,000 names", "fields=" + strings.Repeat("status,", 49_999) + "status"},
			{"50,000 unknown names", "fields=" + strings.Repeat("x,", 49_999) + "x"},
		} {
			for _, path := range []string{accounts, accounts + "/" + full.list()[0].(map[string]any)["id"].(string)} {
				r := e.doWith(t, http.MethodGet, path+"?"+tc.query, token, "", nil)
				assert.Equal(t, http.StatusBadRequest, r.status, "%s %s: %.200s", tc.name, path, r.raw)
				assert.Equal(t, "invalid_request", r.code())
				assert.Contains(t, r.body["error_description"], "at most as many")
				assert.Empty(t, r.header.Get("Link"))
				assert.Less(t, len(r.raw), 1000, tc.name)
			}
		}
	})
}

// recorder is a database/sql driver around SQLite's that records the text
// of every statement it prepares. Without QueryerContext and ExecerContext
// on its connections, database/sql prepares every statement.
type recorder struct {
	mu    sync.Mutex
	stmts []string
}

func (rec *recorder) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, rec: rec}, nil
}

func (rec *recorder) statements() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.stmts)
}

func (rec *recorder) reset() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.stmts = nil
}

type recordingConn struct {
	driver.Conn
	rec *recorder
}

func (c *recordingConn) Prepare(text string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), text)
}

func (c *recordingConn) PrepareContext(ctx context.Context, text string) (driver.Stmt, error) {
	c.rec.mu.Lock()
	c.rec.stmts = append(c.rec.stmts, text)
	c.rec.mu.Unlock()
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, text)
}

func (c *recordingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

type recorderConnector struct {
	rec  *recorder
	name string
}

func (c recorderConnector) Connect(context.Context) (driver.Conn, error) { return c.rec.Open(c.name) }
func (c recorderConnector) Driver() driver.Driver                        { return c.rec }

func TestPreferCount(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	recorded := backend{name: "sqlite, statements recorded", dialect: query.SQLite, schema: sqliteSchema, open: func(t testing.TB) *sql.DB {
		db := sql.OpenDB(recorderConnector{rec: rec, name: testdb.SQLitePath(t) + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"})
		t.Cleanup(func() { _ = db.Close() })
		return db
	}}
	for _, b := range append(slices.Clone(backends), recorded) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts?limit=2"
			for _, name := range []string{"A", "B", "C"} {
				e.mustCreate(t, token, "/v1/"+a1+"/accounts", `{"company_name":"`+name+`","account_type":"customer"}`)
			}
			tests := []struct {
				prefer, applied string
				total           any
			}{
				{"", "", 3.0},
				{"count=exact", "count=exact", 3.0},
				{"count=none", "count=none", nil},
				{`return=minimal, count="none"; foo=bar`, "count=none", nil},
				{"COUNT=None", "count=none", nil},
				{"count=estimated", "", 3.0}, // small (and on SQLite): exact, and no claim of an estimate
				{"count=sometimes", "", 3.0},
			}
			for _, tc := range tests {
				if b.name == recorded.name {
					rec.reset()
				}
				var header map[string]string
				if tc.prefer != "" {
					header = map[string]string{"Prefer": tc.prefer}
				}
				r := e.doWith(t, http.MethodGet, accounts, token, "", header)
				require.Equal(t, http.StatusOK, r.status, r.raw)
				assert.Len(t, r.list(), 2, tc.prefer)
				assert.Equal(t, tc.total, r.body["pagination"].(map[string]any)["total"], tc.prefer)
				assert.Equal(t, tc.applied, r.header.Get("Preference-Applied"), tc.prefer)
				assert.Contains(t, r.header.Values("Vary"), "Prefer")
				if b.name == recorded.name {
					counts := 0
					for _, s := range rec.statements() {
						if strings.Contains(s, "COUNT(") {
							counts++
						}
					}
					want := 1
					if tc.total == nil {
						want = 0
					}
					assert.Equal(t, want, counts, "%s: COUNT statements in %q", tc.prefer, rec.statements())
				}
			}
		})
	}
}

// TestPreferCountEstimated: on a large PostgreSQL table count=estimated is
// the planner's estimate, and says so.
func TestPreferCountEstimated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	require.Equal(t, query.Postgres, e.dialect)
	_, err := e.db.Exec(`INSERT INTO accounts (id, organization_id, branch_id, created_at, updated_at, company_name, account_type, status)
		SELECT gen_random_uuid(), $1, $2, now(), now(), 'Company ' || i, 'customer', 'active' FROM generate_series(1, 30000) AS i`, orgA, a1)
	require.NoError(t, err)
	_, err = e.db.Exec("ANALYZE accounts")
	require.NoError(t, err)
	token := e.codeToken(t, orgA, allScopes...)
	r := e.doWith(t, http.MethodGet, "/v1/"+a1+"/accounts?limit=1", token, "", map[string]string{"Prefer": "count=estimated"})
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, "count=estimated", r.header.Get("Preference-Applied"))
	total := r.body["pagination"].(map[string]any)["total"].(float64)
	assert.InDelta(t, 30000, total, 3000, "an estimate near the real count")

	r = e.doWith(t, http.MethodGet, "/v1/"+a1+"/accounts?limit=1&filter=company_name:eq:Company%207", token, "", map[string]string{"Prefer": "count=estimated"})
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Empty(t, r.header.Get("Preference-Applied"), "a small estimate is counted exactly")
	assert.EqualValues(t, 1, r.body["pagination"].(map[string]any)["total"])
}
