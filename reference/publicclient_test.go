package main

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// TestPublicClient registers a public client with the admin command and
// drives it through the server, on SQLite and PostgreSQL, with
// golang.org/x/oauth2 and no secret: the authorization-code flow with PKCE,
// refresh with rotation and reuse detection, revocation by client_id. It
// may not use client credentials (unauthorized_client) or introspection; a
// secret sent with it is invalid_client and spends nothing; a code
// redeemed without its verifier is refused.
func TestPublicClient(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRVTenant(t, db)
			created := adminJSON(t, "admin", "app", "create", "--org", c.org, "--name", "Desk Tool", "--scopes", "svc:vehicles:read",
				"--public", "--redirect-uri", rvRedirect, "--database-url", db)
			assert.Equal(t, "none", created["token_endpoint_auth_method"])
			assert.NotContains(t, created, "client_secret", "a public client has no secret")
			public := c
			public.clientID, public.secret = created["client_id"].(string), ""

			_, err := runCommand(t, nil, "admin", "app", "create", "--org", c.org, "--name", "x", "--scopes", "svc:vehicles:read",
				"--public", "--all-branches", "--redirect-uri", rvRedirect, "--database-url", db)
			assert.ErrorContains(t, err, "no branches")
			_, err = runCommand(t, nil, "admin", "app", "rotate-secret", "--client-id", public.clientID, "--database-url", db)
			assert.ErrorContains(t, err, "no secret to rotate")

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			res, meta := doJSON(t, mustRequest(t, http.MethodGet, base+oauth.PathMetadata))
			require.Equal(t, http.StatusOK, res.StatusCode)
			assert.Contains(t, meta["token_endpoint_auth_methods_supported"], "none")
			assert.Contains(t, meta["revocation_endpoint_auth_methods_supported"], "none", "it revokes by client_id")
			assert.NotContains(t, meta["introspection_endpoint_auth_methods_supported"], "none")

			conf := &oauth2.Config{
				ClientID: public.clientID, RedirectURL: rvRedirect, Scopes: []string{"svc:vehicles:read"},
				Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams},
			}
			pkce := oauth2.GenerateVerifier()
			code := rvConsent(t, base, conf.AuthCodeURL("pc-state", oauth2.S256ChallengeOption(pkce)), public)
			token := func(form url.Values) (*http.Response, map[string]any) {
				form.Set("client_id", public.clientID)
				return postForm(t, base+oauth.PathToken, form, "", "")
			}

			res, body := token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rvRedirect}, "code_verifier": {pkce}, "client_secret": {"guess"}})
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Equal(t, "invalid_client", body["error"], "a secret sent with a public client")
			res, body = token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rvRedirect}})
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "invalid_request", body["error"], "a code without its verifier")

			tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
			require.NoError(t, err, "the refusals above spent nothing")
			require.NotEmpty(t, tok.RefreshToken)
			assert.Equal(t, public.clientID, claimsOf(t, tok.AccessToken)["client_id"])
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)

			// Refresh through the library, without a secret, then reuse.
			refreshed, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			require.NoError(t, err)
			require.NotEqual(t, tok.RefreshToken, refreshed.RefreshToken, "rotated")
			res, body = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}})
			assert.Equal(t, http.StatusBadRequest, res.StatusCode)
			assert.Equal(t, "invalid_grant", body["error"], "reuse of a spent refresh token")
			res, body = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshed.RefreshToken}})
			assert.Equal(t, "invalid_grant", body["error"], "reuse revoked the whole family: %d", res.StatusCode)
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, refreshed.AccessToken).status)

			res, body = token(url.Values{"grant_type": {"client_credentials"}})
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "unauthorized_client", body["error"])

			fresh, err := conf.Exchange(t.Context(), rvConsent(t, base, conf.AuthCodeURL("pc-state", oauth2.S256ChallengeOption(pkce)), public), oauth2.VerifierOption(pkce))
			require.NoError(t, err)
			res, body = postForm(t, base+oauth.PathIntrospect, url.Values{"token": {fresh.AccessToken}, "client_id": {public.clientID}}, "", "")
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Equal(t, "invalid_client", body["error"], "a public client may not introspect")
			res, body = postForm(t, base+oauth.PathRevoke, url.Values{"token": {fresh.RefreshToken}, "client_id": {c.clientID}}, "", "")
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "another (confidential) client's id without its secret: %v", body)
			res, body = postForm(t, base+oauth.PathRevoke, url.Values{"token": {fresh.RefreshToken}, "client_id": {public.clientID}}, "", "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, fresh.AccessToken).status, "revoked by client_id")
		})
	}
}
