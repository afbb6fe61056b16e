package oauth_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// otherPaths puts every endpoint of the token service somewhere else than
// the defaults.
var otherPaths = oauth.Paths{
	Authorize: "/oauth2/authorize", Login: "/oauth2/login", Consent: "/oauth2/consent",
	Token: "/oauth2/token", UserToken: "/oauth2/user-token", Apps: "/oauth2/apps",
	Revoke: "/oauth2/revoke", Introspect: "/oauth2/introspect", Metadata: "/oauth2/.well-known/oauth-authorization-server",
	JWKS:          "/oauth2/.well-known/jwks.json",
	ConnectedApps: "/oauth2/orgs/{organization_id}/apps",
}

// newOtherPathsEnv returns e's service at otherPaths, with access tokens
// of 15 minutes, over e's store and directory.
func newOtherPathsEnv(t *testing.T, e *env) *env {
	t.Helper()
	srv := &oauth.Server{
		Issuer: testIssuer, Keys: e.srv.Keys, Store: e.store, Directory: e.srv.Directory, Now: e.srv.Now,
		Paths: otherPaths, AccessTokenTTL: 15 * time.Minute,
	}
	o := *e
	o.srv = srv
	o.http = httptest.NewServer(srv.Handler())
	t.Cleanup(o.http.Close)
	return &o
}

// A Server with other Paths answers at them, and only there.
func TestOtherPaths(t *testing.T) {
	e := newEnv(t, backends[1])
	o := newOtherPathsEnv(t, e)
	basic := &[2]string{e.app.ClientID, e.secret}

	t.Run("every endpoint moves", func(t *testing.T) {
		def := oauth.Paths{}.WithDefaults()
		for _, tc := range []struct {
			method, path, old string
		}{
			{http.MethodGet, otherPaths.Authorize, def.Authorize},
			{http.MethodGet, otherPaths.Login, def.Login},
			{http.MethodPost, otherPaths.Login, def.Login},
			{http.MethodPost, otherPaths.Consent, def.Consent},
			{http.MethodPost, otherPaths.Token, def.Token},
			{http.MethodPost, otherPaths.UserToken, def.UserToken},
			{http.MethodPost, otherPaths.Apps, def.Apps},
			{http.MethodPost, otherPaths.Apps + "/" + e.app.ClientID + "/rotate-secret", def.Apps + "/" + e.app.ClientID + "/rotate-secret"},
			{http.MethodPost, otherPaths.Revoke, def.Revoke},
			{http.MethodPost, otherPaths.Introspect, def.Introspect},
			{http.MethodGet, otherPaths.Metadata, def.Metadata},
			{http.MethodGet, "/oauth2/orgs/" + orgID + "/apps", connectedAppsPath(orgID)},
			{http.MethodDelete, "/oauth2/orgs/" + orgID + "/apps/" + e.app.ClientID, connectedAppsPath(orgID) + "/" + e.app.ClientID},
		} {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				for path, found := range map[string]bool{tc.path: true, tc.old: false} {
					req, err := http.NewRequest(tc.method, o.http.URL+path, strings.NewReader(""))
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					r := do(t, req)
					assert.Equal(t, found, r.status != http.StatusNotFound, "%s %s answers %d", tc.method, path, r.status)
				}
			})
		}
	})

	t.Run("token", func(t *testing.T) {
		r := o.post(t, otherPaths.Token, url.Values{"grant_type": {"client_credentials"}}, basic, false)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, float64(15*60), r.body["expires_in"], "AccessTokenTTL")
		claims, err := e.verifier.Verify(t.Context(), r.str("access_token"))
		require.NoError(t, err)
		assert.Equal(t, int64(15*60), claims.ExpiresAt-claims.IssuedAt)
	})

	t.Run("metadata", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, o.http.URL+otherPaths.Metadata, nil)
		require.NoError(t, err)
		r := do(t, req)
		require.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, testIssuer+"/oauth2/authorize", r.str("authorization_endpoint"))
		assert.Equal(t, testIssuer+"/oauth2/token", r.str("token_endpoint"))
		assert.Equal(t, testIssuer+"/oauth2/revoke", r.str("revocation_endpoint"))
		assert.Equal(t, testIssuer+"/oauth2/introspect", r.str("introspection_endpoint"))
	})

	t.Run("app registration", func(t *testing.T) {
		signIn := o.postJSON(t, otherPaths.UserToken+"?grant_type=password", map[string]any{"email": "admin@example.com", "password": "correct horse"}, "")
		require.Equal(t, http.StatusOK, signIn.status, signIn.raw)
		r := o.postJSON(t, otherPaths.Apps, map[string]any{
			"organization_id": orgID, "name": "Elsewhere", "scopes": []string{"svc:orders:read"}, "branch_ids": []string{branch1},
		}, signIn.str("access_token"))
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		assert.Equal(t, otherPaths.Apps+"/"+r.str("client_id"), r.header.Get("Location"))
	})

	t.Run("authorize sends the browser to the sign-in page at its path", func(t *testing.T) {
		q := url.Values{
			"client_id": {e.app.ClientID}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"svc:orders:read"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Get(o.http.URL + otherPaths.Authorize + "?" + q.Encode())
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		loc, err := res.Location()
		require.NoError(t, err)
		assert.Equal(t, otherPaths.Login, loc.Path)
		assert.True(t, strings.HasPrefix(loc.Query().Get("return"), otherPaths.Authorize+"?"))
	})

	t.Run("client-credentials handler at a path of the host's", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("POST /api/token", o.srv.ClientCredentialsHandler())
		ts := httptest.NewServer(mux)
		defer ts.Close()
		h := *o
		h.http = ts
		r := h.post(t, "/api/token", url.Values{"grant_type": {"client_credentials"}}, basic, false)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, float64(15*60), r.body["expires_in"])
		r = h.post(t, "/api/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, basic, false)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "unsupported_grant_type", r.str("error"))
	})
}
