package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// codeTokens runs the authorization-code grant for the env's app and
// returns its access and refresh tokens.
func (e *env) codeTokens(t *testing.T) (access, refresh string) {
	t.Helper()
	r := e.post(t, oauth.PathToken, codeForm(e, e.issueCode(t, e.app, challenge, "svc:orders:read"), verifier), nil, false)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	return r.str("access_token"), r.str("refresh_token")
}

// ccToken returns a client-credentials access token of the client.
func (e *env) ccToken(t *testing.T, client *[2]string) string {
	t.Helper()
	r := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, client, false)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	return r.str("access_token")
}

// Revocation answers 200 only when the token is revoked or was dead
// already; a token it cannot revoke is an error, and nothing changes.
func TestRevocationAnswers(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		auth := &[2]string{e.app.ClientID, e.secret}
		other := &[2]string{e.other.ClientID, e.otherSec}
		revoke := func(token string, client *[2]string) response {
			return e.post(t, oauth.PathRevoke, url.Values{"token": {token}}, client, false)
		}
		active := func(token string) bool {
			_, err := e.verifier.Verify(context.Background(), token)
			return err == nil
		}
		refreshes := func(refresh string) bool {
			r := e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, auth, false)
			return r.status == http.StatusOK
		}

		cc := e.ccToken(t, auth)
		access, refresh := e.codeTokens(t)
		user := e.signIn(t, "admin@example.com", "correct horse")

		for _, tc := range []struct {
			name   string
			token  string
			client *[2]string
			status int
			code   string
			says   string
		}{
			{"own client-credentials token", cc, auth, 400, "unsupported_token_type", "cannot be revoked"},
			{"another client's client-credentials token", cc, other, 400, "unauthorized_client", "another client"},
			{"another client's authorization-code token", access, other, 400, "unauthorized_client", "another client"},
			{"another client's refresh token", refresh, other, 400, "unauthorized_client", "another client"},
			{"product user token", user, auth, 400, "unsupported_token_type", "product user token"},
			{"unknown token", "no-such-token", auth, 200, "", ""},
			{"no token", "", auth, 400, "invalid_request", "token is required"},
			{"wrong client secret", refresh, &[2]string{e.app.ClientID, "wrong"}, 401, "invalid_client", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := revoke(tc.token, tc.client)
				assert.Equal(t, tc.status, r.status, r.raw)
				assert.Equal(t, tc.code, r.str("error"))
				assert.Contains(t, r.str("error_description"), tc.says)
				assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
			})
		}
		require.True(t, active(cc), "the client-credentials token is untouched")
		require.True(t, active(access), "no refused revocation revoked anything")

		t.Run("authorization-code access token revokes its family", func(t *testing.T) {
			r := revoke(access, auth)
			require.Equal(t, 200, r.status, r.raw)
			assert.Empty(t, r.raw)
			assert.False(t, active(access), "the access token is refused")
			assert.False(t, refreshes(refresh), "its refresh token is revoked with the family")
			assert.Equal(t, 200, revoke(access, auth).status, "revoking again succeeds")
			assert.Equal(t, 200, revoke(refresh, auth).status, "and so does revoking its refresh token")
		})
		t.Run("refresh token revokes its family", func(t *testing.T) {
			access, refresh := e.codeTokens(t)
			r := e.post(t, oauth.PathRevoke, url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}}, auth, true)
			require.Equal(t, 200, r.status, r.raw)
			assert.False(t, active(access))
			assert.False(t, refreshes(refresh))
		})
		t.Run("an expired client-credentials token is dead already", func(t *testing.T) {
			cc := e.ccToken(t, auth)
			e.clock.Advance(oauth.DefaultAccessTokenTTL + time.Minute)
			assert.Equal(t, 200, revoke(cc, auth).status)
		})
	})
}

// Rotating a secret with revoke_tokens ends the app's authorization-code
// tokens at once; its client-credentials tokens live out their lifetime,
// as the answer says.
func TestRotateSecretRevokesTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		admin := e.signIn(t, "admin@example.com", "correct horse")
		path := oauth.PathApps + "/" + e.app.ClientID + "/rotate-secret"
		active := func(token string) bool {
			_, err := e.verifier.Verify(context.Background(), token)
			return err == nil
		}
		cc := e.ccToken(t, &[2]string{e.app.ClientID, e.secret})
		kept, _ := e.codeTokens(t)

		// Without revoke_tokens, the tokens stay, and the answer says so.
		r := e.postJSON(t, path, map[string]any{}, admin)
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, false, r.body["tokens_revoked"])
		assert.Contains(t, r.str("tokens"), "stay valid")
		assert.True(t, active(kept))
		e.secret = r.str("client_secret")

		access1, refresh1 := e.codeTokens(t)
		access2, _ := e.codeTokens(t)
		otherAccess := e.ccToken(t, &[2]string{e.other.ClientID, e.otherSec})

		r = e.postJSON(t, path, map[string]any{"revoke_tokens": true}, admin)
		require.Equal(t, 200, r.status, r.raw)
		newSecret := r.str("client_secret")
		assert.Len(t, newSecret, 43)
		assert.Equal(t, true, r.body["tokens_revoked"])
		assert.EqualValues(t, 3, r.body["revoked_families"], "the three authorizations")
		until, err := time.Parse(time.RFC3339, r.str("access_tokens_valid_until"))
		require.NoError(t, err)
		assert.WithinDuration(t, e.clock.Now().Add(oauth.DefaultAccessTokenTTL), until, time.Second)
		assert.Contains(t, r.str("tokens"), "client-credentials access tokens cannot be revoked")

		for _, tok := range []string{kept, access1, access2} {
			assert.False(t, active(tok), "an authorization-code token fails at once")
		}
		refreshed := e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh1}}, &[2]string{e.app.ClientID, newSecret}, false)
		assert.Equal(t, "invalid_grant", refreshed.str("error"), "and so does its refresh token")
		assert.True(t, active(cc), "a client-credentials token lives out its hour")
		assert.True(t, active(otherAccess), "another app's tokens are untouched")

		e.secret = newSecret
		fresh, _ := e.codeTokens(t)
		assert.True(t, active(fresh), "the app authorizes anew")

		for _, tc := range []struct {
			name string
			body any
		}{
			{"unknown field", map[string]any{"revoke": true}},
			{"not a boolean", map[string]any{"revoke_tokens": "yes"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.postJSON(t, path, tc.body, admin)
				assert.Equal(t, 400, r.status, r.raw)
				assert.Equal(t, "invalid_request", r.str("error"))
			})
		}
		t.Run("empty body", func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.http.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+admin)
			r := do(t, req)
			assert.Equal(t, 200, r.status, r.raw)
			assert.Equal(t, false, r.body["tokens_revoked"])
		})
	})
}
