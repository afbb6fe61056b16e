package resource_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
)

func TestCRUD(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		base := "/v1/" + a1

		acc := e.mustCreate(t, tok, base+"/accounts", `{"company_name":"Acme <Freight> \"GmbH\"","email":"ops@acme.test","account_type":"customer"}`)
		id := acc["id"].(string)
		assert.Len(t, id, 36)
		assert.Equal(t, "Acme <Freight> \"GmbH\"", acc["company_name"])
		assert.Equal(t, "active", acc["status"], "the hook's default")
		assert.Nil(t, acc["comment"])
		assert.Equal(t, orgA, acc["organization_id"])
		assert.Equal(t, a1, acc["branch_id"])
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, acc["created_at"])

		t.Run("POST envelope and Location", func(t *testing.T) {
			r := e.do(t, http.MethodPost, base+"/accounts", tok, `{"company_name":"Bolt","account_type":"carrier","comment":null}`)
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			assert.Equal(t, "v1", r.body["version"])
			assert.Equal(t, "/v1/"+a1+"/accounts/"+r.data()["id"].(string), r.header.Get("Location"))
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		})

		t.Run("GET by id", func(t *testing.T) {
			r := e.do(t, http.MethodGet, base+"/accounts/"+id, tok, "")
			require.Equal(t, 200, r.status, r.raw)
			assert.Equal(t, acc, r.data())
			assert.Equal(t, "v1", r.body["version"])
			assert.Len(t, r.body, 2)
			upper := e.do(t, http.MethodGet, base+"/accounts/"+strings.ToUpper(id), tok, "")
			assert.Equal(t, 200, upper.status, "ids are matched in lower case")
		})

		t.Run("PATCH", func(t *testing.T) {
			r := e.do(t, http.MethodPatch, base+"/accounts/"+id, tok, `{"status":"blocked","comment":"late payer"}`)
			require.Equal(t, 200, r.status, r.raw)
			assert.Equal(t, "blocked", r.data()["status"])
			assert.Equal(t, "late payer", r.data()["comment"])
			assert.Equal(t, acc["company_name"], r.data()["company_name"])
			assert.Equal(t, acc["created_at"], r.data()["created_at"])
			r = e.do(t, http.MethodPatch, base+"/accounts/"+id, tok, `{"comment":null}`)
			require.Equal(t, 200, r.status, r.raw)
			assert.Nil(t, r.data()["comment"])
			r = e.do(t, http.MethodPatch, base+"/accounts/"+id, tok, `{}`)
			assert.Equal(t, 200, r.status, "an empty PATCH changes nothing")
		})

		t.Run("DELETE returns the deleted record", func(t *testing.T) {
			victim := e.mustCreate(t, tok, base+"/accounts", `{"company_name":"Gone","account_type":"carrier"}`)
			r := e.do(t, http.MethodDelete, base+"/accounts/"+victim["id"].(string), tok, "")
			require.Equal(t, 200, r.status, r.raw)
			assert.Equal(t, victim, r.data())
			assert.Equal(t, 404, e.do(t, http.MethodGet, base+"/accounts/"+victim["id"].(string), tok, "").status)
			assert.Equal(t, 404, e.do(t, http.MethodDelete, base+"/accounts/"+victim["id"].(string), tok, "").status)
		})

		t.Run("the /api/v1 alias", func(t *testing.T) {
			r := e.do(t, http.MethodGet, "/api/v1/"+a1+"/accounts/"+id, tok, "")
			assert.Equal(t, 200, r.status)
			r = e.do(t, http.MethodPost, "/api/v1/"+a1+"/accounts", tok, `{"company_name":"Alias","account_type":"carrier"}`)
			require.Equal(t, 201, r.status)
			assert.True(t, strings.HasPrefix(r.header.Get("Location"), "/api/v1/"+a1+"/accounts/"))
		})

		t.Run("quotations: references, status flow, numbers", func(t *testing.T) {
			q := e.mustCreate(t, tok, base+"/quotations", fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","total_weight_kg":12.5,"total_packages":3}`, id))
			assert.Equal(t, "draft", q["status"])
			assert.Equal(t, "2026-03-01", q["quotation_date"])
			assert.Equal(t, 12.5, q["total_weight_kg"])
			assert.EqualValues(t, 3, q["total_packages"])
			assert.Equal(t, "Q-0A00", q["quotation_number"])
			qid := q["id"].(string)
			path := base + "/quotations/" + qid

			moves := []struct {
				body   string
				status int
			}{
				{`{"status":"sent"}`, 200},
				{`{"status":"draft"}`, 400},
				{`{"status":"sent"}`, 200},
				{`{"status":"accepted"}`, 200},
				{`{"status":"cancelled"}`, 400},
			}
			for _, m := range moves {
				r := e.do(t, http.MethodPatch, path, tok, m.body)
				assert.Equal(t, m.status, r.status, "%s: %s", m.body, r.raw)
				if m.status == 400 {
					assert.Equal(t, "invalid_update", r.code())
				}
			}

			r := e.do(t, http.MethodPost, base+"/quotations", tok, fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","status":"expired"}`, id))
			assert.Equal(t, "invalid_create", r.code(), "a new quotation cannot start expired")

			r = e.do(t, http.MethodPost, base+"/quotations", tok, fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-31","valid_until":"2026-03-01"}`, id))
			assert.Equal(t, "create_failed", r.code(), "the database's CHECK refuses valid_until before quotation_date: %s", r.raw)

			other := e.mustCreate(t, tok, "/v1/"+a2+"/accounts", `{"company_name":"A2 only","account_type":"customer"}`)
			r = e.do(t, http.MethodPost, base+"/quotations", tok, fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31"}`, other["id"]))
			assert.Equal(t, 400, r.status)
			assert.Equal(t, "create_failed", r.code(), "an account of another branch")
			assert.Contains(t, r.body["error_description"], "account_id")
			r = e.do(t, http.MethodPatch, path, tok, fmt.Sprintf(`{"account_id":%q}`, other["id"]))
			assert.Equal(t, "invalid_update", r.code())

			r = e.do(t, http.MethodDelete, base+"/accounts/"+id, tok, "")
			assert.Equal(t, http.StatusConflict, r.status, r.raw)
			assert.Equal(t, "conflict", r.code())
		})

		t.Run("organization-scoped resource", func(t *testing.T) {
			v := e.mustCreate(t, tok, "/v1/"+orgA+"/vehicles", `{"plate":"B-AB 123","active":true}`)
			assert.Equal(t, true, v["active"])
			assert.NotContains(t, v, "branch_id")
			r := e.do(t, http.MethodPost, "/v1/"+orgA+"/vehicles", tok, `{"plate":"B-AB 123","active":false}`)
			assert.Equal(t, "create_failed", r.code(), "a duplicate plate")
			r = e.do(t, http.MethodGet, "/v1/"+a1+"/vehicles", tok, "")
			assert.Equal(t, 404, r.status, "a branch id where the organization is expected")
		})
	})
}

func TestBodyErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		base := "/v1/" + a1
		acc := e.mustCreate(t, tok, base+"/accounts", `{"company_name":"Acme","account_type":"customer"}`)
		item := base + "/accounts/" + acc["id"].(string)

		cases := []struct {
			name, method, path, body string
			status                   int
			code, says               string
		}{
			{"unknown field on POST", "POST", base + "/accounts", `{"company_name":"x","account_type":"customer","fax":"1"}`, 400, "invalid_create", "unknown field"},
			{"organization_id on POST", "POST", base + "/accounts", `{"company_name":"x","account_type":"customer","organization_id":"` + orgB + `"}`, 400, "invalid_create", "set by the server"},
			{"branch_id on POST", "POST", base + "/accounts", `{"company_name":"x","account_type":"customer","branch_id":"` + a2 + `"}`, 400, "invalid_create", "set by the server"},
			{"id on POST", "POST", base + "/accounts", `{"id":"` + a2 + `","company_name":"x","account_type":"customer"}`, 400, "invalid_create", "id cannot be set"},
			{"missing required", "POST", base + "/accounts", `{"account_type":"customer"}`, 400, "invalid_create", "company_name is required"},
			{"several missing required", "POST", base + "/quotations", `{"total_packages":1}`, 400, "invalid_create", "account_id, quotation_date and valid_until are required"},
			{"required set to null", "POST", base + "/accounts", `{"company_name":null,"account_type":"customer"}`, 400, "invalid_create", "may not be null"},
			{"wrong JSON type", "POST", base + "/accounts", `{"company_name":5,"account_type":"customer"}`, 400, "invalid_create", "company_name: 5 is a number, not a string"},
			{"unknown enum value", "POST", base + "/accounts", `{"company_name":"x","account_type":"shipper"}`, 400, "invalid_create", "is not one of customer, carrier"},
			{"too long", "POST", base + "/accounts", `{"company_name":"` + strings.Repeat("x", 201) + `","account_type":"customer"}`, 400, "invalid_create", "longer than 200"},
			{"NUL in a string", "POST", base + "/accounts", `{"company_name":"a\u0000b","account_type":"customer"}`, 400, "invalid_create", "NUL"},
			{"negative number", "POST", base + "/quotations", `{"account_id":"` + acc["id"].(string) + `","quotation_date":"2026-01-01","valid_until":"2026-01-02","total_weight_kg":-1}`, 400, "invalid_create", "at least 0"},
			{"fractional integer", "POST", base + "/quotations", `{"account_id":"` + acc["id"].(string) + `","quotation_date":"2026-01-01","valid_until":"2026-01-02","total_packages":1.5}`, 400, "invalid_create", "total_packages: 1.5 is not an integer"},
			{"number as a string", "POST", base + "/quotations", `{"account_id":"` + acc["id"].(string) + `","quotation_date":"2026-01-01","valid_until":"2026-01-02","total_weight_kg":"5"}`, 400, "invalid_create", `total_weight_kg: "5" is a string, not a number`},
			{"bad date", "POST", base + "/quotations", `{"account_id":"` + acc["id"].(string) + `","quotation_date":"2026-02-30","valid_until":"2026-03-02"}`, 400, "invalid_create", "is not a date"},
			{"bad uuid", "POST", base + "/quotations", `{"account_id":"nope","quotation_date":"2026-01-01","valid_until":"2026-01-02"}`, 400, "invalid_create", "is not a UUID"},
			{"number too large for the column", "POST", base + "/quotations", `{"account_id":"` + acc["id"].(string) + `","quotation_date":"2026-01-01","valid_until":"2026-01-02","total_weight_kg":1e300}`, 0, "", ""},
			{"a generated field on PATCH", "PATCH", base + "/quotations/" + acc["id"].(string), `{"quotation_number":"Q-1"}`, 400, "invalid_update", "cannot be changed"},
			{"unknown field on PATCH", "PATCH", item, `{"fax":"1"}`, 400, "invalid_update", "unknown field"},
			{"branch_id on PATCH", "PATCH", item, `{"branch_id":"` + a2 + `"}`, 400, "invalid_update", "set by the server"},
			{"wrong type on PATCH", "PATCH", item, `{"status":true}`, 400, "invalid_update", "status: true is a boolean, not a string"},
			{"not an object", "POST", base + "/accounts", `"company_name"`, 400, "invalid_request", "one JSON object"},
			{"not JSON", "POST", base + "/accounts", `company_name=x`, 400, "invalid_request", "one JSON object"},
			{"trailing data", "POST", base + "/accounts", `{"company_name":"x","account_type":"customer"} {}`, 400, "invalid_request", "one JSON object"},
			{"a member twice", "POST", base + "/accounts", `{"company_name":"x","company_name":"y","account_type":"customer"}`, 400, "invalid_request", "twice"},
			{"empty body", "POST", base + "/accounts", ``, 400, "invalid_request", "Content-Type"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(t, tc.method, tc.path, tok, tc.body)
				if tc.status == 0 {
					// numeric(14,3) cannot hold 1e300: PostgreSQL refuses the
					// write as the client's; SQLite's REAL column stores it.
					if e.dialect == query.Postgres {
						assert.Equal(t, 400, r.status, r.raw)
						assert.Equal(t, "create_failed", r.code())
					} else {
						assert.Equal(t, 201, r.status, r.raw)
					}
					return
				}
				assert.Equal(t, tc.status, r.status, r.raw)
				assert.Equal(t, tc.code, r.code())
				assert.Contains(t, r.body["error_description"], tc.says)
			})
		}

		t.Run("no Content-Type", func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.http.URL+base+"/accounts", strings.NewReader(`{"company_name":"x","account_type":"customer"}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
			r := send(t, req)
			assert.Equal(t, 400, r.status)
			assert.Equal(t, "invalid_request", r.code())
		})
		t.Run("a body over 1 MiB", func(t *testing.T) {
			big := `{"company_name":"` + strings.Repeat("x", 1<<20) + `","account_type":"customer"}`
			r := e.do(t, http.MethodPost, base+"/accounts", tok, big)
			assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
			assert.Equal(t, "payload_too_large", r.code())
		})
		t.Run("nothing was written", func(t *testing.T) {
			r := e.do(t, http.MethodGet, base+"/accounts", tok, "")
			assert.EqualValues(t, 1, r.body["pagination"].(map[string]any)["total"])
		})
	})
}

func TestListing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		base := "/v1/" + a1
		for i := range 23 {
			kind := "customer"
			if i%3 == 0 {
				kind = "carrier"
			}
			e.mustCreate(t, tok, base+"/accounts", fmt.Sprintf(`{"company_name":"Firm %02d","account_type":%q}`, i, kind))
		}
		e.mustCreate(t, tok, "/v1/"+a2+"/accounts", `{"company_name":"Elsewhere","account_type":"carrier"}`)

		r := e.do(t, http.MethodGet, base+"/accounts", tok, "")
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, map[string]any{"limit": 50.0, "offset": 0.0, "total": 23.0, "next_cursor": nil}, r.body["pagination"], "the last page has no next cursor")
		assert.Empty(t, r.header.Get("Link"))
		assert.Equal(t, "v1", r.body["version"])
		assert.Len(t, r.list(), 23)

		r = e.do(t, http.MethodGet, base+"/accounts?filter=account_type:eq:carrier&sort=company_name:desc&limit=3&offset=2", tok, "")
		require.Equal(t, 200, r.status, r.raw)
		page := r.body["pagination"].(map[string]any)
		assert.NotEmpty(t, page["next_cursor"], "a page with more after it has a cursor")
		delete(page, "next_cursor")
		assert.Equal(t, map[string]any{"limit": 3.0, "offset": 2.0, "total": 8.0}, page)
		var names []string
		for _, rec := range r.list() {
			names = append(names, rec.(map[string]any)["company_name"].(string))
		}
		assert.Equal(t, []string{"Firm 15", "Firm 12", "Firm 09"}, names)

		r = e.do(t, http.MethodGet, "/api/v1/"+a1+"/accounts?filter=company_name:ilike:firm%20%25&limit=1", tok, "")
		assert.EqualValues(t, 23, r.body["pagination"].(map[string]any)["total"])

		for _, bad := range []string{
			"filter=organization_id:eq:" + orgA,
			"filter=branch_id:eq:" + a1,
			"sort=branch_id:asc",
			"filter=email:gt:x",
			"sort=email:asc",
			"limit=0", "limit=1001", "offset=-1", "page=2", "filter=status:eq:gone", "filter=company_name:like:50%",
		} {
			r := e.do(t, http.MethodGet, base+"/accounts?"+bad, tok, "")
			assert.Equal(t, 400, r.status, bad)
			assert.Equal(t, "invalid_request", r.code(), bad)
		}
	})
}

func TestMethodsAndReadOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		r := e.do(t, http.MethodGet, "/v1/"+orgA+"/branches", tok, "")
		require.Equal(t, 200, r.status, r.raw)
		assert.EqualValues(t, 2, r.body["pagination"].(map[string]any)["total"])
		for _, m := range []struct{ method, path, allow string }{
			{"POST", "/v1/" + orgA + "/branches", "GET, HEAD"},
			{"PATCH", "/v1/" + orgA + "/branches/" + a1, "GET, HEAD"},
			{"DELETE", "/api/v1/" + orgA + "/branches/" + a1, "GET, HEAD"},
			{"PUT", "/v1/" + a1 + "/accounts", "GET, HEAD, POST, PATCH"},
			{"PUT", "/v1/" + a1 + "/accounts/" + a1, "GET, HEAD, PATCH, DELETE"},
			{"POST", "/v1/" + a1 + "/accounts/" + a1, "GET, HEAD, PATCH, DELETE"},
		} {
			r := e.do(t, m.method, m.path, tok, `{}`)
			assert.Equal(t, http.StatusMethodNotAllowed, r.status, m.method+" "+m.path)
			assert.Equal(t, "method_not_allowed", r.code())
			assert.Equal(t, m.allow, r.header.Get("Allow"))
		}
	})
}

func TestAuthAndTenancy(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		acc := e.mustCreate(t, tok, "/v1/"+a1+"/accounts", `{"company_name":"Acme","account_type":"customer"}`)
		accB := e.mustCreate(t, e.codeToken(t, orgB, allScopes...), "/v1/"+b1+"/accounts", `{"company_name":"Other tenant","account_type":"customer"}`)
		list := "/v1/" + a1 + "/accounts"

		cases := []struct {
			name, method, path, token, body string
			status                          int
			code                            string
		}{
			{"no token", "GET", list, "", "", 401, "unauthorized"},
			{"garbage token", "GET", list, "not-a-jwt", "", 401, "invalid_token"},
			{"product user token", "GET", list, e.userToken(t), "", 403, "invalid_token_type"},
			{"no read scope", "GET", list, e.codeToken(t, orgA, "svc:accounts:write"), "", 403, "insufficient_scope"},
			{"write does not imply read", "GET", list + "/" + acc["id"].(string), e.codeToken(t, orgA, "svc:accounts:write"), "", 403, "insufficient_scope"},
			{"no write scope", "POST", list, e.codeToken(t, orgA, "svc:accounts:read"), `{"company_name":"x","account_type":"customer"}`, 403, "insufficient_scope"},
			{"no write scope on DELETE", "DELETE", list + "/" + acc["id"].(string), e.codeToken(t, orgA, "svc:accounts:read"), "", 403, "insufficient_scope"},
			{"scope id not a UUID", "GET", "/v1/nope/accounts", tok, "", 404, "not_found"},
			{"unknown branch", "GET", "/v1/0a000000-0000-4000-8000-0000000000ff/accounts", tok, "", 404, "not_found"},
			{"another organization's branch", "GET", "/v1/" + b1 + "/accounts", tok, "", 404, "not_found"},
			{"another organization as scope", "GET", "/v1/" + orgB + "/vehicles", tok, "", 404, "not_found"},
			{"a record of another tenant", "GET", "/v1/" + a1 + "/accounts/" + accB["id"].(string), tok, "", 404, "not_found"},
			{"PATCH a record of another tenant", "PATCH", "/v1/" + a1 + "/accounts/" + accB["id"].(string), tok, `{"comment":"x"}`, 404, "not_found"},
			{"DELETE a record of another branch", "DELETE", "/v1/" + a2 + "/accounts/" + acc["id"].(string), tok, "", 404, "not_found"},
			{"record id not a UUID", "GET", list + "/42", tok, "", 404, "not_found"},
			{"client credentials outside its branches", "GET", "/v1/" + a2 + "/accounts", e.ccToken(t, orgA, []string{a1}, allScopes...), "", 403, "insufficient_scope"},
			{"client credentials in its branch", "GET", list, e.ccToken(t, orgA, []string{a1}, allScopes...), "", 200, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(t, tc.method, tc.path, tc.token, tc.body)
				assert.Equal(t, tc.status, r.status, r.raw)
				assert.Equal(t, tc.code, r.code())
				if tc.status == 401 || tc.code == "insufficient_scope" {
					assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), r.header.Get("WWW-Authenticate"))
				}
			})
		}
		r := e.do(t, http.MethodGet, "/v1/"+b1+"/accounts/"+accB["id"].(string), e.codeToken(t, orgB, allScopes...), "")
		assert.Equal(t, "Other tenant", r.data()["company_name"], "the other tenant's record is untouched")
	})
}

func TestBranchOrNull(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, allScopes...)
		narrow := e.ccToken(t, orgA, []string{a1}, allScopes...)
		wide := e.ccToken(t, orgA, []string{a1, a2}, allScopes...)

		// An organization-wide zone (branch_id NULL) and one per branch.
		_, err := e.db.Exec("INSERT INTO zones (id, organization_id, branch_id, created_at, updated_at, name) VALUES ($1, $2, NULL, $3, $3, 'Everywhere')",
			"0a000000-0000-4000-8000-0000000000e0", orgA, e.dialect.Timestamp(fixedTime))
		require.NoError(t, err)
		orgWide := "0a000000-0000-4000-8000-0000000000e0"
		z1 := e.mustCreate(t, tok, "/v1/"+a1+"/zones", `{"name":"North"}`)
		assert.Equal(t, a1, z1["branch_id"], "created through a branch path: that branch")
		e.mustCreate(t, tok, "/v1/"+a2+"/zones", `{"name":"South"}`)

		names := func(branch, token string) []string {
			r := e.do(t, http.MethodGet, "/v1/"+branch+"/zones?sort=name:asc", token, "")
			require.Equal(t, 200, r.status, r.raw)
			var out []string
			for _, rec := range r.list() {
				out = append(out, rec.(map[string]any)["name"].(string))
			}
			return out
		}
		assert.Equal(t, []string{"Everywhere", "North"}, names(a1, tok))
		assert.Equal(t, []string{"Everywhere", "South"}, names(a2, tok))

		r := e.do(t, http.MethodGet, "/v1/"+a1+"/zones/"+orgWide, narrow, "")
		require.Equal(t, 200, r.status)
		assert.Nil(t, r.data()["branch_id"])

		r = e.do(t, http.MethodPatch, "/v1/"+a1+"/zones/"+orgWide, narrow, `{"name":"Mine"}`)
		assert.Equal(t, 403, r.status, "a branch-restricted token never changes what other branches see")
		assert.Equal(t, "insufficient_scope", r.code())
		r = e.do(t, http.MethodDelete, "/v1/"+a1+"/zones/"+orgWide, narrow, "")
		assert.Equal(t, 403, r.status)
		r = e.do(t, http.MethodPatch, "/v1/"+a1+"/zones/"+z1["id"].(string), narrow, `{"name":"North 2"}`)
		assert.Equal(t, 200, r.status, "its own branch's record")

		r = e.do(t, http.MethodPatch, "/v1/"+a1+"/zones/"+orgWide, wide, `{"name":"Everywhere 2"}`)
		assert.Equal(t, 200, r.status, "a token of every branch: %s", r.raw)
		assert.Nil(t, r.data()["branch_id"], "it stays organization-wide")
		r = e.do(t, http.MethodPatch, "/v1/"+a2+"/zones/"+orgWide, tok, `{"name":"Everywhere 3"}`)
		assert.Equal(t, 200, r.status, "an authorization-code token sees every branch")
		r = e.do(t, http.MethodDelete, "/v1/"+a1+"/zones/"+orgWide, tok, "")
		assert.Equal(t, 200, r.status)
		assert.Equal(t, []string{"North 2"}, names(a1, tok))
	})
}

// Organization-scoped records are every branch's: a client-credentials
// token that leaves out a branch may read them but not create, change or
// delete them.
func TestOrganizationScopedWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		narrow := e.ccToken(t, orgA, []string{a1}, allScopes...)
		wide := e.ccToken(t, orgA, []string{a1, a2}, allScopes...)
		base := "/v1/" + orgA + "/vehicles"
		truck := e.mustCreate(t, wide, base, `{"plate":"M-1","active":true}`)
		item := base + "/" + truck["id"].(string)

		cases := []struct {
			name, method, path, token, body string
			status                          int
			code                            string
		}{
			{"narrow create", http.MethodPost, base, narrow, `{"plate":"M-2","active":true}`, 403, "insufficient_scope"},
			{"narrow create, bad body", http.MethodPost, base, narrow, `{"fax":1}`, 403, "insufficient_scope"},
			{"narrow update", http.MethodPatch, item, narrow, `{"active":false}`, 403, "insufficient_scope"},
			{"narrow update, bad body", http.MethodPatch, item, narrow, `{"fax":1}`, 403, "insufficient_scope"},
			{"narrow delete", http.MethodDelete, item, narrow, "", 403, "insufficient_scope"},
			{"narrow update of no record", http.MethodPatch, base + "/" + a2, narrow, `{"active":false}`, 403, "insufficient_scope"},
			{"narrow list", http.MethodGet, base, narrow, "", 200, ""},
			{"narrow get", http.MethodGet, item, narrow, "", 200, ""},
			{"wide update", http.MethodPatch, item, wide, `{"active":false}`, 200, ""},
			{"code token update", http.MethodPatch, item, e.codeToken(t, orgA, allScopes...), `{"plate":"M-3"}`, 200, ""},
			{"wide delete", http.MethodDelete, item, wide, "", 200, ""},
		}
		for _, tc := range cases {
			r := e.do(t, tc.method, tc.path, tc.token, tc.body)
			assert.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
			assert.Equal(t, tc.code, r.code(), tc.name)
			if tc.status == 403 {
				assert.Contains(t, r.body["error_description"], "covers every branch", tc.name)
				assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), tc.name)
			}
		}
	})
}
