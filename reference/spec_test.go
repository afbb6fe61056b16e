package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specEnv is a running reference server with an organization of two
// branches, tokens of every kind, and a helper to call it.
type specEnv struct {
	t                 *testing.T
	base              string
	org, north, south string
	full, narrow      string // client-credentials tokens: every scope and branch; quotations read in north only
	user              string // a product user token
}

func newSpecEnv(t *testing.T, dbURL string) *specEnv {
	t.Helper()
	e := &specEnv{t: t}
	e.org = createID(t, "admin", "org", "create", "--name", "Spec Freight", "--database-url", dbURL)
	e.north = createID(t, "admin", "branch", "create", "--org", e.org, "--name", "North", "--database-url", dbURL)
	e.south = createID(t, "admin", "branch", "create", "--org", e.org, "--name", "South", "--database-url", dbURL)
	createID(t, "admin", "user", "create", "--email", "spec@freight.test", "--password", "spec-password", "--org", e.org, "--database-url", dbURL)
	var scopes []string
	for _, r := range resources() {
		scopes = append(scopes, r.ReadScope(), r.WriteScope())
	}
	full := adminJSON(t, "admin", "app", "create", "--org", e.org, "--name", "Full", "--scopes", strings.Join(scopes, " "),
		"--branches", e.north+","+e.south, "--database-url", dbURL)
	narrow := adminJSON(t, "admin", "app", "create", "--org", e.org, "--name", "Narrow", "--scopes", "svc:quotations:read",
		"--branches", e.north, "--database-url", dbURL)

	var stop func() error
	e.base, _, stop = startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
	t.Cleanup(func() { _ = stop() })
	e.full = e.clientToken(full["client_id"].(string), full["client_secret"].(string))
	e.narrow = e.clientToken(narrow["client_id"].(string), narrow["client_secret"].(string))
	res, body := postJSON(t, e.base+"/auth/v1/token?grant_type=password", map[string]string{"email": "spec@freight.test", "password": "spec-password"}, "")
	require.Equal(t, 200, res.StatusCode, body)
	e.user = body["access_token"].(string)
	return e
}

func (e *specEnv) clientToken(id, secret string) string {
	res, body := postForm(e.t, e.base+"/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}}, id, secret)
	require.Equal(e.t, 200, res.StatusCode, body)
	return body["access_token"].(string)
}

// call sends a request and decodes the JSON answer.
func (e *specEnv) call(method, path, token, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.base+path, rd)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	var m map[string]any
	raw, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	if len(raw) > 0 {
		require.NoError(e.t, json.Unmarshal(raw, &m), string(raw))
	}
	return res.StatusCode, res.Header, m
}

func (e *specEnv) create(path, body string) map[string]any {
	e.t.Helper()
	status, _, m := e.call(http.MethodPost, path, e.full, body)
	require.Equal(e.t, 201, status, "%s %s: %v", path, body, m)
	return m["data"].(map[string]any)
}

// TestSPEC drives the reference server through SPEC sections 2 to 4, on
// SQLite and on PostgreSQL.
func TestSPEC(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newSpecEnv(t, b.url(t))
			north := "/v1/" + e.north

			// Accounts: the fields of SPEC section 3, and the envelope of POST.
			status, header, created := e.call(http.MethodPost, north+"/accounts", e.full,
				`{"company_name":"Acme Freight","email":"ops@acme.test","phone":"+49 40 1234","account_type":"customer","status":"active","comment":null}`)
			require.Equal(t, 201, status, created)
			acc := created["data"].(map[string]any)
			assert.Equal(t, "v1", created["version"])
			assert.Equal(t, north+"/accounts/"+acc["id"].(string), header.Get("Location"))
			for _, f := range []string{"id", "company_name", "email", "phone", "account_type", "status", "comment", "created_at", "updated_at"} {
				assert.Contains(t, acc, f)
			}
			accountID := acc["id"].(string)
			other := e.create("/v1/"+e.south+"/accounts", `{"company_name":"South Only"}`)

			t.Run("account contacts as stored", func(t *testing.T) {
				blank := e.create(north+"/accounts", `{"company_name":"Blank","email":" ","phone":""}`)
				for _, tc := range []struct {
					name, path   string
					email, phone any
				}{
					{"not given", "/v1/" + e.south + "/accounts/" + other["id"].(string), nil, nil},
					{"empty", north + "/accounts/" + blank["id"].(string), "", ""},
					{"given", north + "/accounts/" + accountID, "ops@acme.test", "+49 40 1234"},
				} {
					status, _, m := e.call(http.MethodGet, tc.path, e.full, "")
					require.Equal(t, 200, status, m)
					got := m["data"].(map[string]any)
					assert.Equal(t, tc.email, got["email"], tc.name)
					assert.Equal(t, tc.phone, got["phone"], tc.name)
				}
				assert.Nil(t, other["email"], "the create's answer")
				status, _, m := e.call(http.MethodGet, "/v1/"+e.south+"/accounts?filter=email:isnull:true", e.full, "")
				require.Equal(t, 200, status, m)
				assert.Len(t, m["data"], 1, "%v", m)
			})

			t.Run("accounts", func(t *testing.T) {
				status, _, m := e.call(http.MethodPatch, north+"/accounts/"+accountID, e.full, `{"status":"blocked","comment":"late"}`)
				require.Equal(t, 200, status, m)
				assert.Equal(t, "blocked", m["data"].(map[string]any)["status"])
				assert.Equal(t, "v1", m["version"])
				status, _, m = e.call(http.MethodGet, "/api/v1/"+e.north+"/accounts/"+accountID, e.full, "")
				require.Equal(t, 200, status, m)
				assert.Equal(t, "late", m["data"].(map[string]any)["comment"])
				for _, q := range []string{
					"filter=company_name:ilike:%25acme%25", "filter=email:eq:ops@acme.test", "filter=phone:like:%2B49%25",
					"filter=account_type:in:customer,carrier", "filter=status:ne:active", "filter=comment:isnull:false",
					"filter=created_at:gte:2026-01-01T10:00:00Z", "filter=id:eq:" + accountID,
					"sort=company_name:asc", "sort=account_type:desc,status:asc", "sort=created_at:desc", "sort=updated_at:asc",
				} {
					status, _, m := e.call(http.MethodGet, north+"/accounts?"+q, e.full, "")
					assert.Equal(t, 200, status, "%s: %v", q, m)
				}
				for _, q := range []string{"sort=comment:asc", "sort=email:asc", "sort=phone:desc", "filter=status:gt:active",
					"filter=organization_id:eq:" + e.org, "filter=branch_id:eq:" + e.north, "sort=branch_id:asc", "filter=comment:isnull:maybe"} {
					status, _, m := e.call(http.MethodGet, north+"/accounts?"+q, e.full, "")
					assert.Equal(t, 400, status, q)
					assert.Equal(t, "invalid_request", m["error"], q)
				}
			})

			newQuotation := func(extra string) map[string]any {
				return e.create(north+"/quotations", fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31"%s}`, accountID, extra))
			}

			t.Run("quotations: fields, numbers and whitelists", func(t *testing.T) {
				q := newQuotation(`,"total_weight_kg":1250.5,"total_volume_m3":3.75,"total_packages":12`)
				assert.Regexp(t, `^Q-\d{4}-\d{6}$`, q["quotation_number"])
				assert.Equal(t, "draft", q["status"], "draft is the default")
				assert.Equal(t, 1250.5, q["total_weight_kg"])
				assert.Equal(t, 3.75, q["total_volume_m3"])
				assert.EqualValues(t, 12, q["total_packages"])
				next := newQuotation("")
				assert.NotEqual(t, q["quotation_number"], next["quotation_number"])

				for _, bad := range []struct{ body, code string }{
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","quotation_number":"Q-1"}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-31","valid_until":"2026-03-01"}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","total_weight_kg":-1}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","total_packages":1.5}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"01.03.2026","valid_until":"2026-03-31"}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","status":"pending"}`, accountID), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","branch_id":%q}`, accountID, e.south), "invalid_create"},
					{fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31"}`, other["id"]), "create_failed"},
					{`{"account_id":"0b000000-0000-4000-8000-000000000000","quotation_date":"2026-03-01","valid_until":"2026-03-31"}`, "create_failed"},
				} {
					status, _, m := e.call(http.MethodPost, north+"/quotations", e.full, bad.body)
					assert.Equal(t, 400, status, bad.body)
					assert.Equal(t, bad.code, m["error"], "%s: %v", bad.body, m)
				}
				path := north + "/quotations/" + q["id"].(string)
				for _, bad := range []string{`{"quotation_number":"Q-9"}`, `{"valid_until":"2026-02-01"}`, `{"organization_id":"` + e.org + `"}`, `{"created_at":"2026-01-01T00:00:00Z"}`, `{"account_id":"` + other["id"].(string) + `"}`} {
					status, _, m := e.call(http.MethodPatch, path, e.full, bad)
					assert.Equal(t, 400, status, bad)
					assert.Equal(t, "invalid_update", m["error"], bad)
				}
				status, _, m := e.call(http.MethodPatch, path, e.full, `{"total_volume_m3":0.125,"valid_until":"2026-04-15"}`)
				require.Equal(t, 200, status, m)
				assert.Equal(t, 0.125, m["data"].(map[string]any)["total_volume_m3"])
				assert.Equal(t, "2026-04-15", m["data"].(map[string]any)["valid_until"])

				for _, f := range []string{"id", "quotation_number", "account_id", "quotation_date", "valid_until", "status", "total_weight_kg", "total_volume_m3", "total_packages", "created_at", "updated_at"} {
					status, _, m := e.call(http.MethodGet, north+"/quotations?sort="+f+":desc&filter="+f+":isnull:false", e.full, "")
					assert.Equal(t, 200, status, "%s: %v", f, m)
				}
			})

			t.Run("quotations: every status move of SPEC section 3", func(t *testing.T) {
				next := map[string][]string{
					"draft": {"sent", "accepted", "rejected", "cancelled"},
					"sent":  {"accepted", "rejected", "expired", "cancelled"},
				}
				states := []string{"draft", "sent", "accepted", "rejected", "expired", "cancelled"}
				reach := map[string][]string{"draft": nil, "sent": {"sent"}, "accepted": {"accepted"}, "rejected": {"rejected"},
					"expired": {"sent", "expired"}, "cancelled": {"cancelled"}}
				for _, from := range states {
					for _, to := range states {
						if from == to {
							continue
						}
						q := newQuotation("")
						path := north + "/quotations/" + q["id"].(string)
						for _, step := range reach[from] {
							status, _, m := e.call(http.MethodPatch, path, e.full, `{"status":"`+step+`"}`)
							require.Equal(t, 200, status, "%s on the way to %s: %v", step, from, m)
						}
						status, _, m := e.call(http.MethodPatch, path, e.full, `{"status":"`+to+`"}`)
						allowed := false
						for _, s := range next[from] {
							allowed = allowed || s == to
						}
						if allowed {
							assert.Equal(t, 200, status, "%s → %s: %v", from, to, m)
						} else {
							assert.Equal(t, 400, status, "%s → %s", from, to)
							assert.Equal(t, "invalid_update", m["error"], "%s → %s", from, to)
						}
					}
				}
			})

			t.Run("paging with a correct total", func(t *testing.T) {
				_, _, all := e.call(http.MethodGet, "/v1/"+e.south+"/accounts", e.full, "")
				before := all["pagination"].(map[string]any)["total"].(float64)
				for i := range 7 {
					e.create("/v1/"+e.south+"/accounts", fmt.Sprintf(`{"company_name":"Page %d","account_type":"carrier"}`, i))
				}
				status, _, m := e.call(http.MethodGet, "/v1/"+e.south+"/accounts?filter=company_name:like:Page%25&sort=company_name:asc&limit=3&offset=3", e.full, "")
				require.Equal(t, 200, status, m)
				page := m["pagination"].(map[string]any)
				assert.NotEmpty(t, page["next_cursor"], "a seventh record follows the page")
				delete(page, "next_cursor")
				assert.Equal(t, map[string]any{"limit": 3.0, "offset": 3.0, "total": 7.0}, page)
				var names []string
				for _, r := range m["data"].([]any) {
					names = append(names, r.(map[string]any)["company_name"].(string))
				}
				assert.Equal(t, []string{"Page 3", "Page 4", "Page 5"}, names)
				_, _, all = e.call(http.MethodGet, "/api/v1/"+e.south+"/accounts?limit=1", e.full, "")
				assert.Equal(t, before+7, all["pagination"].(map[string]any)["total"])
				status, _, m = e.call(http.MethodGet, "/v1/"+e.south+"/accounts?limit=1000", e.full, "")
				assert.Equal(t, 200, status, m)
			})

			t.Run("DELETE returns the deleted record", func(t *testing.T) {
				q := newQuotation("")
				path := north + "/quotations/" + q["id"].(string)
				status, _, m := e.call(http.MethodDelete, path, e.full, "")
				require.Equal(t, 200, status, m)
				assert.Equal(t, q["quotation_number"], m["data"].(map[string]any)["quotation_number"])
				assert.Equal(t, "v1", m["version"])
				status, _, _ = e.call(http.MethodGet, path, e.full, "")
				assert.Equal(t, 404, status)
			})

			t.Run("every error code of the seed's table", func(t *testing.T) {
				qpath := north + "/quotations"
				cases := []struct {
					name, method, path, token, body string
					status                          int
					code                            string
				}{
					{"invalid_request: a filter on an unknown field", "GET", qpath + "?filter=color:eq:red", e.full, "", 400, "invalid_request"},
					{"invalid_request: an unknown parameter", "GET", qpath + "?page=2", e.full, "", 400, "invalid_request"},
					{"invalid_request: a body that is no JSON object", "POST", qpath, e.full, `"x"`, 400, "invalid_request"},
					{"invalid_request: a query string that does not decode", "GET", qpath + "?filter=status:eq:%zz", e.full, "", 400, "invalid_request"},
					{"invalid_create: an unknown field", "POST", qpath, e.full, `{"colour":"red"}`, 400, "invalid_create"},
					{"create_failed: a reference to another branch", "POST", qpath, e.full,
						fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31"}`, other["id"]), 400, "create_failed"},
					{"invalid_update: an unknown field", "PATCH", north + "/accounts/" + accountID, e.full, `{"colour":"red"}`, 400, "invalid_update"},
					{"unauthorized: no token", "GET", qpath, "", "", 401, "unauthorized"},
					{"invalid_token: a forged token", "GET", qpath, e.full[:len(e.full)-4] + "AAAA", "", 401, "invalid_token"},
					{"invalid_token_type: a product user token", "GET", qpath, e.user, "", 403, "invalid_token_type"},
					{"insufficient_scope: no write scope", "POST", qpath, e.narrow, `{}`, 403, "insufficient_scope"},
					{"insufficient_scope: a branch outside the token's", "GET", "/v1/" + e.south + "/quotations", e.narrow, "", 403, "insufficient_scope"},
					{"not_found: an unknown branch", "GET", "/v1/0b000000-0000-4000-8000-000000000000/quotations", e.full, "", 404, "not_found"},
					{"not_found: a record of another branch", "GET", "/v1/" + e.south + "/accounts/" + accountID, e.full, "", 404, "not_found"},
					{"method_not_allowed: a read-only resource", "POST", "/v1/" + e.org + "/branches", e.full, `{}`, 405, "method_not_allowed"},
				}
				for _, tc := range cases {
					t.Run(tc.name, func(t *testing.T) {
						status, header, m := e.call(tc.method, tc.path, tc.token, tc.body)
						assert.Equal(t, tc.status, status, "%v", m)
						assert.Equal(t, tc.code, m["error"])
						assert.NotEmpty(t, m["error_description"])
						if status == 401 || tc.code == "insufficient_scope" {
							// Every challenge names the server's realm.
							assert.True(t, strings.HasPrefix(header.Get("WWW-Authenticate"), `Bearer realm="waybill"`), header.Get("WWW-Authenticate"))
						}
						if status == 405 {
							assert.Equal(t, "GET, HEAD", header.Get("Allow"))
						}
					})
				}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.base+qpath, strings.NewReader(`{"a":"`+strings.Repeat("x", 1<<20)+`"}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+e.full)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				res.Body.Close()
				assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "a body over 1 MiB")
				req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, e.base+qpath, strings.NewReader(`{}`))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+e.full)
				res, err = http.DefaultClient.Do(req)
				require.NoError(t, err)
				res.Body.Close()
				assert.Equal(t, 400, res.StatusCode, "a POST without Content-Type: application/json")
			})

			t.Run("every resource answers its list", func(t *testing.T) {
				for _, r := range resources() {
					scope := e.north
					if r.ScopeType.String() == "organization" {
						scope = e.org
					}
					status, _, m := e.call(http.MethodGet, "/v1/"+scope+"/"+r.Name+"?limit=5", e.full, "")
					assert.Equal(t, 200, status, "%s: %v", r.Name, m)
					assert.Equal(t, "v1", m["version"], r.Name)
				}
			})
		})
	}
}
