package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/password"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// isoTenant is one organization of the isolation test with its branches.
type isoTenant struct {
	org      string
	branches []string
}

// seedTenant writes an organization with two branches and demo records of
// every resource, as the demo seed does, without its marker or user.
func seedTenant(t *testing.T, db *sql.DB, d query.Dialect, name string, seed uint64) isoTenant {
	t.Helper()
	ctx := context.Background()
	g := newDemoGenerator(d, time.Now().UTC())
	g.rnd = rand.New(rand.NewPCG(seed, seed))
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	w := &demoWriter{ctx: ctx, tx: tx}
	org := newID()
	w.insert("organizations", "id, name, created_at", org, name, g.ts(g.now))
	north := &demoBranch{id: newID(), name: "North", city: "Hamburg"}
	south := &demoBranch{id: newID(), name: "South", city: "Munich"}
	for _, b := range []*demoBranch{north, south} {
		w.insert("branches", "id, organization_id, name, created_at", b.id, org, b.name, g.ts(g.now))
	}
	require.NoError(t, w.err)
	require.NoError(t, seedMasterData(ctx, tx, org))
	require.NoError(t, insertUser(ctx, tx, newID(), strings.ToLower(name)+"@iso.test", password.DummyHash, []string{org}, false))
	g.records(w, org, north, south)
	require.NoError(t, w.err)
	require.NoError(t, tx.Commit())
	return isoTenant{org: org, branches: []string{north.id, south.id}}
}

// isoRecord is where a record lives.
type isoRecord struct {
	id, org string
	branch  *string // nil: organization-scoped, or organization-wide
}

// snapshot returns every record of every resource with its updated_at, by
// resource.
func snapshot(t *testing.T, db *sql.DB, api *resource.Registry) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, r := range api.Resources() {
		table := r.Table
		if table == "" {
			table = r.Name
		}
		rows, err := db.Query("SELECT id, updated_at FROM " + table)
		require.NoError(t, err)
		out[r.Name] = map[string]string{}
		for rows.Next() {
			var id string
			var updated any
			require.NoError(t, rows.Scan(&id, &updated))
			out[r.Name][id] = fmt.Sprint(updated)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}

// records returns where every record of a resource lives.
func records(t *testing.T, db *sql.DB, r *resource.Resource) []isoRecord {
	t.Helper()
	table := r.Table
	if table == "" {
		table = r.Name
	}
	branch := "NULL"
	if r.ScopeType != tenancy.Organization {
		branch = "branch_id"
	}
	rows, err := db.Query("SELECT id, organization_id, " + branch + " FROM " + table)
	require.NoError(t, err)
	defer rows.Close()
	var out []isoRecord
	for rows.Next() {
		var rec isoRecord
		var b sql.NullString
		require.NoError(t, rows.Scan(&rec.id, &rec.org, &b))
		if b.Valid {
			rec.branch = &b.String
		}
		out = append(out, rec)
	}
	require.NoError(t, rows.Err())
	return out
}

// isoToken is a token of the test with what it may do.
type isoToken struct {
	raw      string
	org      string
	branches []string // nil: an authorization-code token, every branch
	scopes   []string
}

func (k isoToken) mayUse(branch string) bool {
	return k.branches == nil || slices.Contains(k.branches, branch)
}

// coversAll reports whether the token may use every one of branches, as
// writes of organization-wide data need.
func (k isoToken) coversAll(branches []string) bool {
	for _, b := range branches {
		if !k.mayUse(b) {
			return false
		}
	}
	return true
}

// TestTenantIsolation is a property test: several organizations and
// branches, tokens of both grant types with random scopes and branch sets,
// random calls over every resource and method. Not one response may carry
// or change another tenant's record, and every refusal must carry the code
// SPEC section 2 gives it.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rnd := rand.New(rand.NewPCG(seed, 42))

			ctx := context.Background()
			db, dialect, _, err := openAndMigrate(ctx, b.url(t), defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			tenants := []isoTenant{seedTenant(t, db, dialect, "Alpha", seed), seedTenant(t, db, dialect, "Beta", seed+1)}

			store := newOAuthStore(db, dialect)
			key, err := store.SigningKey(ctx)
			require.NoError(t, err)
			keys, err := bearer.NewKeySet(key)
			require.NoError(t, err)
			const issuer = "https://iso.test"
			verifier := &bearer.Verifier{Keys: keys, Issuer: issuer}
			api, err := newAPI(db, dialect, verifier, testLogger(t))
			require.NoError(t, err)
			srv := httptest.NewServer(newHandler(db, newOAuthServer(db, store, keys, issuer, testLogger(t)), api))
			t.Cleanup(srv.Close)

			var allScopes []string
			for _, r := range api.Resources() {
				allScopes = append(allScopes, r.ReadScope(), r.WriteScope())
			}
			newToken := func() isoToken {
				ten := tenants[rnd.IntN(len(tenants))]
				k := isoToken{org: ten.org}
				for _, s := range allScopes {
					if rnd.IntN(10) < 7 {
						k.scopes = append(k.scopes, s)
					}
				}
				now := time.Now()
				c := &bearer.Claims{Issuer: issuer, Subject: newID(), Audience: bearer.Audience, Role: bearer.Role,
					IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: newID(),
					OrganizationID: ten.org, ClientID: "client", Scopes: k.scopes}
				if rnd.IntN(2) == 0 { // client credentials with a random set of branches
					k.branches = []string{}
					for _, br := range ten.branches {
						if rnd.IntN(2) == 0 {
							k.branches = append(k.branches, br)
						}
					}
					c.BranchIDs, c.AppName = k.branches, "iso"
				}
				k.raw, err = keys.Sign(c)
				require.NoError(t, err)
				return k
			}

			where := map[string]map[string]isoRecord{} // resource → id → record
			for _, r := range api.Resources() {
				where[r.Name] = map[string]isoRecord{}
				for _, rec := range records(t, db, r) {
					where[r.Name][rec.id] = rec
				}
				require.NotEmpty(t, where[r.Name], "no %s seeded", r.Name)
			}
			branchOrg := map[string]string{}
			var scopeIDs []string
			for _, ten := range tenants {
				scopeIDs = append(scopeIDs, ten.org)
				for _, br := range ten.branches {
					branchOrg[br] = ten.org
					scopeIDs = append(scopeIDs, br)
				}
			}
			scopeIDs = append(scopeIDs, newID(), "not-a-uuid")

			before := snapshot(t, db, api)
			deleted := map[string]bool{}
			changedBy := map[string]bool{} // records a successful write may have touched

			const calls = 700
			counts := map[int]int{}
			for i := range calls {
				k := newToken()
				r := api.Resources()[rnd.IntN(len(api.Resources()))]
				// Half the calls aim at the token's own tenant, so that the
				// allowed paths are covered as well as the refusals.
				own := rnd.IntN(2) == 0
				scopeID := scopeIDs[rnd.IntN(len(scopeIDs))]
				if own {
					if r.ScopeType == tenancy.Organization {
						scopeID = k.org
					} else {
						mine := tenantOf(tenants, k.org).branches
						scopeID = mine[rnd.IntN(len(mine))]
					}
				}
				method := []string{"LIST", "GET", "PATCH", "DELETE", "POST"}[rnd.IntN(5)]
				ids := make([]string, 0, len(where[r.Name]))
				for id, rec := range where[r.Name] {
					if !own || rec.org == k.org {
						ids = append(ids, id)
					}
				}
				slices.Sort(ids)
				id := newID()
				if rnd.IntN(10) > 0 && len(ids) > 0 {
					id = ids[rnd.IntN(len(ids))]
				}

				path := "/v1/" + scopeID + "/" + r.Name
				if rnd.IntN(2) == 0 {
					path = "/api" + path
				}
				httpMethod, body := method, ""
				switch method {
				case "LIST":
					httpMethod = http.MethodGet
				case "GET", "DELETE":
					path += "/" + id
				case "PATCH":
					path += "/" + id
					body = "{}"
				case "POST":
					body = "{}"
				}
				status, got := isoDo(t, srv.URL+path, httpMethod, k.raw, body)
				counts[status]++
				call := fmt.Sprintf("call %d: %s %s (token of %s, branches %v)", i, httpMethod, path, k.org, k.branches)

				// The oracle: what SPEC section 2 says the answer is.
				want, code := 0, ""
				need := r.WriteScope()
				if method == "LIST" || method == "GET" {
					need = r.ReadScope()
				}
				orgOK, branch := false, ""
				switch r.ScopeType {
				case tenancy.Organization:
					orgOK = scopeID == k.org
				default:
					orgOK = branchOrg[scopeID] == k.org && branchOrg[scopeID] != ""
					branch = scopeID
				}
				rec, exists := where[r.Name][id]
				visible := exists && !deleted[id] && rec.org == k.org &&
					(r.ScopeType == tenancy.Organization ||
						(rec.branch != nil && *rec.branch == branch) ||
						(r.ScopeType == tenancy.BranchOrNull && rec.branch == nil))
				switch {
				case r.ReadOnly && method != "LIST" && method != "GET":
					want, code = 405, "method_not_allowed"
				case !slices.Contains(k.scopes, need):
					want, code = 403, "insufficient_scope"
				case !orgOK:
					want, code = 404, "not_found"
				case branch != "" && !k.mayUse(branch):
					want, code = 403, "insufficient_scope"
				case method != "LIST" && method != "GET" && r.ScopeType == tenancy.Organization && !k.coversAll(tenantOf(tenants, k.org).branches):
					// Organization-wide data: written only by a token of
					// every branch, whether the record exists or not.
					want, code = 403, "insufficient_scope"
				case method == "LIST" || method == "POST":
				case !visible:
					want, code = 404, "not_found"
				case (method == "PATCH" || method == "DELETE") && r.ScopeType == tenancy.BranchOrNull && rec.branch == nil &&
					!k.coversAll(tenantOf(tenants, k.org).branches):
					want, code = 403, "insufficient_scope"
				}

				if want != 0 {
					assert.Equal(t, want, status, call)
					assert.Equal(t, code, got["error"], call)
					continue
				}
				switch method {
				case "LIST":
					require.Equal(t, 200, status, "%s: %v", call, got)
					var n int
					for _, item := range got["data"].([]any) {
						n++
						isoOwn(t, call, item.(map[string]any), k.org, r, branch)
					}
					total := 0
					for rid, rec := range where[r.Name] {
						if !deleted[rid] && rec.org == k.org && (r.ScopeType == tenancy.Organization ||
							(rec.branch != nil && *rec.branch == branch) || (r.ScopeType == tenancy.BranchOrNull && rec.branch == nil)) {
							total++
						}
					}
					assert.EqualValues(t, total, got["pagination"].(map[string]any)["total"], call)
				case "GET", "PATCH":
					require.Equal(t, 200, status, "%s: %v", call, got)
					isoOwn(t, call, got["data"].(map[string]any), k.org, r, branch)
					assert.Equal(t, id, got["data"].(map[string]any)["id"], call)
				case "DELETE":
					switch status {
					case 200:
						isoOwn(t, call, got["data"].(map[string]any), k.org, r, branch)
						deleted[id] = true
						changedBy[id] = true
					case 409:
						assert.Equal(t, "conflict", got["error"], call)
					case 400:
						assert.Equal(t, "invalid_request", got["error"], call)
					default:
						t.Errorf("%s: status %d %v", call, status, got)
					}
				case "POST":
					switch status {
					case 201:
						created := got["data"].(map[string]any)
						isoOwn(t, call, created, k.org, r, branch)
						rec := isoRecord{id: created["id"].(string), org: k.org}
						if b, ok := created["branch_id"].(string); ok {
							rec.branch = &b
						}
						where[r.Name][rec.id] = rec
					case 400:
						assert.Equal(t, "invalid_create", got["error"], call)
					default:
						t.Errorf("%s: status %d %v", call, status, got)
					}
				}
			}
			t.Logf("statuses of %d calls: %v", calls, counts)
			for _, s := range []int{200, 403, 404} {
				assert.Positive(t, counts[s], "no call answered %d: the random calls do not cover the rules", s)
			}

			// Nothing changed but what the allowed calls changed.
			after := snapshot(t, db, api)
			for name, rows := range before {
				for id, updated := range rows {
					now, ok := after[name][id]
					switch {
					case !ok:
						assert.True(t, changedBy[id], "%s %s vanished without an allowed DELETE", name, id)
					case now != updated:
						t.Errorf("%s %s changed (updated_at %s → %s) though no call could change it", name, id, updated, now)
					}
				}
			}
		})
	}
}

func tenantOf(tenants []isoTenant, org string) isoTenant {
	for _, t := range tenants {
		if t.org == org {
			return t
		}
	}
	return isoTenant{}
}

// isoOwn checks that a record in a response is the token's tenant's.
func isoOwn(t *testing.T, call string, rec map[string]any, org string, r *resource.Resource, branch string) {
	t.Helper()
	assert.Equal(t, org, rec["organization_id"], "%s: a record of another organization", call)
	switch r.ScopeType {
	case tenancy.Branch:
		assert.Equal(t, branch, rec["branch_id"], "%s: a record of another branch", call)
	case tenancy.BranchOrNull:
		if rec["branch_id"] != nil {
			assert.Equal(t, branch, rec["branch_id"], "%s: a record of another branch", call)
		}
	}
}

func isoDo(t *testing.T, url, method, token, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var got map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	return res.StatusCode, got
}
