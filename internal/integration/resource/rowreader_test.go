package resource_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/apitest"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/pgxrows"
)

// TestExportRowReader: a registry that reads its exports through
// pgxrows.Reader answers byte for byte what one that reads them through
// database/sql answers, for values of every field type that are hard to
// write (escapes, digits past a float's, microseconds, nulls), as NDJSON
// and as CSV, with fields and filters; each NDJSON line is byte for byte
// the record as the list shows it. On SQLite the reader steps aside.
func TestExportRowReader(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		names := []string{
			"Plain", `<b>&"quoted"\</b>`, "tab\tand\nnewline\r\x01\x1f", "line\u2028sep\u2029", "Ünïcödé 東京 🚚",
			" leading space", `\.`, "=SUM(A1)", "comma, and \"quote\"",
		}
		var accountIDs []string
		for i, name := range names {
			email := "null"
			if i%3 == 0 {
				email = fmt.Sprintf("%q", fmt.Sprintf("a%d@example.com", i))
			}
			rec := e.mustCreate(t, token, accounts, fmt.Sprintf(`{"company_name":%s,"account_type":"customer","email":%s}`, jsonString(t, name), email))
			accountIDs = append(accountIDs, rec["id"].(string))
		}
		quotations := "/v1/" + a1 + "/quotations"
		for i, q := range []struct{ weight, packages string }{
			{"0", "0"}, {"0.001", "1"}, {"12345678901.125", "9007199254740993"}, {"null", "null"}, {"7.5", "9223372036854775807"},
		} {
			e.mustCreate(t, token, quotations, fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-0%d-15","valid_until":"2026-12-31","total_weight_kg":%s,"total_packages":%s}`,
				accountIDs[i], i+1, q.weight, q.packages))
		}
		vehicles := "/v1/" + orgA + "/vehicles"
		e.mustCreate(t, token, vehicles, `{"plate":"AB-1","active":true}`)
		e.mustCreate(t, token, vehicles, `{"plate":"AB-2","active":false}`)

		fast := e.withRowReader(t)
		for _, path := range []string{
			accounts + "?sort=company_name:asc",
			accounts + "?fields=company_name,email&filter=email:isnull:false",
			quotations,
			quotations + "?filter=total_weight_kg:gt:1&fields=total_weight_kg,total_packages,created_at",
			vehicles + "?sort=plate:desc",
		} {
			for _, accept := range []string{resource.NDJSON, resource.CSV} {
				res, want := e.exportOf(t, http.MethodGet, path, token, accept)
				require.Equal(t, http.StatusOK, res.StatusCode, want)
				res, got := fast.exportOf(t, http.MethodGet, path, token, accept)
				require.Equal(t, http.StatusOK, res.StatusCode, got)
				assert.Equal(t, want, got, "%s as %s", path, accept)
				assert.NotEmpty(t, strings.TrimSpace(got), path)
			}
		}

		t.Run("each line is the record as the list shows it", func(t *testing.T) {
			for _, path := range []string{accounts + "?sort=company_name:asc", quotations, vehicles} {
				_, body := fast.exportOf(t, http.MethodGet, path, token, resource.NDJSON)
				var page struct {
					Data []json.RawMessage `json:"data"`
				}
				list := fast.do(t, http.MethodGet, path, token, "")
				require.Equal(t, http.StatusOK, list.status, list.raw)
				require.NoError(t, json.Unmarshal([]byte(list.raw), &page))
				lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
				require.Len(t, lines, len(page.Data), path)
				for i, rec := range page.Data {
					assert.Equal(t, string(rec), lines[i], "%s, record %d", path, i)
				}
			}
		})
	})
}

// jsonString is s as a JSON string.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// withRowReader returns an env whose registry serves the test resources
// from e's database, reading its exports through pgxrows.Reader.
func (e *env) withRowReader(t *testing.T) *env {
	t.Helper()
	reg := &resource.Registry{DB: e.db, Dialect: e.dialect, Verifier: &bearer.Verifier{Keys: e.keys, Issuer: issuer},
		Branches: apitest.Branches{DB: e.db, Table: "branches"}, RowReader: pgxrows.Reader{}}
	require.NoError(t, reg.Register(testResources()...))
	mux := http.NewServeMux()
	reg.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{db: e.db, dialect: e.dialect, http: srv, keys: e.keys, registry: reg}
}

// TestListRowReader: a registry that reads its lists through
// pgxrows.Reader answers every page byte for byte as one that reads them
// through database/sql, next cursor and Link included, with sort keys of
// every type (a nullable number and integer among them), fields and
// filters, page after page to the last; on SQLite the reader steps aside.
func TestListRowReader(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		var accountIDs []string
		for i, name := range []string{"Zeta", "alpha", "Ünïcödé", "Beta \"quoted\"", "alpha"} {
			rec := e.mustCreate(t, token, accounts, fmt.Sprintf(`{"company_name":%s,"account_type":%q}`, jsonString(t, name), []string{"customer", "carrier"}[i%2]))
			accountIDs = append(accountIDs, rec["id"].(string))
		}
		quotations := "/v1/" + a1 + "/quotations"
		for i, q := range []struct{ weight, packages string }{
			{"0", "0"}, {"0.001", "1"}, {"12345678901.125", "9007199254740993"}, {"null", "null"}, {"7.5", "3"}, {"7.5", "null"}, {"null", "3"},
		} {
			e.mustCreate(t, token, quotations, fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-0%d-15","valid_until":"2026-12-31","total_weight_kg":%s,"total_packages":%s}`,
				accountIDs[i%len(accountIDs)], i%3+1, q.weight, q.packages))
		}
		vehicles := "/v1/" + orgA + "/vehicles"
		for i := range 5 {
			e.mustCreate(t, token, vehicles, fmt.Sprintf(`{"plate":"AB-%d","active":%t}`, i, i%2 == 0))
		}

		fast := e.withRowReader(t)
		for _, path := range []string{
			accounts + "?limit=2",
			accounts + "?limit=2&sort=company_name:asc,account_type:desc",
			accounts + "?limit=2&fields=company_name&filter=account_type:eq:customer",
			quotations + "?limit=2",
			quotations + "?limit=2&sort=total_weight_kg:desc",
			quotations + "?limit=2&sort=total_packages:asc,quotation_date:desc",
			quotations + "?limit=2&sort=account_id:asc,created_at:desc&fields=account_id,total_packages",
			quotations + "?limit=3&filter=total_weight_kg:gt:0.0005",
			vehicles + "?limit=2&sort=plate:desc",
		} {
			pages := 0
			for next := path; next != ""; pages++ {
				require.Less(t, pages, 10, "%s: pages without end", path)
				want := e.do(t, http.MethodGet, next, token, "")
				require.Equal(t, http.StatusOK, want.status, want.raw)
				got := fast.do(t, http.MethodGet, next, token, "")
				require.Equal(t, http.StatusOK, got.status, got.raw)
				assert.Equal(t, want.raw, got.raw, next)
				assert.Equal(t, want.header.Get("Link"), got.header.Get("Link"), next)
				var page struct {
					Pagination struct {
						NextCursor *string `json:"next_cursor"`
					} `json:"pagination"`
				}
				require.NoError(t, json.Unmarshal([]byte(got.raw), &page))
				next = ""
				if c := page.Pagination.NextCursor; c != nil {
					base, _, _ := strings.Cut(path, "?")
					u, err := url.Parse(path)
					require.NoError(t, err)
					v := u.Query()
					v.Set("after", *c)
					next = base + "?" + v.Encode()
				}
			}
			assert.Greater(t, pages, 1, "%s: one page only, the cursor was not tried", path)
		}
	})
}

// TestListOneConnection: with a RowReader a list with its total takes one
// connection from the pool, for both statements, where one without takes
// two; the count is the pool's closes of connections it may not keep idle
// (it keeps none here), one per connection handed back. Each request takes
// one more before the list, for the test's branch directory
// (apitest.Branches reads the branch's organization from the database).
func TestListOneConnection(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		for _, name := range []string{"One", "Two", "Three"} {
			e.mustCreate(t, token, accounts, fmt.Sprintf(`{"company_name":%q,"account_type":"customer"}`, name))
		}
		fast := e.withRowReader(t)
		e.db.SetMaxIdleConns(0)
		for _, c := range []struct {
			name  string
			env   *env
			conns int64
		}{{"database/sql", e, 1 + 2}, {"RowReader", fast, 1 + 1}} {
			before := e.db.Stats().MaxIdleClosed
			res := c.env.do(t, http.MethodGet, accounts+"?limit=2", token, "")
			require.Equal(t, http.StatusOK, res.status, res.raw)
			assert.Contains(t, res.raw, `"total":3`)
			assert.Equal(t, c.conns, e.db.Stats().MaxIdleClosed-before, "%s: connections taken", c.name)
		}
	})
}
