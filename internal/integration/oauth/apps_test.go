package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// signIn returns a product user token.
func (e *env) signIn(t *testing.T, email, password string) string {
	t.Helper()
	r := e.postJSON(t, oauth.PathUserToken+"?grant_type=password", map[string]any{"email": email, "password": password}, "")
	require.Equal(t, 200, r.status, r.raw)
	return r.str("access_token")
}

func (e *env) postJSON(t *testing.T, path string, body any, bearer string) response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return do(t, req)
}

func TestUserSignIn(t *testing.T) {
	e := newEnv(t, backends[1])
	r := e.postJSON(t, oauth.PathUserToken+"?grant_type=password", map[string]any{"email": "admin@example.com", "password": "correct horse"}, "")
	require.Equal(t, 200, r.status, r.raw)
	assert.Equal(t, "bearer", r.str("token_type"))
	assert.EqualValues(t, 3600, r.body["expires_in"])
	c, err := e.verifier.Verify(context.Background(), r.str("access_token"))
	require.NoError(t, err)
	assert.False(t, c.OAuth(), "a product user token carries no oauth_client_id")
	assert.Equal(t, adminID, c.Subject)

	for _, tc := range []struct {
		name, query string
		body        map[string]any
		status      int
		code        string
	}{
		{"wrong password", "?grant_type=password", map[string]any{"email": "admin@example.com", "password": "x"}, 400, "invalid_grant"},
		{"unknown email", "?grant_type=password", map[string]any{"email": "nobody@example.com", "password": "x"}, 400, "invalid_grant"},
		{"missing password", "?grant_type=password", map[string]any{"email": "admin@example.com"}, 400, "invalid_request"},
		{"no grant type", "", map[string]any{"email": "admin@example.com", "password": "correct horse"}, 400, "unsupported_grant_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.postJSON(t, oauth.PathUserToken+tc.query, tc.body, "")
			assert.Equal(t, tc.status, r.status)
			assert.Equal(t, tc.code, r.str("error"))
		})
	}
}

func TestAppRegistrationAndRotation(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		admin := e.signIn(t, "admin@example.com", "correct horse")
		member := e.signIn(t, "member@example.com", "battery staple")
		valid := map[string]any{
			"organization_id": orgID, "name": "Fleet Sync", "scopes": []string{"svc:vehicles:read"},
			"branch_ids": []string{branch1, branch2}, "redirect_uris": []string{"http://127.0.0.1:9999/cb"},
		}

		r := e.postJSON(t, oauth.PathApps, valid, admin)
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		clientID, secret := r.str("client_id"), r.str("client_secret")
		assert.NotEmpty(t, r.str("app_id"))
		assert.Len(t, secret, 43)
		assert.Equal(t, oauth.PathApps+"/"+clientID, r.header.Get("Location"))
		assert.Equal(t, "no-store", r.header.Get("Cache-Control"))

		cc := func(id, sec string) int {
			return e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, &[2]string{id, sec}, false).status
		}
		require.Equal(t, 200, cc(clientID, secret))

		stored, err := e.store.App(context.Background(), clientID)
		require.NoError(t, err)
		assert.NotContains(t, string(stored.SecretHash), secret, "only the hash is stored")
		assert.Equal(t, sha256Of(secret), stored.SecretHash, "the secret is stored as its SHA-256 only")

		t.Run("refusals", func(t *testing.T) {
			ccToken := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, &[2]string{e.app.ClientID, e.secret}, false).str("access_token")
			with := func(k string, v any) map[string]any {
				m := map[string]any{}
				for kk, vv := range valid {
					m[kk] = vv
				}
				m[k] = v
				return m
			}
			for _, tc := range []struct {
				name   string
				body   any
				bearer string
				status int
				code   string
			}{
				{"no token", valid, "", 401, "unauthorized"},
				{"garbage token", valid, "abc", 401, "invalid_token"},
				{"an OAuth access token", valid, ccToken, 403, "invalid_token_type"},
				{"a member who is no admin", valid, member, 403, "insufficient_scope"},
				{"another organization", with("organization_id", "0b000000-0000-4000-8000-00000000dead"), admin, 404, "not_found"},
				{"no organization", with("organization_id", ""), admin, 400, "invalid_request"},
				{"a branch of no organization of the admin", with("branch_ids", []string{"0b000000-0000-4000-8000-00000000dead"}), admin, 400, "invalid_request"},
				{"a redirect URI with a fragment", with("redirect_uris", []string{"https://x.test/cb#f"}), admin, 400, "invalid_request"},
				{"a relative redirect URI", with("redirect_uris", []string{"/cb"}), admin, 400, "invalid_request"},
				{"a javascript: redirect URI", with("redirect_uris", []string{"javascript://x.test/%0aalert(1)"}), admin, 400, "invalid_request"},
				{"a data: redirect URI", with("redirect_uris", []string{"data:text/html,hi"}), admin, 400, "invalid_request"},
				{"an http redirect URI to another host", with("redirect_uris", []string{"http://x.test/cb"}), admin, 400, "invalid_request"},
				{"one bad redirect URI among good ones", with("redirect_uris", []string{"https://x.test/cb", "http://x.test/cb"}), admin, 400, "invalid_request"},
				{"no scopes", with("scopes", []string{}), admin, 400, "invalid_request"},
				{"no name", with("name", " "), admin, 400, "invalid_request"},
				{"an unknown field", with("secret", "mine"), admin, 400, "invalid_request"},
				{"an unknown auth method", with("token_endpoint_auth_method", "private_key_jwt"), admin, 400, "invalid_request"},
				{"a public client with branches", with("token_endpoint_auth_method", "none"), admin, 400, "invalid_request"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := e.postJSON(t, oauth.PathApps, tc.body, tc.bearer)
					assert.Equal(t, tc.status, r.status, r.raw)
					assert.Equal(t, tc.code, r.str("error"))
				})
			}
		})

		t.Run("a public client", func(t *testing.T) {
			body := map[string]any{"organization_id": orgID, "name": "Desk Tool", "scopes": []string{"svc:vehicles:read"},
				"redirect_uris": []string{"http://127.0.0.1:9999/cb"}, "token_endpoint_auth_method": "none"}
			r := e.postJSON(t, oauth.PathApps, body, admin)
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			assert.Equal(t, "none", r.str("token_endpoint_auth_method"))
			assert.NotContains(t, r.body, "client_secret")
			public := r.str("client_id")
			stored, err := e.store.App(context.Background(), public)
			require.NoError(t, err)
			assert.True(t, stored.Public)
			assert.Empty(t, stored.SecretHash)
			assert.Equal(t, 400, cc(public, ""), "no client credentials")
			assert.Equal(t, 401, cc(public, "anything"), "a secret sent with a public client")
			rotate := e.postJSON(t, oauth.PathApps+"/"+public+"/rotate-secret", map[string]any{}, admin)
			assert.Equal(t, 400, rotate.status, rotate.raw)
			delete(body, "redirect_uris")
			assert.Equal(t, 400, e.postJSON(t, oauth.PathApps, body, admin).status, "a public client needs a redirect URI")
		})

		t.Run("rotation", func(t *testing.T) {
			path := oauth.PathApps + "/" + clientID + "/rotate-secret"
			assert.Equal(t, 403, e.postJSON(t, path, map[string]any{}, member).status)
			assert.Equal(t, 404, e.postJSON(t, oauth.PathApps+"/00000000-0000-4000-8000-000000000000/rotate-secret", map[string]any{}, admin).status)
			r := e.postJSON(t, path, map[string]any{}, admin)
			require.Equal(t, 200, r.status, r.raw)
			newSecret := r.str("client_secret")
			assert.NotEqual(t, secret, newSecret)
			assert.Equal(t, clientID, r.str("client_id"))
			assert.Equal(t, 401, cc(clientID, secret), "the old secret stops working")
			assert.Equal(t, 200, cc(clientID, newSecret))
		})
	})
}

func TestRevokeAndIntrospect(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		auth := &[2]string{e.app.ClientID, e.secret}
		introspect := func(token string) response {
			return e.post(t, oauth.PathIntrospect, url.Values{"token": {token}}, auth, false)
		}
		code := e.post(t, oauth.PathToken, codeForm(e, e.issueCode(t, e.app, challenge, "svc:orders:read"), verifier), nil, false)
		require.Equal(t, 200, code.status)
		access, refresh := code.str("access_token"), code.str("refresh_token")

		r := introspect(access)
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, true, r.body["active"])
		assert.Equal(t, "svc:orders:read", r.str("scope"))
		assert.Equal(t, e.app.ClientID, r.str("client_id"))
		assert.Equal(t, adminID, r.str("sub"))
		assert.Equal(t, code.str("token_type"), r.str("token_type"), "introspection spells token_type as the token answer does")
		assert.Equal(t, true, introspect(refresh).body["active"])
		assert.Equal(t, false, introspect("nope").body["active"])
		assert.Equal(t, 401, e.post(t, oauth.PathIntrospect, url.Values{"token": {access}}, nil, false).status, "introspection needs client authentication")

		other := e.post(t, oauth.PathRevoke, url.Values{"token": {refresh}}, &[2]string{e.other.ClientID, e.otherSec}, false)
		assert.Equal(t, 400, other.status)
		assert.Equal(t, "unauthorized_client", other.str("error"))
		assert.Equal(t, true, introspect(refresh).body["active"], "another client cannot revoke the token")

		rev := e.post(t, oauth.PathRevoke, url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}}, auth, false)
		assert.Equal(t, 200, rev.status, rev.raw)
		assert.Equal(t, false, introspect(refresh).body["active"])
		assert.Equal(t, false, introspect(access).body["active"], "revoking the family revokes its access tokens")
		assert.Equal(t, 200, e.post(t, oauth.PathRevoke, url.Values{"token": {"unknown"}}, auth, false).status)

		cc := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, auth, false)
		r = introspect(cc.str("access_token"))
		assert.Equal(t, true, r.body["active"])
		assert.Equal(t, []any{branch1}, r.body["branch_ids"])
	})
}

func TestMetadata(t *testing.T) {
	e := newEnv(t, backends[1])
	req, err := http.NewRequest(http.MethodGet, e.http.URL+oauth.PathMetadata, nil)
	require.NoError(t, err)
	r := do(t, req)
	require.Equal(t, 200, r.status)
	assert.Equal(t, testIssuer, r.str("issuer"))
	assert.Equal(t, testIssuer+"/auth/v1/oauth/token", r.str("token_endpoint"))
	assert.Equal(t, testIssuer+"/auth/v1/oauth/authorize", r.str("authorization_endpoint"))
	assert.Equal(t, []any{"S256"}, r.body["code_challenge_methods_supported"])
	assert.NotContains(t, r.body, "scopes_supported", "none configured")

	e.srv.ScopesSupported = []string{"svc:orders:read", "svc:orders:write"}
	r = do(t, req)
	assert.Equal(t, []any{"svc:orders:read", "svc:orders:write"}, r.body["scopes_supported"])
}

// sha256Of returns the SHA-256 of s, the one form in which the token
// service stores secrets, codes and refresh tokens.
func sha256Of(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
