package oauth_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
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
				for _, path := range []string{oauth.PathToken, edgeTokenPath, v1TokenPath} {
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
// client, through the real pages over HTTP: the authorize endpoint sends
// the browser to sign in, the admin signs in, approves for the organization
// on the consent page, and the redirect back to the client carries the code
// and the client's state.
func (e *env) consent(t *testing.T, authURL string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse // the client's redirect URI: stop here
		}
		return nil
	}}
	page := func(res *http.Response, err error) (*http.Response, string) {
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}

	res, body := page(browser.Get(authURL))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, ">Sign in<")
	login := hiddenFields(body)
	login.Set("email", "admin@example.com")
	login.Set("password", "correct horse")
	res, body = page(browser.PostForm(e.http.URL+oauth.PathLogin, login))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, "Route Planner")
	require.Contains(t, body, ">Approve<")

	approve := hiddenFields(body)
	approve.Set("organization_id", orgID)
	approve.Set("decision", "approve")
	res, body = page(browser.PostForm(e.http.URL+oauth.PathConsent, approve))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	want, err := url.Parse(authURL)
	require.NoError(t, err)
	assert.Equal(t, want.Query().Get("state"), back.Query().Get("state"), "the state round-trips")
	require.NotEmpty(t, back.Query().Get("code"))
	return back.Query().Get("code")
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// hiddenFields returns the hidden inputs of a page's form.
func hiddenFields(page string) url.Values {
	v := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}
