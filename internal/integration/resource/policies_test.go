package resource_test

import (
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
)

// TestCursorKeyFromTheVerifier: a Registry without CursorKey derives it from
// its Verifier's signing key, so that a replica with the same key accepts
// the cursors of another (and one with another key refuses them); without
// a key to derive from, Mount refuses to serve rather than make one that
// no other replica knows.
func TestCursorKeyFromTheVerifier(t *testing.T) {
	e := newEnv(t, backends[1])
	tok := e.codeToken(t, orgA, allScopes...)
	for _, name := range []string{"Firm A", "Firm B"} {
		e.mustCreate(t, tok, "/v1/"+a1+"/accounts", `{"company_name":"`+name+`","account_type":"customer"}`)
	}
	r := e.do(t, http.MethodGet, "/v1/"+a1+"/accounts?limit=1", tok, "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	cursor, _ := r.body["pagination"].(map[string]any)["next_cursor"].(string)
	require.NotEmpty(t, cursor)

	// replica serves the same database with a Verifier of the same signing
	// key, made anew as another process would, and cursorKey (nil: none).
	replica := func(cursorKey []byte) *httptest.Server {
		keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
		require.NoError(t, err)
		reg := &resource.Registry{DB: e.db, Dialect: e.dialect, Verifier: &bearer.Verifier{Keys: keys, Issuer: issuer},
			Branches: apitest.Branches{DB: e.db, Table: "branches"}, CursorKey: cursorKey}
		require.NoError(t, reg.Register(testResources()...))
		mux := http.NewServeMux()
		reg.Mount(mux)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv
	}
	next := "/v1/" + a1 + "/accounts?limit=1&after=" + url.QueryEscape(cursor)
	get := func(srv *httptest.Server) *http.Response {
		req, err := http.NewRequest(http.MethodGet, srv.URL+next, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	assert.Equal(t, http.StatusOK, get(replica(nil)).StatusCode, "a replica with the same signing key takes the cursor")
	assert.Equal(t, http.StatusBadRequest, get(replica([]byte(strings.Repeat("c", 32)))).StatusCode, "one with another cursor key refuses it")

	// A resource server that verifies against the token service's JWKS has no
	// signing key to derive from.
	reg := &resource.Registry{Verifier: &bearer.Verifier{Source: &bearer.RemoteKeys{URL: "https://tokens.test/jwks.json"}}, Branches: apitest.Branches{}}
	require.NoError(t, reg.Register(testResources()...), "a registry serves the OpenAPI document without a cursor key")
	assert.PanicsWithValue(t, "resource: accounts, quotations, vehicles, zones, branches registered without a cursor key: "+
		"set Registry.CursorKey (at least 32 secret random bytes, the same on every replica) before Register, "+
		"or give a *bearer.Verifier with Keys to derive it from", func() { reg.Mount(http.NewServeMux()) })
}

// TestScopeNames: a registry names its resources' scopes with its
// ScopeNames policy; tokens need those names, and the OpenAPI document
// shows them.
func TestScopeNames(t *testing.T) {
	custom := func(name string) (read, write string) { return name + ".read", name + ".write" }
	e := newEnvWith(t, backends[1], func(reg *resource.Registry, _ []*resource.Resource) { reg.ScopeNames = custom })
	accounts := e.registry.Resource("accounts")
	assert.Equal(t, "accounts.read", accounts.ReadScope())
	assert.Equal(t, "accounts.write", accounts.WriteScope())

	path := "/v1/" + a1 + "/accounts"
	r := e.do(t, http.MethodGet, path, e.codeToken(t, orgA, "accounts.read"), "")
	assert.Equal(t, http.StatusOK, r.status, r.raw)
	r = e.do(t, http.MethodGet, path, e.codeToken(t, orgA, "svc:accounts:read"), "")
	assert.Equal(t, http.StatusForbidden, r.status, "the default name is not this registry's: %s", r.raw)
	r = e.do(t, http.MethodPost, path, e.codeToken(t, orgA, "accounts.read"), `{"company_name":"Firm","account_type":"customer"}`)
	assert.Equal(t, http.StatusForbidden, r.status, "write does not follow from read: %s", r.raw)
	r = e.do(t, http.MethodPost, path, e.codeToken(t, orgA, "accounts.write"), `{"company_name":"Firm","account_type":"customer"}`)
	assert.Equal(t, http.StatusCreated, r.status, r.raw)

	doc, err := e.registry.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	assert.Contains(t, string(doc), `"accounts.read"`)
	assert.NotContains(t, string(doc), `svc:accounts:read`)

	bad := &resource.Registry{ScopeNames: func(string) (string, string) { return "", "" }}
	assert.ErrorContains(t, bad.Register(testResources()...), "no read or no write scope")
}
