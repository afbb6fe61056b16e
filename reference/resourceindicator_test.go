package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// TestResourceIndicators drives RFC 8707 through the server, on SQLite and
// PostgreSQL, with golang.org/x/oauth2: the resource of the protected
// resource metadata, named on the authorization request, makes every
// access token of the grant (the code's and each refresh's) carry aud
// ["authenticated", resource]; without it aud stays "authenticated"; the
// API takes both. Another resource, or two, is invalid_target, at the
// authorization (a redirect back to the client) and at the token
// endpoint, and nothing is issued.
func TestResourceIndicators(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			base, c := rvServed(t, db)

			res, err := http.Get(base + "/.well-known/oauth-protected-resource")
			require.NoError(t, err)
			var meta struct {
				Resource string `json:"resource"`
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&meta))
			res.Body.Close()
			require.NotEmpty(t, meta.Resource)
			resource := meta.Resource
			both := []any{"authenticated", resource}

			conf := &oauth2.Config{
				ClientID: c.clientID, ClientSecret: c.secret, RedirectURL: rvRedirect, Scopes: []string{"svc:vehicles:read"},
				Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInHeader},
			}
			codeFlow := func(t *testing.T, opts ...oauth2.AuthCodeOption) *oauth2.Token {
				t.Helper()
				pkce := oauth2.GenerateVerifier()
				code := rvConsent(t, base, conf.AuthCodeURL("ri-state", append(opts, oauth2.S256ChallengeOption(pkce))...), c)
				tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
				require.NoError(t, err)
				return tok
			}

			t.Run("the authorization's resource", func(t *testing.T) {
				tok := codeFlow(t, oauth2.SetAuthURLParam("resource", resource))
				assert.Equal(t, both, claimsOf(t, tok.AccessToken)["aud"])
				assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status, "the API takes it")

				res, body := rvRefresh(t, base, c, tok.RefreshToken)
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				refreshed := body["access_token"].(string)
				assert.Equal(t, both, claimsOf(t, refreshed)["aud"], "the family keeps the resource")
				assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, refreshed).status)

				res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"},
					"refresh_token": {body["refresh_token"].(string)}, "resource": {"https://other.example/api"}}, c.clientID, c.secret)
				assert.Equal(t, http.StatusBadRequest, res.StatusCode)
				assert.Equal(t, "invalid_target", body["error"])

				res, body = introspect(t, base, c, refreshed)
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				assert.Equal(t, both, body["aud"], "introspection shows the aud")
			})

			t.Run("none: aud as before", func(t *testing.T) {
				tok := codeFlow(t)
				assert.Equal(t, "authenticated", claimsOf(t, tok.AccessToken)["aud"])
				assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)
			})

			t.Run("named at the token request", func(t *testing.T) {
				pkce := oauth2.GenerateVerifier()
				code := rvConsent(t, base, conf.AuthCodeURL("ri-state", oauth2.S256ChallengeOption(pkce)), c)
				tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce), oauth2.SetAuthURLParam("resource", resource))
				require.NoError(t, err)
				assert.Equal(t, both, claimsOf(t, tok.AccessToken)["aud"])
			})

			t.Run("another resource at the authorization goes back to the client", func(t *testing.T) {
				client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				for _, resources := range [][]string{{"https://other.example/api"}, {resource, resource + "/v2"}, {"not a uri"}} {
					authURL := conf.AuthCodeURL("ri-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
					for _, r := range resources {
						authURL += "&resource=" + url.QueryEscape(r)
					}
					res, err := client.Get(authURL)
					require.NoError(t, err)
					res.Body.Close()
					require.Equal(t, http.StatusFound, res.StatusCode, resources)
					back, err := url.Parse(res.Header.Get("Location"))
					require.NoError(t, err)
					assert.Equal(t, "invalid_target", back.Query().Get("error"), "%v: %s", resources, back)
					assert.Equal(t, "ri-state", back.Query().Get("state"))
				}
			})

			t.Run("client credentials", func(t *testing.T) {
				cc := func(resources ...string) (*http.Response, map[string]any) {
					return postForm(t, base+"/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}, "resource": resources}, c.clientID, c.secret)
				}
				res, body := cc(resource)
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				assert.Equal(t, both, claimsOf(t, body["access_token"].(string))["aud"])
				assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, body["access_token"].(string)).status)

				res, body = cc(resource, resource)
				require.Equal(t, http.StatusOK, res.StatusCode, "the same resource twice is one: %v", body)

				for _, bad := range [][]string{{"https://other.example/api"}, {resource, "https://other.example/api"}, {""}} {
					res, body = cc(bad...)
					assert.Equal(t, http.StatusBadRequest, res.StatusCode, bad)
					assert.Equal(t, "invalid_target", body["error"], bad)
					assert.Nil(t, body["access_token"])
				}

				res, body = postForm(t, base+"/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}, "resource": {"https://other.example/api"}}, c.clientID, "wrong")
				assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the client is authenticated first")
				assert.Equal(t, "invalid_client", body["error"])
			})
		})
	}
}

// introspect introspects token at base as c's app.
func introspect(t *testing.T, base string, c rvTenant, token string) (*http.Response, map[string]any) {
	t.Helper()
	return postForm(t, base+oauth.PathIntrospect, url.Values{"token": {token}}, c.clientID, c.secret)
}
