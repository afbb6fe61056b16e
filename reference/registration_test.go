package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// sendRegistration sends body (JSON) with method to target, with a Bearer
// token when not "".
func sendRegistration(t *testing.T, method, target string, body any, token string) (*http.Response, map[string]any) {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, bytes.NewReader(raw))
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return doJSON(t, req)
}

// TestDynamicClientRegistration runs Dynamic Client Registration through
// the server, on SQLite and PostgreSQL: an initial access token from the
// admin command registers a public and a confidential client, each of
// which runs the authorization-code flow with golang.org/x/oauth2 and
// reaches the API; RFC 7592 reads, updates and deletes a registration,
// after which the client's tokens are dead. Registration is 404 when off,
// and rate limited per address.
func TestDynamicClientRegistration(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRVTenant(t, db)
			iat := adminJSON(t, "admin", "registration-token", "create", "--expires", "2h", "--database-url", db)
			token := iat["token"].(string)
			expires, err := time.Parse(time.RFC3339Nano, iat["expires_at"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, time.Now().Add(2*time.Hour), expires, time.Minute)
			_, err = runCommand(t, nil, "admin", "registration-token", "create", "--expires", "-1h", "--database-url", db)
			assert.ErrorContains(t, err, "--expires must be positive")

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--registration", "token"}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			res, meta := doJSON(t, mustRequest(t, http.MethodGet, base+oauth.PathMetadata))
			require.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, base+oauth.PathRegister, meta["registration_endpoint"])

			register := func(method string) map[string]any {
				t.Helper()
				res, body := sendRegistration(t, http.MethodPost, base+oauth.PathRegister, map[string]any{
					"client_name": "Fleet Agent", "redirect_uris": []string{rvRedirect}, "token_endpoint_auth_method": method,
					"scope": "svc:vehicles:read", "software_id": "fleet-agent", "contacts": []string{"ops@agent.example"},
				}, token)
				require.Equal(t, http.StatusCreated, res.StatusCode, body)
				assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
				return body
			}
			res, body := sendRegistration(t, http.MethodPost, base+oauth.PathRegister, map[string]any{"client_name": "x", "redirect_uris": []string{rvRedirect}}, "")
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Equal(t, "invalid_token", body["error"], "no initial access token")

			flow := func(clientID, secret string, style oauth2.AuthStyle) *oauth2.Token {
				t.Helper()
				conf := &oauth2.Config{
					ClientID: clientID, ClientSecret: secret, RedirectURL: rvRedirect, Scopes: []string{"svc:vehicles:read"},
					Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: style},
				}
				pkce := oauth2.GenerateVerifier()
				code := rvConsent(t, base, conf.AuthCodeURL("dcr-state", oauth2.S256ChallengeOption(pkce)), c)
				tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
				require.NoError(t, err)
				assert.Equal(t, clientID, claimsOf(t, tok.AccessToken)["client_id"])
				assert.Equal(t, c.org, claimsOf(t, tok.AccessToken)["organization_id"], "the organization chosen at consent")
				assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)
				refreshed, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
				require.NoError(t, err)
				assert.NotEqual(t, tok.RefreshToken, refreshed.RefreshToken, "rotated")
				return refreshed
			}

			// A public client: no secret, its client_id and PKCE alone.
			public := register("none")
			assert.NotContains(t, public, "client_secret")
			flow(public["client_id"].(string), "", oauth2.AuthStyleInParams)

			// A confidential client: its secret in HTTP Basic.
			confidential := register("client_secret_basic")
			clientID, secret := confidential["client_id"].(string), confidential["client_secret"].(string)
			regToken, regURI := confidential["registration_access_token"].(string), confidential["registration_client_uri"].(string)
			assert.Equal(t, base+oauth.PathRegister+"/"+clientID, regURI)
			assert.Equal(t, float64(0), confidential["client_secret_expires_at"])
			assert.NotContains(t, confidential, "software_id", "metadata the server does not use is not stored")
			tok := flow(clientID, secret, oauth2.AuthStyleInHeader)
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, clientID, secret)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "unauthorized_client", body["error"], "a registered client gets the code grant alone")

			// RFC 7592: read, update, delete with the registration access token.
			res, body = sendRegistration(t, http.MethodGet, regURI, nil, regToken)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, "Fleet Agent", body["client_name"])
			assert.NotContains(t, body, "client_secret")
			res, body = sendRegistration(t, http.MethodGet, regURI, nil, public["registration_access_token"].(string))
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "another client's registration access token: %v", body)
			res, body = sendRegistration(t, http.MethodPut, regURI, map[string]any{
				"client_id": clientID, "client_name": "Fleet Agent 2", "redirect_uris": []string{rvRedirect, "http://127.0.0.1:7777/cb"},
				"token_endpoint_auth_method": "client_secret_post", "scope": "svc:vehicles:read",
			}, regToken)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, "Fleet Agent 2", body["client_name"])
			assert.Equal(t, []any{rvRedirect, "http://127.0.0.1:7777/cb"}, body["redirect_uris"])
			res, body = sendRegistration(t, http.MethodPut, regURI, map[string]any{
				"client_id": clientID, "client_name": "Fleet Agent 3", "redirect_uris": []string{"javascript:alert(1)"},
			}, regToken)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "invalid_redirect_uri", body["error"])

			res, body = sendRegistration(t, http.MethodDelete, regURI, nil, regToken)
			require.Equal(t, http.StatusNoContent, res.StatusCode, body)
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, tok.AccessToken).status, "the deleted client's access token")
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, "", "")
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "invalid_grant", body["error"])
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, clientID, secret)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			res, _ = sendRegistration(t, http.MethodGet, regURI, nil, regToken)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		})
	}
}

// TestRegistrationOffAndLimited: a server started without --registration
// answers 404 and names no registration endpoint; an open one registers
// without a token, rate limited per address (here 3 a minute).
func TestRegistrationOffAndLimited(t *testing.T) {
	t.Parallel()
	db := backends()[0].url(t)
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
	res, body := sendRegistration(t, http.MethodPost, base+oauth.PathRegister, map[string]any{"client_name": "x", "redirect_uris": []string{rvRedirect}}, "")
	assert.Equal(t, http.StatusNotFound, res.StatusCode, body)
	assert.Equal(t, "not_found", body["error"])
	_, meta := doJSON(t, mustRequest(t, http.MethodGet, base+oauth.PathMetadata))
	assert.NotContains(t, meta, "registration_endpoint")
	require.NoError(t, stop())

	_, err := runCommand(t, nil, "serve", "--addr", "127.0.0.1:0", "--database-url", db, "--registration", "anyone")
	assert.ErrorContains(t, err, "--registration must be off, token or open")

	base, _, stop = startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--registration", "open", "--rate-token", "3"}, env(nil))
	defer func() { require.NoError(t, stop()) }()
	var statuses []int
	for range 5 {
		res, _ := sendRegistration(t, http.MethodPost, base+oauth.PathRegister, map[string]any{"client_name": "Flood", "redirect_uris": []string{rvRedirect}, "token_endpoint_auth_method": "none"}, "")
		statuses = append(statuses, res.StatusCode)
		if res.StatusCode == http.StatusTooManyRequests {
			assert.NotEmpty(t, res.Header.Get("Retry-After"))
		}
	}
	assert.Equal(t, []int{201, 201, 201, 429, 429}, statuses, "a flood from one address")
}
