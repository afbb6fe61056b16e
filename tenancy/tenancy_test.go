package tenancy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
)

const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
)

// branchMap is a tenancy.Branches of fixed branches: the branch table a
// host application would query.
type branchMap map[string]string // branch → organization

func (m branchMap) Organization(_ context.Context, id string) (string, error) {
	if org, ok := m[id]; ok {
		return org, nil
	}
	return "", tenancy.ErrNoBranch
}

func (m branchMap) List(_ context.Context, org string) ([]string, error) {
	var ids []string
	for b, o := range m {
		if o == org {
			ids = append(ids, b)
		}
	}
	return ids, nil
}

var branches = branchMap{a1: orgA, a2: orgA, b1: orgB}

type signer struct{ keys *bearer.KeySet }

func newSigner(t *testing.T) signer {
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k", Secret: []byte(strings.Repeat("k", 32))})
	require.NoError(t, err)
	return signer{keys}
}

func (s signer) sign(t *testing.T, c bearer.Claims) string {
	now := time.Now()
	c.Issuer, c.Audience, c.Role, c.IssuedAt, c.ExpiresAt, c.ID = "https://i.test", bearer.Audience, bearer.Role, now.Unix(), now.Add(time.Hour).Unix(), "j"
	if c.Subject == "" {
		c.Subject = "sub"
	}
	tok, err := s.keys.Sign(&c)
	require.NoError(t, err)
	return tok
}

func TestMiddleware(t *testing.T) {
	s := newSigner(t)
	code := s.sign(t, bearer.Claims{OrganizationID: orgA, ClientID: "c", Scopes: []string{"svc:orders:read", "svc:orders:write"}})
	cc := s.sign(t, bearer.Claims{OrganizationID: orgA, ClientID: "c", Scopes: []string{"svc:orders:read"}, BranchIDs: []string{a1}, AppName: "Sync"})
	user := s.sign(t, bearer.Claims{})

	var seen tenancy.Tenant
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var found bool
		seen, found = tenancy.FromContext(r.Context())
		require.True(t, found)
		w.WriteHeader(http.StatusNoContent)
	})
	mux := http.NewServeMux()
	for _, st := range []tenancy.ScopeType{tenancy.Organization, tenancy.Branch, tenancy.BranchOrNull, tenancy.OrganizationOrBranch} {
		mw := tenancy.Middleware(tenancy.Options{
			Verifier: &bearer.Verifier{Keys: s.keys, Issuer: "https://i.test"}, Branches: branches, ScopeType: st,
			Scope: tenancy.ReadWrite("svc:orders:read", "svc:orders:write"),
		})
		mux.Handle("/"+st.String()+"/{scopeId}", mw(ok))
	}

	// desc, when set, is what the error's description must say.
	const (
		ownOrganization = "give the id of a branch"
		nothingRevealed = "no such organization or branch"
	)
	cases := []struct {
		name, method, path, auth string
		status                   int
		code, branch             string
		desc                     string
	}{
		{"organization", "GET", "/organization/" + orgA, "Bearer " + code, 204, "", "", ""},
		{"organization in upper case", "GET", "/organization/" + strings.ToUpper(orgA), "Bearer " + code, 204, "", "", ""},
		{"another organization", "GET", "/organization/" + orgB, "Bearer " + code, 404, "not_found", "", ""},
		{"a branch as organization", "GET", "/organization/" + a1, "Bearer " + code, 404, "not_found", "", ""},
		{"branch", "GET", "/branch/" + a2, "Bearer " + code, 204, "", a2, ""},
		{"branch or null", "GET", "/branch-or-null/" + a1, "Bearer " + code, 204, "", a1, ""},
		{"organization or branch: the organization", "GET", "/organization-or-branch/" + orgA, "Bearer " + code, 204, "", "", ""},
		{"organization or branch: a branch", "GET", "/organization-or-branch/" + a2, "Bearer " + code, 204, "", a2, ""},
		{"organization or branch: another organization", "GET", "/organization-or-branch/" + orgB, "Bearer " + code, 404, "not_found", "", ""},
		{"organization or branch: another organization's branch", "GET", "/organization-or-branch/" + b1, "Bearer " + code, 404, "not_found", "", ""},
		{"organization or branch: client credentials outside its branches", "GET", "/organization-or-branch/" + a2, "Bearer " + cc, 403, "insufficient_scope", "", ""},
		{"organization or branch: client credentials on the organization", "GET", "/organization-or-branch/" + orgA, "Bearer " + cc, 204, "", "", ""},
		{"unknown branch", "GET", "/branch/0a000000-0000-4000-8000-0000000000ff", "Bearer " + code, 404, "not_found", "", nothingRevealed},
		{"another organization's branch", "GET", "/branch/" + b1, "Bearer " + code, 404, "not_found", "", nothingRevealed},
		{"the token's organization as a branch", "GET", "/branch/" + orgA, "Bearer " + code, 404, "not_found", "", ownOrganization},
		{"another organization as a branch", "GET", "/branch/" + orgB, "Bearer " + code, 404, "not_found", "", nothingRevealed},
		{"not a UUID", "GET", "/branch/x", "Bearer " + code, 404, "not_found", "", ""},
		{"client credentials in its branch", "GET", "/branch/" + a1, "Bearer " + cc, 204, "", a1, ""},
		{"client credentials outside its branches", "GET", "/branch/" + a2, "Bearer " + cc, 403, "insufficient_scope", "", ""},
		{"client credentials without the write scope", "POST", "/branch/" + a1, "Bearer " + cc, 403, "insufficient_scope", "", ""},
		{"no Authorization", "GET", "/branch/" + a1, "", 401, "unauthorized", "", ""},
		{"another scheme", "GET", "/branch/" + a1, "Basic eDp5", 401, "invalid_token", "", ""},
		{"a scheme in lower case", "GET", "/branch/" + a1, "bearer " + code, 204, "", a1, ""},
		{"an empty bearer", "GET", "/branch/" + a1, "Bearer ", 401, "invalid_token", "", ""},
		{"a product user token", "GET", "/branch/" + a1, "Bearer " + user, 403, "invalid_token_type", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen = tenancy.Tenant{}
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			assert.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.desc != "" {
				assert.Contains(t, rec.Body.String(), tc.desc)
			}
			if tc.code != "" {
				assert.Contains(t, rec.Body.String(), `"error":"`+tc.code+`"`)
				return
			}
			assert.Equal(t, orgA, seen.OrganizationID)
			assert.Equal(t, tc.branch, seen.BranchID)
		})
	}
}

func TestCoversAllBranches(t *testing.T) {
	s := newSigner(t)
	mw := func(claims bearer.Claims) bool {
		var covers bool
		h := tenancy.Middleware(tenancy.Options{Verifier: &bearer.Verifier{Keys: s.keys, Issuer: "https://i.test"}, Branches: branches, ScopeType: tenancy.BranchOrNull})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tn, _ := tenancy.FromContext(r.Context())
				var err error
				covers, err = tn.CoversAllBranches(r.Context())
				require.NoError(t, err)
			}))
		req := httptest.NewRequest("GET", "/", nil)
		req.SetPathValue("scopeId", a1)
		req.Header.Set("Authorization", "Bearer "+s.sign(t, claims))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, "the middleware lets the request through: %s", rec.Body)
		return covers
	}
	assert.True(t, mw(bearer.Claims{OrganizationID: orgA, ClientID: "c"}), "an authorization-code token sees every branch")
	assert.True(t, mw(bearer.Claims{OrganizationID: orgA, ClientID: "c", AppName: "x", BranchIDs: []string{a1, a2}}))
	assert.False(t, mw(bearer.Claims{OrganizationID: orgA, ClientID: "c", AppName: "x", BranchIDs: []string{a1}}))
}

func TestBranchLookupFailure(t *testing.T) {
	s := newSigner(t)
	h := tenancy.Middleware(tenancy.Options{Verifier: &bearer.Verifier{Keys: s.keys, Issuer: "https://i.test"}, Branches: failing{}, ScopeType: tenancy.Branch})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("must not be called") }))
	req := httptest.NewRequest("GET", "/", nil)
	req.SetPathValue("scopeId", a1)
	req.Header.Set("Authorization", "Bearer "+s.sign(t, bearer.Claims{OrganizationID: orgA, ClientID: "c"}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, 500, rec.Code)
	assert.NotContains(t, rec.Body.String(), "connection refused", "the cause is not shown")
}

type failing struct{}

func (failing) Organization(context.Context, string) (string, error) {
	return "", errors.New("dial tcp: connection refused")
}
func (failing) List(context.Context, string) ([]string, error) { return nil, errors.New("down") }
