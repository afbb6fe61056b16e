package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
)

// caPath is the connected apps of org.
func caPath(org string) string {
	return strings.Replace(oauth.PathConnectedApps, "{organization_id}", org, 1)
}

// caCall sends a request without a body to target with a bearer token.
func caCall(t *testing.T, method, target, token string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	return doJSON(t, req)
}

// caEntries indexes connected apps by client id and kind.
func caEntries(t *testing.T, list []any) map[[2]string]map[string]any {
	t.Helper()
	out := map[[2]string]map[string]any{}
	for _, e := range list {
		m := e.(map[string]any)
		out[[2]string{m["client_id"].(string), m["kind"].(string)}] = m
	}
	return out
}

// caRefusedWithin polls the vehicles of org with token on every base until
// each refuses it with 401 invalid_token, and returns how long that took;
// it fails t after timeout.
func caRefusedWithin(t *testing.T, bases []string, org, token string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	refused := map[string]bool{}
	for len(refused) < len(bases) {
		if time.Since(start) > timeout {
			t.Fatalf("the token still works on %d of %d replicas after %v", len(bases)-len(refused), len(bases), timeout)
		}
		for _, base := range bases {
			if refused[base] {
				continue
			}
			res := rlVehicles(t, base, org, token)
			switch res.status {
			case http.StatusUnauthorized:
				assert.Equal(t, "invalid_token", res.body["error"])
				refused[base] = true
			case http.StatusOK:
			default:
				t.Fatalf("status %d: %v", res.status, res.body)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestDisconnectAppReplicas cuts apps off from an organization served by two
// replicas of the built binary on one PostgreSQL: a marketplace app that a
// user of the organization authorized, through the HTTP endpoint of one
// replica, and the organization's own app, through the admin command. Each
// time the app's tokens are refused on both replicas within 5 seconds, the
// app's refresh token is dead, and the other apps keep working.
func TestDisconnectAppReplicas(t *testing.T) {
	t.Parallel()
	db := testdb.PostgresURL(t)
	acme := newRVTenant(t, db) // an organization, its admin and its own app
	marketOrg := createID(t, "admin", "org", "create", "--name", "Marketplace", "--database-url", db)
	app := adminJSON(t, "admin", "app", "create", "--org", marketOrg, "--name", "Market App", "--scopes", "svc:vehicles:read",
		"--redirect-uri", rvRedirect, "--database-url", db)
	marketOwn := rlTenant{org: marketOrg, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}
	// The marketplace app, authorized by Acme's admin for Acme.
	market := rvTenant{rlTenant: rlTenant{org: acme.org, clientID: marketOwn.clientID, secret: marketOwn.secret},
		email: acme.email, password: acme.password}

	vars := map[string]string{"WAYBILL_DATABASE_URL": db, "WAYBILL_ISSUER": "https://waybill.test"}
	bin := buildBinary(t)
	base1, _ := startProcess(t, bin, vars, serveArgs()...)
	base2, _ := startProcess(t, bin, vars, serveArgs()...)
	bases := []string{base1, base2}

	userTok := rvCodeTokens(t, base1, market)
	acmeTok := rlToken(t, base2, acme.rlTenant)
	marketTok := rlToken(t, base1, marketOwn)
	for _, base := range bases {
		require.Equal(t, http.StatusOK, rlVehicles(t, base, acme.org, userTok.AccessToken).status)
		require.Equal(t, http.StatusOK, rlVehicles(t, base, acme.org, acmeTok).status)
		require.Equal(t, http.StatusOK, rlVehicles(t, base, marketOrg, marketTok).status)
	}

	res, body := postJSON(t, base2+oauth.PathUserToken+"?grant_type=password", map[string]any{"email": acme.email, "password": acme.password}, "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	admin := body["access_token"].(string)
	res, body = caCall(t, http.MethodGet, base2+caPath(acme.org), admin)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	apps := caEntries(t, body["data"].([]any))
	assert.Len(t, apps, 2, "%v", apps)
	consent := apps[[2]string{market.clientID, oauth.KindAuthorizationCode}]
	require.NotNil(t, consent, "%v", apps)
	assert.Equal(t, "Market App", consent["name"])
	assert.Len(t, consent["consented_by"], 1)
	assert.NotNil(t, consent["last_used_at"])
	own := apps[[2]string{acme.clientID, oauth.KindClientCredentials}]
	require.NotNil(t, own, "%v", apps)
	assert.NotNil(t, own["last_used_at"])

	// The marketplace app, through one replica's endpoint.
	res, body = caCall(t, http.MethodDelete, base1+caPath(acme.org)+"/"+market.clientID, admin)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	data := body["data"].(map[string]any)
	assert.EqualValues(t, 1, data["revoked_families"])
	assert.Equal(t, false, data["disabled"], "another organization's app is not disabled")
	took := caRefusedWithin(t, bases, acme.org, userTok.AccessToken, 10*time.Second)
	t.Logf("the user's token of the disconnected app was refused on both replicas %v after the disconnection", took)
	assert.Less(t, took, 5*time.Second)
	res, body = rvRefresh(t, base2, market, userTok.RefreshToken)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Equal(t, "invalid_grant", body["error"])
	for _, base := range bases {
		assert.Equal(t, http.StatusOK, rlVehicles(t, base, acme.org, acmeTok).status, "another app of the organization")
		assert.Equal(t, http.StatusOK, rlVehicles(t, base, marketOrg, marketTok).status, "the app in its own organization")
	}

	// The organization's own app, through the admin command.
	out := adminJSON(t, "admin", "app", "disconnect", "--org", acme.org, "--client-id", acme.clientID, "--database-url", db)
	assert.Equal(t, true, out["disabled"])
	took = caRefusedWithin(t, bases, acme.org, acmeTok, 10*time.Second)
	t.Logf("the client-credentials token of the disconnected app was refused on both replicas %v after the command", took)
	assert.Less(t, took, 5*time.Second)
	tokRes := rlDo(t, rlTokenRequest(t, base1, "/v1/oauth/token", acme.rlTenant, "basic"))
	assert.Equal(t, http.StatusUnauthorized, tokRes.status, "the app is disabled until its secret is rotated")

	// The listing of the admin command: the consent is gone, the own app is
	// listed as disconnected.
	lines, err := runCommand(t, nil, "admin", "app", "connected", "--org", acme.org, "--database-url", db)
	require.NoError(t, err)
	var listed []any
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		listed = append(listed, m)
	}
	apps = caEntries(t, listed)
	require.Len(t, apps, 1, "%v", apps)
	assert.NotNil(t, apps[[2]string{acme.clientID, oauth.KindClientCredentials}]["disconnected_at"])

	// Rotating the secret enables the app again.
	rotated := adminJSON(t, "admin", "app", "rotate-secret", "--client-id", acme.clientID, "--database-url", db)
	time.Sleep(time.Second) // a token of the second of the cut-off is refused
	again := rlToken(t, base2, rlTenant{org: acme.org, clientID: acme.clientID, secret: rotated["client_secret"].(string)})
	assert.Equal(t, http.StatusOK, rlVehicles(t, base1, acme.org, again).status)
}

// The admin commands refuse what they cannot do.
func TestConnectedAppsCommands(t *testing.T) {
	t.Parallel()
	db := testdb.PostgresURL(t)
	acme := newRVTenant(t, db)
	out, err := runCommand(t, nil, "admin", "app", "connected", "--org", acme.org, "--database-url", db)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	assert.Equal(t, "client_credentials", m["kind"])
	assert.Nil(t, m["last_used_at"], "no token issued yet")

	_, err = runCommand(t, nil, "admin", "app", "disconnect", "--org", acme.org, "--database-url", db)
	assert.ErrorContains(t, err, "--client-id is required")
	_, err = runCommand(t, nil, "admin", "app", "disconnect", "--org", acme.org, "--client-id", "nope", "--database-url", db)
	assert.ErrorContains(t, err, "not connected")
	_, err = runCommand(t, nil, "admin", "app", "connected", "--org", "00000000-0000-4000-8000-000000000000", "--database-url", db)
	assert.Error(t, err)
}

// Disconnecting an app also disables the webhook endpoints it registered
// in the organization, so that it gets no more events pushed than it can
// pull: through the HTTP endpoint, the server does it when it loads the
// cut-off (within seconds, on every replica); the admin command does it at
// once and says how many. Other apps' endpoints stay enabled.
func TestDisconnectDisablesWebhookEndpoints(t *testing.T) {
	t.Parallel()
	db := testdb.PostgresURL(t)
	acme := newRVTenant(t, db)
	newApp := func(name string) rlTenant {
		app := adminJSON(t, "admin", "app", "create", "--org", acme.org, "--name", name, "--all-branches",
			"--scopes", "svc:webhooks:read svc:webhooks:write svc:vehicles:read", "--database-url", db)
		return rlTenant{org: acme.org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}
	}
	market, other, viewer := newApp("Market"), newApp("Other"), newApp("Viewer")
	base, logs, stop := startRun(t, serveArgs("--database-url", db), env(nil))
	defer func() { require.NoError(t, stop()) }()

	endpoints := base + "/v1/" + acme.org + "/webhook_endpoints"
	register := func(app rlTenant) string {
		res := swDo(t, http.MethodPost, endpoints, jwksClientToken(t, base, app.clientID, app.secret),
			`{"url":"https://1.1.1.1/hooks","event_types":["vehicle.*"]}`, nil)
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var out struct{ Data map[string]any }
		require.NoError(t, json.Unmarshal([]byte(res.body), &out))
		assert.Equal(t, app.clientID, out.Data["client_id"])
		return out.Data["id"].(string)
	}
	marketEP, otherEP := register(market), register(other)
	viewerTok := jwksClientToken(t, base, viewer.clientID, viewer.secret)
	endpoint := func(id string) map[string]any {
		res := swDo(t, http.MethodGet, endpoints+"/"+id, viewerTok, "", nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		var out struct{ Data map[string]any }
		require.NoError(t, json.Unmarshal([]byte(res.body), &out))
		return out.Data
	}

	res, body := postJSON(t, base+oauth.PathUserToken+"?grant_type=password", map[string]any{"email": acme.email, "password": acme.password}, "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	res, body = caCall(t, http.MethodDelete, base+caPath(acme.org)+"/"+market.clientID, body["access_token"].(string))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	start := time.Now()
	for endpoint(marketEP)["status"] != "disabled" {
		require.Less(t, time.Since(start), 10*time.Second, "the endpoint of the disconnected app is still enabled")
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the endpoint of the disconnected app was disabled %v after the disconnection", time.Since(start))
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, endpoint(marketEP)["disabled_reason"], "the app "+market.clientID+" that registered it or last changed it was disconnected from the organization")
	assert.Equal(t, "enabled", endpoint(otherEP)["status"], "another app's endpoint")
	assert.Contains(t, logs.String(), "disabled the webhook endpoints of an app disconnected from the organization")

	out := adminJSON(t, "admin", "app", "disconnect", "--org", acme.org, "--client-id", other.clientID, "--database-url", db)
	assert.EqualValues(t, 1, out["disabled_webhook_endpoints"])
	assert.Equal(t, true, out["disabled"])
	assert.Equal(t, "disabled", endpoint(otherEP)["status"], "at once")

	// Each endpoint disabled is in the organization's audit log.
	audited, err := runCommand(t, nil, "admin", "audit", "--org", acme.org, "--database-url", db)
	require.NoError(t, err)
	for _, id := range []string{marketEP, otherEP} {
		assert.Contains(t, audited, `"action":"webhook_endpoint.disabled","actor":{"kind":"system","id":"app disconnection"},"target":{"kind":"webhook_endpoint","id":"`+id+`"}`)
	}
}
