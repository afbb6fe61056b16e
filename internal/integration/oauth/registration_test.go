package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
)

// sendJSON sends raw as a JSON body with method to path, with a Bearer
// token when not "".
func (e *env) sendJSON(t *testing.T, method, path, raw, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// registerPath is where a registered client's registration is managed.
func registerPath(clientID string) string { return oauth.PathRegister + "/" + clientID }

// appCount counts the apps in the store.
func (e *env) appCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRowContext(t.Context(), `SELECT count(*) FROM oauth_apps`).Scan(&n))
	return n
}

// registerBody is a valid registration of a client of the env's redirect
// URI, with the auth method.
func registerBody(method string) string {
	return `{"client_name": "Route Agent", "redirect_uris": ["` + redirect + `"], "token_endpoint_auth_method": "` + method +
		`", "grant_types": ["authorization_code", "refresh_token"], "scope": "svc:orders:read", "logo_uri": "https://agent.example/logo.png"}`
}

func TestRegistrationModes(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.srv.ScopesSupported = oauth.ParseScope(appScopes)
		metadata := func() map[string]any {
			return e.call(t, http.MethodGet, oauth.PathMetadata, "").body
		}

		// Off (the default): every registration route is 404, and the
		// metadata names no endpoint.
		r := e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), "")
		assert.Equal(t, http.StatusNotFound, r.status, r.raw)
		assert.Equal(t, apierrors.CodeNotFound, r.str("error"))
		assert.Equal(t, http.StatusNotFound, e.call(t, http.MethodGet, registerPath(e.app.ClientID), "x").status)
		assert.NotContains(t, metadata(), "registration_endpoint")

		// Token: an initial access token is needed, and must be live.
		e.srv.Registration = oauth.RegistrationToken
		assert.Equal(t, testIssuer+oauth.PathRegister, metadata()["registration_endpoint"])
		before := e.appCount(t)
		for _, token := range []string{"", "not-a-token"} {
			r = e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), token)
			assert.Equal(t, http.StatusUnauthorized, r.status, r.raw)
			assert.Equal(t, apierrors.CodeInvalidToken, r.str("error"))
			assert.Contains(t, r.header.Get("WWW-Authenticate"), `Bearer`)
		}
		iat, expires, err := e.srv.CreateInitialAccessToken(t.Context(), time.Hour)
		require.NoError(t, err)
		assert.Equal(t, e.clock.Now().Add(time.Hour).UTC(), expires)
		var stored int
		require.NoError(t, e.db.QueryRowContext(t.Context(), `SELECT count(*) FROM oauth_initial_access_tokens WHERE hash = $1`, sha256Of(iat)).Scan(&stored))
		assert.Equal(t, 1, stored, "the initial access token is kept as its hash")
		for i := range 2 { // reusable until it expires
			r = e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), iat)
			require.Equal(t, http.StatusCreated, r.status, "registration %d: %s", i, r.raw)
		}
		e.clock.Advance(time.Hour)
		r = e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), iat)
		assert.Equal(t, http.StatusUnauthorized, r.status, r.raw)
		assert.Contains(t, r.str("error_description"), "expired")
		assert.Equal(t, before+2, e.appCount(t))

		// Open: anyone registers.
		e.srv.Registration = oauth.RegistrationOpen
		r = e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), "")
		assert.Equal(t, http.StatusCreated, r.status, r.raw)
	})
}

// Every refused registration is a 400 of RFC 7591's codes, and stores
// nothing.
func TestRegistrationRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.srv.ScopesSupported = oauth.ParseScope(appScopes)
		e.srv.Registration = oauth.RegistrationOpen
		tests := []struct {
			name, body, code, says string
		}{
			{"javascript: redirect URI", `{"client_name": "X", "redirect_uris": ["javascript:alert(1)"]}`, apierrors.CodeInvalidRedirectURI, "javascript"},
			{"data: redirect URI", `{"client_name": "X", "redirect_uris": ["data:text/html,hi"]}`, apierrors.CodeInvalidRedirectURI, "data"},
			{"http on a public host", `{"client_name": "X", "redirect_uris": ["http://agent.example/cb"]}`, apierrors.CodeInvalidRedirectURI, "loopback"},
			{"a fragment", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb#x"]}`, apierrors.CodeInvalidRedirectURI, "fragment"},
			{"no redirect URI", `{"client_name": "X"}`, apierrors.CodeInvalidRedirectURI, "at least one redirect URI"},
			{"no name", `{"redirect_uris": ["https://agent.example/cb"]}`, apierrors.CodeInvalidClientMetadata, "client_name"},
			{"a control character in the name", `{"client_name": "Agent\u0007", "redirect_uris": ["https://agent.example/cb"]}`, apierrors.CodeInvalidClientMetadata, "control character"},
			{"client credentials", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "grant_types": ["client_credentials"]}`, apierrors.CodeInvalidClientMetadata, "grant_types"},
			{"implicit", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "response_types": ["token"]}`, apierrors.CodeInvalidClientMetadata, "response_types"},
			{"private_key_jwt", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}`, apierrors.CodeInvalidClientMetadata, "token_endpoint_auth_method"},
			{"unknown scope", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "scope": "svc:orders:read admin"}`, apierrors.CodeInvalidClientMetadata, "scope names admin, which this server does not know"},
			{"wrong type", `{"client_name": "X", "redirect_uris": "https://agent.example/cb"}`, apierrors.CodeInvalidClientMetadata, "redirect_uris"},
			{"an array", `[{"client_name": "X", "redirect_uris": ["https://agent.example/cb"]}]`, apierrors.CodeInvalidClientMetadata, "one JSON object"},
			{"two objects", `{"client_name": "X", "redirect_uris": ["https://agent.example/cb"]} {}`, apierrors.CodeInvalidClientMetadata, "one JSON object"},
			{"not JSON", `client_name=X`, apierrors.CodeInvalidClientMetadata, "one JSON object"},
		}
		before := e.appCount(t)
		for _, tt := range tests {
			r := e.sendJSON(t, http.MethodPost, oauth.PathRegister, tt.body, "")
			assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", tt.name, r.raw)
			assert.Equal(t, tt.code, r.str("error"), tt.name)
			assert.Contains(t, r.str("error_description"), tt.says, tt.name)
		}
		assert.Equal(t, before, e.appCount(t), "a refused registration stored a client")
	})
}

// A registered client runs the authorization-code flow like any app, but
// never client credentials; RFC 7592 reads, updates and deletes it with
// its registration access token alone.
func TestRegisteredClientLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.srv.ScopesSupported = oauth.ParseScope(appScopes)
		e.srv.Registration = oauth.RegistrationOpen

		r := e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("client_secret_post"), "")
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
		clientID, secret, regToken := r.str("client_id"), r.str("client_secret"), r.str("registration_access_token")
		require.NotEmpty(t, clientID)
		require.NotEmpty(t, secret)
		require.NotEmpty(t, regToken)
		assert.Equal(t, testIssuer+registerPath(clientID), r.str("registration_client_uri"))
		assert.Equal(t, r.str("registration_client_uri"), r.header.Get("Location"))
		assert.Equal(t, float64(0), r.body["client_secret_expires_at"])
		assert.Equal(t, float64(e.clock.Now().Unix()), r.body["client_id_issued_at"])
		assert.Equal(t, "client_secret_post", r.str("token_endpoint_auth_method"))
		assert.Equal(t, []any{"authorization_code", "refresh_token"}, r.body["grant_types"])
		assert.Equal(t, []any{"code"}, r.body["response_types"])
		assert.Equal(t, "svc:orders:read", r.str("scope"))
		assert.NotContains(t, r.body, "logo_uri", "metadata the server does not use is not stored")

		app, err := e.store.App(ctx, clientID)
		require.NoError(t, err)
		assert.Equal(t, sha256Of(secret), app.SecretHash, "the secret is kept as its hash")
		assert.Equal(t, sha256Of(regToken), app.RegistrationTokenHash, "the registration access token is kept as its hash")
		assert.Empty(t, app.OrganizationID, "a registered client belongs to no organization")

		// The code grant works; client credentials do not.
		code := e.issueCode(t, app, challenge, "svc:orders:read")
		r = e.post(t, oauth.PathToken, url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"client_id": {clientID}, "client_secret": {secret}, "code_verifier": {verifier},
		}, nil, false)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		access, refresh := r.str("access_token"), r.str("refresh_token")
		claims, err := e.verifier.Verify(ctx, access)
		require.NoError(t, err)
		assert.Equal(t, orgID, claims.OrganizationID, "the organization chosen at consent")
		r = e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, &[2]string{clientID, secret}, false)
		assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
		assert.Equal(t, apierrors.CodeUnauthorizedClient, r.str("error"))
		_, err = e.srv.ClientCredentials(ctx, app, "", "")
		assert.True(t, apierrors.HasCode(err, apierrors.CodeUnauthorizedClient), "%v", err)
		r = e.post(t, oauth.PathToken, url.Values{"grant_type": {"authorization_code"}}, &[2]string{clientID, "wrong"}, false)
		assert.Equal(t, http.StatusUnauthorized, r.status, "the secret is checked: %s", r.raw)

		// RFC 7592 read: with the registration access token alone.
		r = e.call(t, http.MethodGet, registerPath(clientID), regToken)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "Route Agent", r.str("client_name"))
		assert.Equal(t, []any{redirect}, r.body["redirect_uris"])
		assert.NotContains(t, r.body, "client_secret", "the secret is not shown again")
		assert.NotContains(t, r.body, "registration_access_token", "the token is not shown again")
		for name, token := range map[string]string{"none": "", "wrong": "wrong-token", "the client secret": secret, "an access token": access} {
			r = e.call(t, http.MethodGet, registerPath(clientID), token)
			assert.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", name, r.raw)
			assert.Equal(t, apierrors.CodeInvalidToken, r.str("error"), name)
		}
		// Another client's registration, and an app an admin registered,
		// are refused alike: nobody learns which clients exist.
		other := e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), "")
		require.Equal(t, http.StatusCreated, other.status, other.raw)
		assert.NotContains(t, other.body, "client_secret", "a public client has no secret")
		assert.NotContains(t, other.body, "client_secret_expires_at")
		for _, id := range []string{other.str("client_id"), e.app.ClientID, "no-such-client"} {
			r = e.call(t, http.MethodGet, registerPath(id), regToken)
			assert.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", id, r.raw)
		}

		// RFC 7592 update: the body replaces the metadata.
		update := func(body map[string]any) response {
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			return e.sendJSON(t, http.MethodPut, registerPath(clientID), string(raw), regToken)
		}
		const second = "http://127.0.0.1:8765/cb"
		r = update(map[string]any{"client_id": clientID, "client_name": "Route Agent 2", "redirect_uris": []string{redirect, second},
			"token_endpoint_auth_method": "client_secret_basic", "client_secret": secret})
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "Route Agent 2", r.str("client_name"))
		assert.Equal(t, "client_secret_basic", r.str("token_endpoint_auth_method"))
		assert.Equal(t, appScopes, r.str("scope"), "an omitted scope takes its default: every scope of the server")
		app, err = e.store.App(ctx, clientID)
		require.NoError(t, err)
		assert.Equal(t, []string{redirect, second}, app.RedirectURIs)
		assert.Equal(t, sha256Of(secret), app.SecretHash, "an update keeps the secret")
		for name, body := range map[string]map[string]any{
			"no client_id":       {"client_name": "X", "redirect_uris": []string{redirect}},
			"another client_id":  {"client_id": e.app.ClientID, "client_name": "X", "redirect_uris": []string{redirect}},
			"public now":         {"client_id": clientID, "client_name": "X", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"},
			"a wrong secret":     {"client_id": clientID, "client_name": "X", "redirect_uris": []string{redirect}, "client_secret": "guess"},
			"javascript: URI":    {"client_id": clientID, "client_name": "X", "redirect_uris": []string{"javascript:alert(1)"}},
			"client credentials": {"client_id": clientID, "client_name": "X", "redirect_uris": []string{redirect}, "grant_types": []string{"client_credentials"}},
		} {
			r = update(body)
			assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.raw)
		}
		app, err = e.store.App(ctx, clientID)
		require.NoError(t, err)
		assert.Equal(t, "Route Agent 2", app.Name, "a refused update changed nothing")

		// RFC 7592 delete: the client is gone, and so are its tokens.
		r = e.call(t, http.MethodDelete, registerPath(clientID), regToken)
		require.Equal(t, http.StatusNoContent, r.status, r.raw)
		_, err = e.store.App(ctx, clientID)
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Equal(t, http.StatusUnauthorized, e.call(t, http.MethodGet, registerPath(clientID), regToken).status)
		assert.Equal(t, http.StatusUnauthorized, e.call(t, http.MethodDelete, registerPath(clientID), regToken).status)
		_, err = e.verifier.Verify(ctx, access)
		assert.True(t, apierrors.HasCode(err, apierrors.CodeInvalidToken), "the access token of a deleted client still verifies: %v", err)
		r = e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, nil, false)
		assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
		assert.Equal(t, apierrors.CodeInvalidGrant, r.str("error"))
	})
}

// A public registered client exchanges its code with its client_id alone.
func TestRegisteredPublicClient(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.srv.ScopesSupported = oauth.ParseScope(appScopes)
		e.srv.Registration = oauth.RegistrationOpen
		r := e.sendJSON(t, http.MethodPost, oauth.PathRegister, registerBody("none"), "")
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		clientID := r.str("client_id")
		app, err := e.store.App(t.Context(), clientID)
		require.NoError(t, err)
		assert.True(t, app.Public)
		code := e.issueCode(t, app, challenge, "svc:orders:read")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {clientID}}
		r = e.post(t, oauth.PathToken, form, nil, false)
		assert.Equal(t, http.StatusBadRequest, r.status, "no verifier: %s", r.raw)
		form.Set("code_verifier", verifier)
		r = e.post(t, oauth.PathToken, form, nil, false)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.NotEmpty(t, r.str("refresh_token"))
	})
}
