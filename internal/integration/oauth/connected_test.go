package oauth_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// connectedAppsPath is the connected apps of org.
func connectedAppsPath(org string) string {
	return strings.Replace(oauth.PathConnectedApps, "{organization_id}", org, 1)
}

// call sends a request without a body, with a bearer token when not "".
func (e *env) call(t *testing.T, method, path, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// listed returns the entries of a connected apps answer by client id and
// kind.
func listed(t *testing.T, r response) map[[2]string]map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.raw)
	out := map[[2]string]map[string]any{}
	for _, d := range r.body["data"].([]any) {
		m := d.(map[string]any)
		out[[2]string{m["client_id"].(string), m["kind"].(string)}] = m
	}
	return out
}

func TestConnectedApps(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const otherOrg = "0b000000-0000-4000-8000-0000000000f9"
		admin := e.signIn(t, "admin@example.com", "correct horse")
		member := e.signIn(t, "member@example.com", "battery staple")

		// The organization's app gets a client-credentials token; its
		// other app is authorized by the admin.
		cc, err := e.srv.ClientCredentials(ctx, e.app, "", "")
		require.NoError(t, err)
		code := e.issueCode(t, e.other, challenge, "svc:orders:read")
		user, err := e.srv.ExchangeCode(ctx, e.other, code, redirect, verifier, "")
		require.NoError(t, err)
		// Another organization's app and consent are never listed.
		foreign, _, err := e.srv.RegisterApp(ctx, oauth.NewApp{OrganizationID: otherOrg, Name: "Foreign", Scopes: []string{"svc:orders:read"}})
		require.NoError(t, err)
		require.NoError(t, e.store.SaveGrant(ctx, &oauth.Grant{ClientID: e.app.ClientID, UserID: memberID, OrganizationID: otherOrg, Scopes: []string{"svc:orders:read"}}))

		apps := listed(t, e.call(t, http.MethodGet, connectedAppsPath(orgID), admin))
		require.Len(t, apps, 3, "two client-credentials apps and one consent")
		planner := apps[[2]string{e.app.ClientID, oauth.KindClientCredentials}]
		require.NotNil(t, planner)
		assert.Equal(t, "Route Planner", planner["name"])
		assert.Equal(t, []any{branch1}, planner["branch_ids"])
		assert.Equal(t, []any{}, planner["consented_by"])
		assert.NotNil(t, planner["last_used_at"], "the client-credentials token was issued")
		assert.Nil(t, planner["consented_at"])
		consented := apps[[2]string{e.other.ClientID, oauth.KindAuthorizationCode}]
		require.NotNil(t, consented)
		assert.Equal(t, "Other", consented["name"])
		assert.Equal(t, []any{adminID}, consented["consented_by"])
		assert.Equal(t, []any{"svc:orders:read"}, consented["scopes"])
		assert.Nil(t, consented["branch_ids"], "an authorization-code app sees every branch")
		assert.NotNil(t, consented["consented_at"])
		assert.NotNil(t, consented["last_used_at"])
		assert.Nil(t, consented["disconnected_at"])
		require.NotNil(t, apps[[2]string{e.other.ClientID, oauth.KindClientCredentials}])
		for k := range apps {
			assert.NotEqual(t, foreign.ClientID, k[0])
		}

		// Who may list: an admin of the organization, with a product user token.
		for _, tc := range []struct {
			name, path, token, code string
			status                  int
		}{
			{"member", connectedAppsPath(orgID), member, "insufficient_scope", 403},
			{"oauth token", connectedAppsPath(orgID), cc.AccessToken, "invalid_token_type", 403},
			{"no token", connectedAppsPath(orgID), "", "unauthorized", 401},
			{"other organization", connectedAppsPath(otherOrg), admin, "not_found", 404},
		} {
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				path := tc.path
				if method == http.MethodDelete {
					path += "/" + e.other.ClientID
				}
				r := e.call(t, method, path, tc.token)
				assert.Equal(t, tc.status, r.status, "%s %s: %s", method, tc.name, r.raw)
				assert.Equal(t, tc.code, r.str("error"), "%s %s", method, tc.name)
			}
		}
		r := e.call(t, http.MethodDelete, connectedAppsPath(orgID)+"/"+foreign.ClientID, admin)
		assert.Equal(t, 404, r.status, "another organization's app is not connected: %s", r.raw)

		// Disconnect the other app: its consent goes, its family is
		// revoked, it is disabled, its access token is cut off.
		cutoffs := &bearer.CutOffList{Source: e.store}
		v := &bearer.Verifier{Keys: e.verifier.Keys, Issuer: testIssuer, CutOffs: cutoffs, Now: e.clock.Now}
		require.NoError(t, cutoffs.Refresh(ctx))
		_, err = v.Verify(ctx, user.AccessToken)
		require.NoError(t, err)

		pending := e.issueCode(t, e.other, challenge, "svc:orders:read") // not redeemed before the disconnection
		r = e.call(t, http.MethodDelete, connectedAppsPath(orgID)+"/"+e.other.ClientID, admin)
		require.Equal(t, 200, r.status, r.raw)
		d := r.body["data"].(map[string]any)
		assert.EqualValues(t, 1, d["revoked_families"])
		assert.EqualValues(t, 2, d["removed_consents"], "one per authorization")
		assert.Equal(t, true, d["disabled"])

		_, err = e.srv.Refresh(ctx, "", user.RefreshToken, "")
		assert.ErrorContains(t, err, "revoked")
		_, err = e.srv.AuthenticateClient(ctx, e.other.ClientID, e.otherSec, "")
		assert.Error(t, err, "a disconnected app of the organization is disabled")
		_, err = v.Verify(ctx, user.AccessToken)
		assert.NoError(t, err, "before the list's refresh the token passes the cut-off check")
		require.NoError(t, cutoffs.Refresh(ctx))
		_, err = v.Verify(ctx, user.AccessToken)
		assert.ErrorContains(t, err, "disconnected")
		_, err = v.Verify(ctx, cc.AccessToken)
		assert.NoError(t, err, "another app's token keeps working")

		// A code issued before the disconnection is void; a family that a
		// code exchange saved during it fails at its first refresh.
		_, err = e.srv.ExchangeCode(ctx, e.other, pending, redirect, verifier, "")
		assert.ErrorContains(t, err, "invalid")
		raced := oauth.NewSecret()
		require.NoError(t, e.store.SaveRefreshToken(ctx, &oauth.RefreshToken{Hash: sha256Of(raced), FamilyID: "raced-family",
			ClientID: e.other.ClientID, UserID: adminID, OrganizationID: orgID, Scopes: []string{"svc:orders:read"},
			ExpiresAt: e.clock.Now().Add(time.Hour), AuthorizedAt: e.clock.Now().Add(-time.Second)}))
		e.srv.CutOffs = cutoffs
		_, err = e.srv.Refresh(ctx, "", raced, "")
		assert.ErrorContains(t, err, "disconnected")
		revoked, err := e.store.FamilyRevoked(ctx, "raced-family")
		require.NoError(t, err)
		assert.True(t, revoked)

		apps = listed(t, e.call(t, http.MethodGet, connectedAppsPath(orgID), admin))
		assert.Len(t, apps, 2, "the consent is gone: %v", apps)
		assert.NotNil(t, apps[[2]string{e.other.ClientID, oauth.KindClientCredentials}]["disconnected_at"])

		// A secret rotation enables the app again; its new tokens pass.
		rotation, err := e.srv.RotateAppSecret(ctx, e.other.ClientID, false)
		require.NoError(t, err)
		app, err := e.srv.AuthenticateClient(ctx, e.other.ClientID, rotation.ClientSecret, "")
		require.NoError(t, err)
		e.clock.Advance(time.Second)
		tok, err := e.srv.ClientCredentials(ctx, &oauth.App{ID: app.ID, ClientID: app.ClientID, Name: app.Name, OrganizationID: app.OrganizationID,
			Scopes: app.Scopes, BranchIDs: []string{}}, "", "")

		require.NoError(t, err)
		_, err = v.Verify(ctx, tok.AccessToken)
		assert.NoError(t, err)
	})
}
