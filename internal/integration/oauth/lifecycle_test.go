package oauth_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// lcSetMemberships replaces the memberships of the directory's user with
// id: the host ends or restores a membership.
func lcSetMemberships(t *testing.T, e *env, id string, ms []oauth.Membership) {
	t.Helper()
	d := e.srv.Directory.(*directory)
	d.mu.Lock()
	defer d.mu.Unlock()
	for email, u := range d.users {
		if u.ID == id {
			u.memberships = ms
			d.users[email] = u
			return
		}
	}
	t.Fatalf("no user %s", id)
}

// lcIssueCode issues a code of app for the user in the organization, as
// the consent step does.
func lcIssueCode(t *testing.T, e *env, app *oauth.App, userID string) string {
	t.Helper()
	req := oauth.AuthorizationRequest{
		ClientID: app.ClientID, RedirectURI: redirect, ResponseType: "code",
		CodeChallenge: challenge, CodeChallengeMethod: "S256", Scope: "svc:orders:read", State: "st",
	}
	checked, scopes, err := e.srv.CheckAuthorization(context.Background(), req)
	require.NoError(t, err)
	code, err := e.srv.IssueCode(context.Background(), checked, req, scopes, userID, orgID)
	require.NoError(t, err)
	return code
}

// lcExchange posts a code exchange authenticated as app with secret.
func lcExchange(t *testing.T, e *env, app *oauth.App, secret, code string) response {
	t.Helper()
	return e.post(t, oauth.PathToken, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier},
	}, &[2]string{app.ClientID, secret}, false)
}

// lcRefresh posts a refresh grant that names no client.
func lcRefresh(t *testing.T, e *env, token string) response {
	t.Helper()
	return e.post(t, oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}}, nil, false)
}

// lcRevoked reports whether the verifier refuses the access token as
// revoked.
func lcRevoked(t *testing.T, e *env, access string) bool {
	t.Helper()
	_, err := e.verifier.Verify(context.Background(), access)
	if err == nil {
		return false
	}
	require.True(t, apierrors.HasCode(err, apierrors.CodeInvalidToken), "%v", err)
	return strings.Contains(err.Error(), "revoked")
}

// A code's client, redirect URI and verifier are checked before it is
// spent: a request that fails them spends nothing and revokes nothing.
func TestCodeCheckedBeforeSpent(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		t.Run("another client cannot spend a user's code", func(t *testing.T) {
			code := lcIssueCode(t, e, e.app, adminID)
			r := lcExchange(t, e, e.other, e.otherSec, code)
			assert.Equal(t, 400, r.status, r.raw)
			assert.Equal(t, "invalid_grant", r.str("error"))
			r = lcExchange(t, e, e.app, e.secret, code)
			assert.Equal(t, 200, r.status, "the code's own client still redeems it: %s", r.raw)
		})
		t.Run("a replay by another client revokes nothing", func(t *testing.T) {
			code := lcIssueCode(t, e, e.app, adminID)
			r := lcExchange(t, e, e.app, e.secret, code)
			require.Equal(t, 200, r.status, r.raw)
			replay := lcExchange(t, e, e.other, e.otherSec, code)
			assert.Equal(t, "invalid_grant", replay.str("error"))
			assert.False(t, lcRevoked(t, e, r.str("access_token")), "another client's replay revoked the user's access token")
			assert.Equal(t, 200, lcRefresh(t, e, r.str("refresh_token")).status, "another client's replay revoked the user's refresh token")
		})
		t.Run("a replay by its own client revokes", func(t *testing.T) {
			code := lcIssueCode(t, e, e.app, adminID)
			r := lcExchange(t, e, e.app, e.secret, code)
			require.Equal(t, 200, r.status, r.raw)
			assert.Equal(t, "invalid_grant", lcExchange(t, e, e.app, e.secret, code).str("error"))
			assert.True(t, lcRevoked(t, e, r.str("access_token")))
		})
		for _, tc := range []struct {
			name   string
			mutate func(url.Values)
		}{
			{"a wrong verifier spends nothing", func(v url.Values) { v.Set("code_verifier", strings.Repeat("x", 43)) }},
			{"a wrong redirect URI spends nothing", func(v url.Values) { v.Set("redirect_uri", redirect+"/other") }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code := lcIssueCode(t, e, e.app, adminID)
				bad := codeForm(e, code, verifier)
				tc.mutate(bad)
				r := e.post(t, oauth.PathToken, bad, nil, false)
				assert.Equal(t, "invalid_grant", r.str("error"), r.raw)
				r = lcExchange(t, e, e.app, e.secret, code)
				assert.Equal(t, 200, r.status, r.raw)
			})
		}
		t.Run("concurrent exchanges of one code: exactly one wins", func(t *testing.T) {
			code := lcIssueCode(t, e, e.app, adminID)
			rs := make([]response, 20)
			var wg sync.WaitGroup
			for i := range rs {
				wg.Go(func() { rs[i] = lcExchange(t, e, e.app, e.secret, code) })
			}
			wg.Wait()
			won := 0
			for _, r := range rs {
				if r.status == 200 {
					won++
				} else {
					assert.Equal(t, "invalid_grant", r.str("error"), r.raw)
				}
			}
			assert.Equal(t, 1, won)
		})
	})
}

// A client learns about its own tokens only.
func TestIntrospectionConfined(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		code := lcExchange(t, e, e.app, e.secret, lcIssueCode(t, e, e.app, adminID))
		require.Equal(t, 200, code.status, code.raw)
		cc := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, &[2]string{e.app.ClientID, e.secret}, false)
		require.Equal(t, 200, cc.status, cc.raw)
		otherCC := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, &[2]string{e.other.ClientID, e.otherSec}, false)
		require.Equal(t, 200, otherCC.status, otherCC.raw)

		for _, tc := range []struct {
			name   string
			token  string
			client *oauth.App
			secret string
			active bool
		}{
			{"own access token", code.str("access_token"), e.app, e.secret, true},
			{"own refresh token", code.str("refresh_token"), e.app, e.secret, true},
			{"own client-credentials token", cc.str("access_token"), e.app, e.secret, true},
			{"another client's access token", code.str("access_token"), e.other, e.otherSec, false},
			{"another client's refresh token", code.str("refresh_token"), e.other, e.otherSec, false},
			{"another client's client-credentials token", cc.str("access_token"), e.other, e.otherSec, false},
			{"the other client's own token", otherCC.str("access_token"), e.other, e.otherSec, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.post(t, oauth.PathIntrospect, url.Values{"token": {tc.token}}, &[2]string{tc.client.ClientID, tc.secret}, false)
				require.Equal(t, 200, r.status, r.raw)
				if tc.active {
					assert.Equal(t, true, r.body["active"])
					assert.Equal(t, tc.client.ClientID, r.str("client_id"))
					return
				}
				assert.JSONEq(t, `{"active":false}`, r.raw, "nothing but inactive about another client's token")
			})
		}
	})
}

// A user who leaves the organization loses what their refresh tokens gave.
func TestOffboardingEndsAccess(t *testing.T) {
	member := []oauth.Membership{{OrganizationID: orgID, Name: "Acme"}}
	eachBackend(t, func(t *testing.T, e *env) {
		t.Run("refresh after the membership ended", func(t *testing.T) {
			r := lcExchange(t, e, e.app, e.secret, lcIssueCode(t, e, e.app, memberID))
			require.Equal(t, 200, r.status, r.raw)
			lcSetMemberships(t, e, memberID, nil)
			refused := lcRefresh(t, e, r.str("refresh_token"))
			assert.Equal(t, 400, refused.status, refused.raw)
			assert.Equal(t, "invalid_grant", refused.str("error"))
			assert.True(t, lcRevoked(t, e, r.str("access_token")), "the family's access tokens are revoked")

			lcSetMemberships(t, e, memberID, member)
			assert.Equal(t, "invalid_grant", lcRefresh(t, e, r.str("refresh_token")).str("error"), "rejoining does not revive the family")
		})
		t.Run("code exchange after the membership ended", func(t *testing.T) {
			code := lcIssueCode(t, e, e.app, memberID)
			lcSetMemberships(t, e, memberID, nil)
			r := lcExchange(t, e, e.app, e.secret, code)
			assert.Equal(t, "invalid_grant", r.str("error"), r.raw)
			lcSetMemberships(t, e, memberID, member)
		})
		t.Run("RevokeUserFamilies ends every family of the user", func(t *testing.T) {
			first := lcExchange(t, e, e.app, e.secret, lcIssueCode(t, e, e.app, memberID))
			second := lcExchange(t, e, e.other, e.otherSec, lcIssueCode(t, e, e.other, memberID))
			bystander := lcExchange(t, e, e.app, e.secret, lcIssueCode(t, e, e.app, adminID))
			for _, r := range []response{first, second, bystander} {
				require.Equal(t, 200, r.status, r.raw)
			}
			n, err := e.store.RevokeUserFamilies(context.Background(), memberID, orgID, e.clock.Now())
			require.NoError(t, err)
			assert.GreaterOrEqual(t, n, 2)
			for _, r := range []response{first, second} {
				assert.True(t, lcRevoked(t, e, r.str("access_token")))
				assert.Equal(t, "invalid_grant", lcRefresh(t, e, r.str("refresh_token")).str("error"))
			}
			assert.False(t, lcRevoked(t, e, bystander.str("access_token")))
			assert.Equal(t, 200, lcRefresh(t, e, bystander.str("refresh_token")).status, "another user's family")
		})
	})
}

// A family lives RefreshMaxAge from its authorization, whatever its
// rotations; each refresh token still lives RefreshTokenTTL.
func TestRefreshMaxAge(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		start := e.clock.Now()
		end := start.Add(oauth.DefaultRefreshMaxAge)
		r := lcExchange(t, e, e.app, e.secret, lcIssueCode(t, e, e.app, adminID))
		require.Equal(t, 200, r.status, r.raw)
		token := r.str("refresh_token")
		for range 3 { // day 29, 58, 87: each rotation in time
			e.clock.Advance(29 * 24 * time.Hour)
			r = lcRefresh(t, e, token)
			require.Equal(t, 200, r.status, r.raw)
			token = r.str("refresh_token")
		}
		intro := e.post(t, oauth.PathIntrospect, url.Values{"token": {token}}, &[2]string{e.app.ClientID, e.secret}, false)
		assert.EqualValues(t, end.Unix(), intro.body["exp"], "the last refresh token expires with its family, not 30 days on")

		e.clock.Advance(end.Sub(e.clock.Now()) - 30*time.Minute)
		r = lcRefresh(t, e, token)
		require.Equal(t, 200, r.status, r.raw)
		assert.EqualValues(t, 1800, r.body["expires_in"], "the access token expires with its family")
		c, err := e.verifier.Verify(context.Background(), r.str("access_token"))
		require.NoError(t, err)
		assert.Equal(t, end.Unix(), c.ExpiresAt)

		e.clock.Advance(30 * time.Minute)
		refused := lcRefresh(t, e, r.str("refresh_token"))
		assert.Equal(t, 400, refused.status, refused.raw)
		assert.Equal(t, "invalid_grant", refused.str("error"))
		assert.Contains(t, refused.str("error_description"), "maximum age")
	})
}

// RefreshMaxAge configures the family's lifetime.
func TestRefreshMaxAgeConfigured(t *testing.T) {
	e := newEnv(t, backends[1])
	srv := *e.srv
	srv.RefreshMaxAge = 2 * time.Hour
	ctx := context.Background()
	tok, err := srv.ExchangeCode(ctx, e.app, lcIssueCode(t, e, e.app, adminID), redirect, verifier, "")
	require.NoError(t, err)
	e.clock.Advance(90 * time.Minute)
	tok, err = srv.Refresh(ctx, "", tok.RefreshToken, "")
	require.NoError(t, err)
	assert.Equal(t, 1800, tok.ExpiresIn)
	e.clock.Advance(30 * time.Minute)
	_, err = srv.Refresh(ctx, "", tok.RefreshToken, "")
	assert.Equal(t, apierrors.CodeInvalidGrant, apierrors.CodeOf(err))
}

// The grant a token came from is its oauth_grant_type claim, not its app
// name.
func TestClientCredentialsGrantExplicit(t *testing.T) {
	e := newEnv(t, backends[1])
	ctx := context.Background()
	app := func(branches []string) *oauth.App {
		return &oauth.App{ID: e.app.ID, ClientID: e.app.ClientID, OrganizationID: orgID, Scopes: e.app.Scopes, BranchIDs: branches}
	}
	for _, tc := range []struct {
		name     string
		app      *oauth.App
		branches []string
		code     string
	}{
		{"an app without a name is still limited to its branches", app([]string{branch1}), []string{branch1}, ""},
		{"an app with an empty branch list reaches no branch", app([]string{}), []string{}, ""},
		{"an app with no branch information is refused", app(nil), nil, apierrors.CodeUnauthorizedClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := e.srv.ClientCredentials(ctx, tc.app, "", "")
			if tc.code != "" {
				assert.Equal(t, tc.code, apierrors.CodeOf(err))
				assert.Nil(t, tok)
				return
			}
			require.NoError(t, err)
			c, err := e.verifier.Verify(ctx, tok.AccessToken)
			require.NoError(t, err)
			assert.True(t, c.ClientCredentials())
			assert.Equal(t, bearer.GrantClientCredentials, c.Grant)
			assert.Equal(t, tc.branches, c.BranchIDs)
			assert.Empty(t, c.FamilyID())
		})
	}
}
