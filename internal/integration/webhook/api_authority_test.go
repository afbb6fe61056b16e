package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/webhook"
)

// authorityEventID is the event of the deliveries of these tests.
const authorityEventID = "01900000-0000-7000-8000-0000000000e1"

// delivered stores a delivered event and its delivery to the endpoint, and
// returns the delivery's id.
func (e *env) delivered(t *testing.T, endpoint string) string {
	t.Helper()
	now := time.Now()
	e.addEvent(t, orgA, 1, authorityEventID, "quotation.created")
	return e.addDelivery(t, endpoint, orgA, 1, authorityEventID, "delivered", 1, now, now, nil)
}

// deliveryStatus returns the stored status of a delivery.
func (e *env) deliveryStatus(t *testing.T, id string) string {
	t.Helper()
	var s string
	require.NoError(t, e.db.QueryRow("SELECT status FROM waybill_webhook_deliveries WHERE id = $1", id).Scan(&s))
	return s
}

// A token with ScopeWrite may not change, nor send the deliveries of, an
// endpoint that gets what it could not read itself: a PATCH of any member
// (the URL or the status alone included) and a redelivery are 403
// insufficient_scope naming the missing read scopes, and change nothing.
// An app limited to some branches does not see an endpoint that gets other
// branches (404).
func TestChangesNeedWhatTheEndpointGets(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		owner := e.appToken(t, orgA, "owner", []string{a1, a2}, readAll...)
		// Every branch, ScopeWrite, and the read scope of quotations only.
		other := e.appToken(t, orgA, "other", []string{a1, a2}, read, write, "svc:quotations:read")
		oneBranch := e.appToken(t, orgA, "branch-app", []string{a1}, readAll...)
		enabled := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		disabled := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"account.*", "quotation.*"}}))["id"].(string)
		require.Equal(t, http.StatusOK, e.do(t, http.MethodPatch, endpoints(orgA)+"/"+disabled, owner, `{"status":"disabled"}`).status)
		branches := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}, "branch_ids": []string{a1, a2}}))["id"].(string)
		delivery := e.delivered(t, enabled)
		item := func(id string) string { return endpoints(orgA) + "/" + id }

		cases := []struct {
			name, token, id, method, path, body string
			status                              int
			code, scope                         string
		}{
			{"url", other, enabled, http.MethodPatch, item(enabled), `{"url":"https://1.0.0.1/mine"}`, 403, "insufficient_scope", "svc:accounts:read svc:vehicles:read"},
			{"disable", other, enabled, http.MethodPatch, item(enabled), `{"status":"disabled"}`, 403, "insufficient_scope", "svc:accounts:read svc:vehicles:read"},
			{"enable", other, disabled, http.MethodPatch, item(disabled), `{"status":"enabled"}`, 403, "insufficient_scope", "svc:accounts:read"},
			{"nothing", other, enabled, http.MethodPatch, item(enabled), `{}`, 403, "insufficient_scope", "svc:accounts:read svc:vehicles:read"},
			{"every type", other, enabled, http.MethodPatch, item(enabled), `{"event_types":["*"]}`, 403, "insufficient_scope", "svc:accounts:read svc:vehicles:read"},
			{"redeliver", other, enabled, http.MethodPost, item(enabled) + "/deliveries/" + delivery + "/redeliver", "", 403, "insufficient_scope", "svc:accounts:read svc:vehicles:read"},
			{"another branch: url", oneBranch, branches, http.MethodPatch, item(branches), `{"url":"https://1.0.0.1/mine"}`, 404, "not_found", ""},
			{"another branch: status", oneBranch, branches, http.MethodPatch, item(branches), `{"status":"disabled"}`, 404, "not_found", ""},
			{"every branch: redeliver", oneBranch, enabled, http.MethodPost, item(enabled) + "/deliveries/" + delivery + "/redeliver", "", 404, "not_found", ""},
		}
		for _, c := range cases {
			before := e.row(t, c.id)
			r := e.do(t, c.method, c.path, c.token, c.body)
			assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.raw)
			assert.Equal(t, c.code, r.code(), c.name)
			if c.scope != "" {
				assert.Contains(t, r.header.Get("WWW-Authenticate"), `scope="`+c.scope+`"`, c.name)
				assert.Contains(t, r.body["error_description"], "the token lacks", c.name)
			}
			assert.Equal(t, before, e.row(t, c.id), "%s changed nothing", c.name)
			assert.Equal(t, "owner", e.row(t, c.id).clientID, c.name)
		}
		assert.Equal(t, "delivered", e.deliveryStatus(t, delivery), "not sent again")
		r := e.do(t, http.MethodPatch, item(enabled), other, `{"url":"https://1.0.0.1/mine"}`)
		assert.Equal(t,
			"the endpoint gets the events of accounts (*), vehicles (*), and the token lacks svc:accounts:read and svc:vehicles:read: "+
				"changing an endpoint, or sending its deliveries again, needs the read scope of every resource whose events it gets",
			r.body["error_description"])

		// Refused whatever version If-Match names: a stale one is no way to
		// read the endpoint.
		r = e.doWith(t, http.MethodPatch, item(enabled), other, `{"url":"https://1.0.0.1/mine"}`, map[string]string{"If-Match": `"stale"`})
		assert.Equal(t, http.StatusForbidden, r.status, r.raw)
		assert.NotContains(t, r.body, "data")

		// The owner, which reads everything, still may.
		r = e.do(t, http.MethodPost, item(enabled)+"/deliveries/"+delivery+"/redeliver", owner, "")
		assert.Equal(t, http.StatusAccepted, r.status, r.raw)
		r = e.do(t, http.MethodPatch, item(enabled), owner, `{"url":"https://1.0.0.1/new"}`)
		assert.Equal(t, http.StatusOK, r.status, r.raw)
	})
}

// A change of an endpoint grants it anew to the token that made it: the
// endpoint acts under the authority of the app that changed it last, so
// disconnecting the app that registered it no longer disables it, and
// disconnecting the one that changed it does. A redelivery changes no
// endpoint and grants nothing.
func TestChangesGrantAnew(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		ctx := t.Context()
		owner := e.appToken(t, orgA, "owner", []string{a1, a2}, readAll...)
		other := e.appToken(t, orgA, "other", []string{a1, a2}, readAll...)
		oneBranch := e.appToken(t, orgA, "branch-app", []string{a1}, read, write, "svc:quotations:read")
		item := func(id string) string { return endpoints(orgA) + "/" + id }
		byURL := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		byStatus := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		redelivered := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		branchOne := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"quotation.*"}, "branch_ids": []string{a1}}))["id"].(string)
		ownerOnly := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)

		r := e.do(t, http.MethodPatch, item(byURL), other, `{"url":"https://1.0.0.1/other"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "other", r.data()["client_id"])
		r = e.do(t, http.MethodPatch, item(byStatus), other, `{"status":"disabled"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "other", r.data()["client_id"])
		r = e.do(t, http.MethodPatch, item(byStatus), other, `{"status":"enabled"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		r = e.do(t, http.MethodPost, item(redelivered)+"/deliveries/"+e.delivered(t, redelivered)+"/redeliver", other, "")
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		// An app of one branch manages an endpoint of its branch, which it
		// can read all of; the grant becomes its own.
		r = e.do(t, http.MethodPatch, item(branchOne), oneBranch, `{"url":"https://1.0.0.1/branch"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)

		for _, id := range []string{byURL, byStatus} {
			got := e.row(t, id)
			assert.Equal(t, "other", got.clientID)
			assert.JSONEq(t, `["accounts","quotations","vehicles","webhook_endpoints"]`, got.grantResources)
			assert.JSONEq(t, `["`+a1+`","`+a2+`"]`, got.grantBranches.String)
		}
		assert.Equal(t, "owner", e.row(t, redelivered).clientID, "a redelivery grants nothing")
		got := e.row(t, branchOne)
		assert.Equal(t, "branch-app", got.clientID)
		assert.JSONEq(t, `["quotations","webhook_endpoints"]`, got.grantResources)
		assert.JSONEq(t, `["`+a1+`"]`, got.grantBranches.String)

		n, err := webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "owner", time.Now().Add(-time.Second))
		require.NoError(t, err)
		assert.Equal(t, 2, n, "the endpoints still under the owner's authority")
		assert.Equal(t, "disabled", e.row(t, ownerOnly).status)
		assert.Equal(t, "disabled", e.row(t, redelivered).status)
		for _, id := range []string{byURL, byStatus, branchOne} {
			assert.Equal(t, "enabled", e.row(t, id).status, id)
		}
		n, err = webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "other", time.Now().Add(-time.Second))
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		for _, id := range []string{byURL, byStatus} {
			got := e.row(t, id)
			assert.Equal(t, "disabled", got.status)
			assert.Contains(t, got.reason, "the app other that registered it or last changed it was disconnected")
		}
		assert.Equal(t, "enabled", e.row(t, branchOne).status)
	})
}

// An endpoint disabled by the disconnection of the app it acted for stays
// disabled for every other app: a PATCH of any member and a redelivery are
// 409 conflict and change nothing, even from a token that reads all it
// gets. The app itself, connected again (a token issued after the
// cut-off), may change and enable it; a token of it from before the
// cut-off may not. Deleting it grants nothing, so any app may.
func TestCutOffEndpointStaysDisabled(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		ctx := t.Context()
		owner := e.appToken(t, orgA, "owner", []string{a1, a2}, readAll...)
		other := e.appToken(t, orgA, "other", []string{a1, a2}, readAll...)
		user := e.codeToken(t, orgA, readAll...) // of the app client-1
		item := func(id string) string { return endpoints(orgA) + "/" + id }
		id := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		doomed := e.create(t, owner, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		delivery := e.delivered(t, id)
		cutOff := time.Now().Add(-30 * time.Second)
		n, err := webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "owner", cutOff)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.True(t, e.row(t, id).cutOff)

		// A token of the owner issued before the cut-off (the verifier of a
		// replica that has not loaded the cut-off yet still takes it).
		old := &bearer.Claims{Subject: "app-owner", OrganizationID: orgA, ClientID: "owner", Scopes: readAll,
			BranchIDs: []string{a1, a2}, Grant: bearer.GrantClientCredentials, AppName: "owner"}
		old.Issuer, old.Audience, old.Role, old.ID = issuer, bearer.Audience, bearer.Role, "jti-old"
		old.IssuedAt, old.ExpiresAt = cutOff.Add(-time.Minute).Unix(), time.Now().Add(time.Hour).Unix()
		stale, err := e.keys.Sign(old)
		require.NoError(t, err)

		before := e.row(t, id)
		for _, tok := range []struct{ name, token string }{{"another app", other}, {"a user of another app", user}, {"the app before the cut-off", stale}} {
			for _, c := range []struct{ name, method, path, body string }{
				{"enable", http.MethodPatch, item(id), `{"status":"enabled"}`},
				{"url", http.MethodPatch, item(id), `{"url":"https://1.0.0.1/mine"}`},
				{"nothing", http.MethodPatch, item(id), `{}`},
				{"event types", http.MethodPatch, item(id), `{"event_types":["quotation.*"]}`},
				{"redeliver", http.MethodPost, item(id) + "/deliveries/" + delivery + "/redeliver", ""},
			} {
				r := e.do(t, c.method, c.path, tok.token, c.body)
				assert.Equal(t, http.StatusConflict, r.status, "%s, %s: %s", tok.name, c.name, r.raw)
				assert.Equal(t, "conflict", r.code(), "%s, %s", tok.name, c.name)
				assert.Contains(t, r.body["error_description"], "the app owner, under whose authority it acted, was disconnected", "%s, %s", tok.name, c.name)
				assert.Equal(t, before, e.row(t, id), "%s, %s changed nothing", tok.name, c.name)
			}
		}
		assert.Equal(t, "delivered", e.deliveryStatus(t, delivery), "not sent again")
		r := e.doWith(t, http.MethodPatch, item(id), other, `{"status":"enabled"}`, map[string]string{"If-Match": `"stale"`})
		assert.Equal(t, http.StatusConflict, r.status, "whatever version If-Match names: %s", r.raw)

		// Connected again, the owner changes it, and it stays disabled
		// for the others until the owner enables it.
		r = e.do(t, http.MethodPatch, item(id), owner, `{"url":"https://1.0.0.1/back"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "disabled", r.data()["status"])
		assert.True(t, e.row(t, id).cutOff)
		assert.Equal(t, http.StatusConflict, e.do(t, http.MethodPatch, item(id), other, `{"status":"enabled"}`).status)
		r = e.do(t, http.MethodPatch, item(id), owner, `{"status":"enabled"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "enabled", r.data()["status"])
		assert.Nil(t, r.data()["disabled_reason"])
		assert.False(t, e.row(t, id).cutOff)
		r = e.do(t, http.MethodPatch, item(id), other, `{"status":"disabled"}`)
		assert.Equal(t, http.StatusOK, r.status, "enabled again, it is anyone's with the reach: %s", r.raw)

		r = e.do(t, http.MethodDelete, item(doomed), other, "")
		assert.Equal(t, http.StatusOK, r.status, r.raw)
	})
}
