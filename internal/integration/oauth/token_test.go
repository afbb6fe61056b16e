package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
)

const verifier = "abcdefghijklmnopqrstuvwxyz0123456789-._~ABCDEFG"

var challenge = oauth.S256Challenge(verifier)

func TestClientCredentials(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		body := func(extra url.Values) url.Values {
			v := url.Values{"grant_type": {"client_credentials"}, "client_id": {e.app.ClientID}, "client_secret": {e.secret}}
			for k, vs := range extra {
				v[k] = vs
			}
			return v
		}
		basic := &[2]string{e.app.ClientID, e.secret}
		ccOnly := url.Values{"grant_type": {"client_credentials"}}

		for _, path := range []string{oauth.PathToken, edgeTokenPath, v1TokenPath} {
			for _, tc := range []struct {
				name   string
				form   url.Values
				basic  *[2]string
				asJSON bool
			}{
				{"form with secret in body", body(nil), nil, false},
				{"JSON with secret in body", body(nil), nil, true},
				{"form with HTTP Basic", ccOnly, basic, false},
			} {
				t.Run(path+" "+tc.name, func(t *testing.T) {
					r := e.post(t, path, tc.form, tc.basic, tc.asJSON)
					require.Equal(t, http.StatusOK, r.status, r.raw)
					assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
					assert.Equal(t, "bearer", r.str("token_type"))
					assert.EqualValues(t, 3600, r.body["expires_in"])
					assert.Equal(t, appScopes, r.str("scope"))
					assert.Equal(t, orgID, r.str("organization_id"))
					assert.Equal(t, []any{branch1}, r.body["branch_ids"])
					assert.NotContains(t, r.body, "refresh_token")
					c, err := e.verifier.Verify(context.Background(), r.str("access_token"))
					require.NoError(t, err)
					assert.Equal(t, e.app.ID, c.Subject)
					assert.Equal(t, e.app.ClientID, c.ClientID)
					assert.Equal(t, "Route Planner", c.AppName)
					assert.Equal(t, []string{branch1}, c.BranchIDs)
					assert.Equal(t, orgID, c.OrganizationID)
					assert.Equal(t, c.IssuedAt+3600, c.ExpiresAt)
				})
			}
		}

		t.Run("scope narrows to a subset", func(t *testing.T) {
			r := e.post(t, oauth.PathToken, body(url.Values{"scope": {"svc:orders:read"}}), nil, false)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, "svc:orders:read", r.str("scope"))
		})

		errorCases := []struct {
			name   string
			path   string
			form   url.Values
			basic  *[2]string
			ct     string
			status int
			code   string
		}{
			{"scope beyond the app", oauth.PathToken, body(url.Values{"scope": {"svc:orders:read svc:invoices:read"}}), nil, "", 400, "invalid_scope"},
			{"wrong secret in body", oauth.PathToken, url.Values{"grant_type": {"client_credentials"}, "client_id": {e.app.ClientID}, "client_secret": {"nope"}}, nil, "", 401, "invalid_client"},
			{"wrong secret in Basic", oauth.PathToken, ccOnly, &[2]string{e.app.ClientID, "nope"}, "", 401, "invalid_client"},
			{"unknown client", oauth.PathToken, url.Values{"grant_type": {"client_credentials"}, "client_id": {"00000000-0000-4000-8000-000000000000"}, "client_secret": {e.secret}}, nil, "", 401, "invalid_client"},
			{"no client", oauth.PathToken, ccOnly, nil, "", 401, "invalid_client"},
			{"another app's secret", oauth.PathToken, url.Values{"grant_type": {"client_credentials"}, "client_id": {e.app.ClientID}, "client_secret": {e.otherSec}}, nil, "", 401, "invalid_client"},
			{"Basic and body secret both", oauth.PathToken, body(nil), basic, "", 400, "invalid_request"},
			{"no grant type", oauth.PathToken, url.Values{"client_id": {e.app.ClientID}, "client_secret": {e.secret}}, nil, "", 400, "invalid_request"},
			{"unknown grant type", oauth.PathToken, url.Values{"grant_type": {"password"}, "client_id": {e.app.ClientID}, "client_secret": {e.secret}}, nil, "", 400, "unsupported_grant_type"},
			{"code grant on the edge endpoint", edgeTokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}}, basic, "", 400, "unsupported_grant_type"},
			{"refresh grant on /v1/oauth/token", v1TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, basic, "", 400, "unsupported_grant_type"},
			{"duplicate parameter", oauth.PathToken, url.Values{"grant_type": {"client_credentials", "client_credentials"}}, basic, "", 400, "invalid_request"},
			{"text/plain body", oauth.PathToken, body(nil), nil, "text/plain", 400, "invalid_request"},
		}
		for _, tc := range errorCases {
			t.Run(tc.name, func(t *testing.T) {
				var r response
				if tc.ct != "" {
					req, err := http.NewRequest(http.MethodPost, e.http.URL+tc.path, strings.NewReader(tc.form.Encode()))
					require.NoError(t, err)
					req.Header.Set("Content-Type", tc.ct)
					r = do(t, req)
				} else {
					r = e.post(t, tc.path, tc.form, tc.basic, false)
				}
				assert.Equal(t, tc.status, r.status, r.raw)
				assert.Equal(t, tc.code, r.str("error"))
				assert.NotEmpty(t, r.str("error_description"))
				assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
				if tc.code == "invalid_client" {
					want := "Basic"
					assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), want), r.header.Get("WWW-Authenticate"))
				}
			})
		}

		t.Run("a bad JSON body", func(t *testing.T) {
			for _, raw := range []string{`[1,2]`, `{"grant_type": 5}`, `{"a":"b"} {"c":"d"}`, `nul`, ``} {
				req, err := http.NewRequest(http.MethodPost, e.http.URL+oauth.PathToken, strings.NewReader(raw))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				r := do(t, req)
				assert.Equal(t, 400, r.status, raw)
				assert.Equal(t, "invalid_request", r.str("error"), raw)
			}
		})
	})
}

func codeForm(e *env, code, verifier string) url.Values {
	return url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {e.app.ClientID}, "client_secret": {e.secret}, "code_verifier": {verifier},
	}
}

func TestAuthorizationCode(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		t.Run("exchange, then replay revokes what the code issued", func(t *testing.T) {
			code := e.issueCode(t, e.app, challenge, "svc:orders:read svc:accounts:read")
			r := e.post(t, oauth.PathToken, codeForm(e, code, verifier), nil, true)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, "bearer", r.str("token_type"))
			assert.EqualValues(t, 3600, r.body["expires_in"])
			assert.Equal(t, "svc:orders:read svc:accounts:read", r.str("scope"))
			assert.NotContains(t, r.body, "branch_ids")
			refresh := r.str("refresh_token")
			require.NotEmpty(t, refresh)
			access := r.str("access_token")
			c, err := e.verifier.Verify(context.Background(), access)
			require.NoError(t, err)
			assert.Equal(t, adminID, c.Subject)
			assert.Equal(t, orgID, c.OrganizationID)
			assert.False(t, c.ClientCredentials())
			assert.Nil(t, c.BranchIDs)

			again := e.post(t, oauth.PathToken, codeForm(e, code, verifier), nil, false)
			assert.Equal(t, 400, again.status)
			assert.Equal(t, "invalid_grant", again.str("error"))

			_, err = e.verifier.Verify(context.Background(), access)
			assert.True(t, apierrors.HasCode(err, apierrors.CodeInvalidToken), "the access token from a replayed code is revoked: %v", err)
			rr := e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, nil, false)
			assert.Equal(t, "invalid_grant", rr.str("error"), "the refresh token from a replayed code is revoked")
		})

		t.Run("a failed client authentication does not spend the code", func(t *testing.T) {
			code := e.issueCode(t, e.app, challenge, "svc:orders:read")
			bad := codeForm(e, code, verifier)
			bad.Set("client_secret", "wrong")
			r := e.post(t, oauth.PathToken, bad, nil, false)
			assert.Equal(t, 401, r.status)
			r = e.post(t, oauth.PathToken, codeForm(e, code, verifier), nil, false)
			assert.Equal(t, 200, r.status, r.raw)
		})

		failures := []struct {
			name   string
			mutate func(url.Values)
			before func()
			code   string
		}{
			{"wrong verifier", func(v url.Values) { v.Set("code_verifier", strings.Repeat("x", 43)) }, nil, "invalid_grant"},
			{"verifier too short", func(v url.Values) { v.Set("code_verifier", verifier[:42]) }, nil, "invalid_grant"},
			{"the challenge sent as a plain verifier", func(v url.Values) { v.Set("code_verifier", challenge) }, nil, "invalid_grant"},
			{"no verifier", func(v url.Values) { v.Del("code_verifier") }, nil, "invalid_request"},
			{"redirect URI differs", func(v url.Values) { v.Set("redirect_uri", redirect+"/") }, nil, "invalid_grant"},
			{"no redirect URI", func(v url.Values) { v.Del("redirect_uri") }, nil, "invalid_grant"},
			{"unknown code", func(v url.Values) { v.Set("code", "nope") }, nil, "invalid_grant"},
			{"expired after 60 s", nil, func() { e.clock.Advance(61 * time.Second) }, "invalid_grant"},
		}
		for _, tc := range failures {
			t.Run(tc.name, func(t *testing.T) {
				code := e.issueCode(t, e.app, challenge, "svc:orders:read")
				form := codeForm(e, code, verifier)
				if tc.mutate != nil {
					tc.mutate(form)
				}
				if tc.before != nil {
					tc.before()
				}
				r := e.post(t, oauth.PathToken, form, nil, false)
				assert.Equal(t, 400, r.status, r.raw)
				assert.Equal(t, tc.code, r.str("error"))
			})
		}

		t.Run("a code of another client", func(t *testing.T) {
			code := e.issueCode(t, e.other, challenge, "svc:orders:read")
			r := e.post(t, oauth.PathToken, codeForm(e, code, verifier), nil, false)
			assert.Equal(t, 400, r.status)
			assert.Equal(t, "invalid_grant", r.str("error"))
		})
	})
}

func TestCheckAuthorization(t *testing.T) {
	eachBackend(t, checkAuthorization)
}

func checkAuthorization(t *testing.T, e *env) {
	ok := oauth.AuthorizationRequest{
		ClientID: e.app.ClientID, RedirectURI: redirect, ResponseType: "code",
		CodeChallenge: challenge, CodeChallengeMethod: "S256", Scope: "svc:orders:read", State: "s",
	}
	cases := []struct {
		name       string
		mutate     func(*oauth.AuthorizationRequest)
		code       string
		redirected bool // false: shown, never redirected
	}{
		{"valid", func(*oauth.AuthorizationRequest) {}, "", true},
		{"unknown client", func(r *oauth.AuthorizationRequest) { r.ClientID = "00000000-0000-4000-8000-000000000000" }, "invalid_request", false},
		{"no client", func(r *oauth.AuthorizationRequest) { r.ClientID = "" }, "invalid_request", false},
		{"redirect URI with a trailing slash", func(r *oauth.AuthorizationRequest) { r.RedirectURI = redirect + "/" }, "invalid_request", false},
		{"redirect URI with a query", func(r *oauth.AuthorizationRequest) { r.RedirectURI = redirect + "?x=1" }, "invalid_request", false},
		{"redirect URI in upper case", func(r *oauth.AuthorizationRequest) { r.RedirectURI = strings.ToUpper(redirect) }, "invalid_request", false},
		{"no redirect URI", func(r *oauth.AuthorizationRequest) { r.RedirectURI = "" }, "invalid_request", false},
		{"plain challenge", func(r *oauth.AuthorizationRequest) { r.CodeChallengeMethod = "plain" }, "invalid_request", true},
		{"no challenge method", func(r *oauth.AuthorizationRequest) { r.CodeChallengeMethod = "" }, "invalid_request", true},
		{"no challenge", func(r *oauth.AuthorizationRequest) { r.CodeChallenge = "" }, "invalid_request", true},
		{"challenge of the wrong length", func(r *oauth.AuthorizationRequest) { r.CodeChallenge = challenge[:40] }, "invalid_request", true},
		{"response type token", func(r *oauth.AuthorizationRequest) { r.ResponseType = "token" }, "unsupported_response_type", true},
		{"scope beyond the app", func(r *oauth.AuthorizationRequest) { r.Scope = "svc:orders:read svc:invoices:write" }, "invalid_scope", true},
		{"no scope", func(r *oauth.AuthorizationRequest) { r.Scope = "" }, "invalid_scope", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mutate(&r)
			app, scopes, err := e.srv.CheckAuthorization(context.Background(), r)
			if tc.code == "" {
				require.NoError(t, err)
				assert.Equal(t, []string{"svc:orders:read"}, scopes)
				return
			}
			assert.Equal(t, tc.code, apierrors.CodeOf(err))
			assert.Equal(t, tc.redirected, app != nil)
		})
	}
}

func TestRefresh(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		start := func(t *testing.T) string {
			r := e.post(t, oauth.PathToken, codeForm(e, e.issueCode(t, e.app, challenge, "svc:orders:read"), verifier), nil, false)
			require.Equal(t, 200, r.status, r.raw)
			return r.str("refresh_token")
		}
		refresh := func(t *testing.T, token string, auth bool) response {
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}}
			if auth {
				form.Set("client_id", e.app.ClientID)
				form.Set("client_secret", e.secret)
			}
			return e.post(t, oauth.PathToken, form, nil, false)
		}

		t.Run("rotation, and reuse revokes the family including the newest", func(t *testing.T) {
			first := start(t)
			r := refresh(t, first, false)
			require.Equal(t, 200, r.status, r.raw)
			second := r.str("refresh_token")
			require.NotEmpty(t, second)
			assert.NotEqual(t, first, second)
			assert.Equal(t, "svc:orders:read", r.str("scope"))
			access := r.str("access_token")
			_, err := e.verifier.Verify(context.Background(), access)
			require.NoError(t, err)

			r = refresh(t, second, true)
			require.Equal(t, 200, r.status, r.raw)
			third := r.str("refresh_token")

			reuse := refresh(t, first, false)
			assert.Equal(t, 400, reuse.status)
			assert.Equal(t, "invalid_grant", reuse.str("error"))
			newest := refresh(t, third, false)
			assert.Equal(t, "invalid_grant", newest.str("error"), "the newest member is revoked too")
			_, err = e.verifier.Verify(context.Background(), access)
			assert.Error(t, err, "access tokens of the family are revoked")
		})

		t.Run("another client's authentication", func(t *testing.T) {
			token := start(t)
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {e.other.ClientID}, "client_secret": {e.otherSec}}
			r := e.post(t, oauth.PathToken, form, nil, false)
			assert.Equal(t, "invalid_grant", r.str("error"))
			assert.Equal(t, 200, refresh(t, token, true).status, "a refused request spends nothing")
		})

		t.Run("a wrong client secret", func(t *testing.T) {
			token := start(t)
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {e.app.ClientID}, "client_secret": {"nope"}}
			assert.Equal(t, 401, e.post(t, oauth.PathToken, form, nil, false).status)
			assert.Equal(t, 200, refresh(t, token, false).status)
		})

		t.Run("unknown and expired", func(t *testing.T) {
			assert.Equal(t, "invalid_grant", refresh(t, "nope", false).str("error"))
			assert.Equal(t, "invalid_request", refresh(t, "", false).str("error"))
		})

		t.Run("50 concurrent refreshes of one token: exactly one succeeds", func(t *testing.T) {
			token := start(t)
			var wg sync.WaitGroup
			statuses := make([]response, 50)
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = refresh(t, token, false)
				}()
			}
			wg.Wait()
			ok := 0
			var winner string
			for _, r := range statuses {
				if r.status == 200 {
					ok++
					winner = r.str("refresh_token")
				} else {
					assert.Equal(t, "invalid_grant", r.str("error"), r.raw)
				}
			}
			require.Equal(t, 1, ok)
			assert.Equal(t, "invalid_grant", refresh(t, winner, false).str("error"), "the reuse revoked the winner's family")
		})
	})
}

func TestRefreshExpires(t *testing.T) {
	e := newEnv(t, backends[1])
	r := e.post(t, oauth.PathToken, codeForm(e, e.issueCode(t, e.app, challenge, "svc:orders:read"), verifier), nil, false)
	require.Equal(t, 200, r.status)
	e.clock.Advance(30*24*time.Hour + time.Second)
	rr := e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.str("refresh_token")}}, nil, false)
	assert.Equal(t, "invalid_grant", rr.str("error"))
	assert.Contains(t, rr.str("error_description"), "expired")
}
