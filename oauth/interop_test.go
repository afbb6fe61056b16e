package oauth_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/waybillhq/waybill/oauth"
)

// The standard Go client, golang.org/x/oauth2, unmodified, against the
// token service.
func TestInteropGoClient(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()

		for _, style := range []struct {
			name  string
			style oauth2.AuthStyle
		}{
			{"header", oauth2.AuthStyleInHeader},
			{"params", oauth2.AuthStyleInParams},
			{"autodetect", oauth2.AuthStyleAutoDetect},
		} {
			t.Run("clientcredentials "+style.name, func(t *testing.T) {
				for _, path := range []string{oauth.PathToken, oauth.PathEdgeToken, oauth.PathV1Token} {
					conf := clientcredentials.Config{
						ClientID: e.app.ClientID, ClientSecret: e.secret, TokenURL: e.http.URL + path,
						Scopes: []string{"svc:orders:read"}, AuthStyle: style.style,
					}
					tok, err := conf.Token(ctx)
					require.NoError(t, err, path)
					assert.Equal(t, "Bearer", tok.Type())
					assert.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, time.Minute)
					assert.Equal(t, orgID, tok.Extra("organization_id"))
					c, err := e.verifier.Verify(ctx, tok.AccessToken)
					require.NoError(t, err)
					assert.Equal(t, []string{"svc:orders:read"}, c.Scopes)
				}
			})
		}

		t.Run("clientcredentials with a wrong secret", func(t *testing.T) {
			conf := clientcredentials.Config{ClientID: e.app.ClientID, ClientSecret: "wrong", TokenURL: e.http.URL + oauth.PathToken}
			_, err := conf.Token(ctx)
			var re *oauth2.RetrieveError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "invalid_client", re.ErrorCode)
			assert.Equal(t, 401, re.Response.StatusCode)
		})

		t.Run("authorization code with PKCE, then refresh through a TokenSource", func(t *testing.T) {
			for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
				conf := &oauth2.Config{
					ClientID: e.app.ClientID, ClientSecret: e.secret, RedirectURL: redirect,
					Scopes: []string{"svc:orders:read", "svc:orders:write"},
					Endpoint: oauth2.Endpoint{
						AuthURL: e.http.URL + oauth.PathAuthorize, TokenURL: e.http.URL + oauth.PathToken, AuthStyle: style,
					},
				}
				pkce := oauth2.GenerateVerifier()
				authURL := conf.AuthCodeURL("xyz-state", oauth2.S256ChallengeOption(pkce))
				code := e.consent(t, authURL)

				tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(pkce))
				require.NoError(t, err)
				require.NotEmpty(t, tok.RefreshToken)
				assert.Equal(t, "svc:orders:read svc:orders:write", tok.Extra("scope"))

				// An expired token makes the TokenSource refresh; each refresh
				// rotates the refresh token.
				expired := *tok
				expired.Expiry = time.Now().Add(-time.Minute)
				next, err := conf.TokenSource(ctx, &expired).Token()
				require.NoError(t, err)
				assert.NotEqual(t, tok.AccessToken, next.AccessToken)
				assert.NotEqual(t, tok.RefreshToken, next.RefreshToken)
				c, err := e.verifier.Verify(ctx, next.AccessToken)
				require.NoError(t, err)
				assert.Equal(t, adminID, c.Subject)

				_, err = conf.TokenSource(ctx, &expired).Token()
				var re *oauth2.RetrieveError
				require.ErrorAs(t, err, &re, "the spent refresh token is refused")
				assert.Equal(t, "invalid_grant", re.ErrorCode)

				_, err = conf.Exchange(ctx, code, oauth2.VerifierOption(pkce))
				require.ErrorAs(t, err, &re, "a code is single use")
				assert.Equal(t, "invalid_grant", re.ErrorCode)
			}
		})
	})
}

// consent plays the user's part for an authorization URL built by a
// client: the request is checked as the authorize endpoint checks it, and
// the admin approves for the organization. The browser test drives the
// same through the real pages.
func (e *env) consent(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	q := u.Query()
	req := oauth.AuthorizationRequest{
		ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), ResponseType: q.Get("response_type"),
		CodeChallenge: q.Get("code_challenge"), CodeChallengeMethod: q.Get("code_challenge_method"),
		Scope: q.Get("scope"), State: q.Get("state"),
	}
	app, scopes, err := e.srv.CheckAuthorization(context.Background(), req)
	require.NoError(t, err)
	code, err := e.srv.IssueCode(context.Background(), app, req, scopes, adminID, orgID)
	require.NoError(t, err)
	return code
}
