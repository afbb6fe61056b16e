package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWebhookEndpointAuthority drives the built server: an app that may
// write webhooks but not read all an endpoint gets cannot redirect,
// disable or redeliver another app's endpoint; an app of one branch does
// not see an endpoint of every branch; an app that reads everything may
// change it, and the endpoint then acts under that app's authority:
// disconnecting the app that registered it leaves it enabled,
// disconnecting the one that changed it disables it, and no other app can
// enable it again.
func TestWebhookEndpointAuthority(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			w := newWebhookWorld(t, dbURL, "--webhook-allow-private")
			south := createID(t, "admin", "branch", "create", "--org", w.org, "--name", "South", "--database-url", dbURL)
			app := func(name, scopes string, branch ...string) rlTenant {
				args := []string{"admin", "app", "create", "--org", w.org, "--name", name, "--scopes", scopes, "--database-url", dbURL}
				if len(branch) > 0 {
					args = append(args, "--branches", branch[0])
				} else {
					args = append(args, "--all-branches")
				}
				a := adminJSON(t, args...)
				return rlTenant{org: w.org, clientID: a["client_id"].(string), secret: a["client_secret"].(string)}
			}
			token := func(a rlTenant) string { return rlToken(t, w.base, a) }
			ownerApp := app("Owner", webhookScopes)
			owner := token(ownerApp)
			snoop := token(app("Snoop", "svc:webhooks:read svc:webhooks:write svc:quotations:read"))
			southApp := token(app("South", webhookScopes, south))
			otherApp := app("Other", webhookScopes)
			other := token(otherApp)
			third := token(app("Third", webhookScopes))

			rc := newReceiver(t)
			res := swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", owner, `{"url": "`+rc.srv.URL+`", "event_types": ["account.*", "quotation.*"]}`, nil)
			require.Equal(t, http.StatusCreated, res.status, res.body)
			item := w.base + "/v1/" + w.org + "/webhook_endpoints/" + res.json(t)["data"].(map[string]any)["id"].(string)
			w.quotation(t, w.base)
			var delivery string
			require.Eventually(t, func() bool {
				list := swDo(t, "GET", item+"/deliveries", owner, "", nil)
				require.Equal(t, http.StatusOK, list.status, list.body)
				data, _ := list.json(t)["data"].([]any)
				if len(data) == 0 {
					return false
				}
				delivery = data[0].(map[string]any)["id"].(string)
				return true
			}, 10*time.Second, 20*time.Millisecond, "a delivery")
			get := func() map[string]any {
				res := swDo(t, "GET", item, owner, "", nil)
				require.Equal(t, http.StatusOK, res.status, res.body)
				return res.json(t)["data"].(map[string]any)
			}
			before := get()
			assert.Equal(t, ownerApp.clientID, before["client_id"])

			for _, c := range []struct {
				name, token, method, path, body string
				status                          int
				code                            string
			}{
				{"url without accounts:read", snoop, "PATCH", item, `{"url": "http://127.0.0.1:9/mine"}`, 403, "insufficient_scope"},
				{"status without accounts:read", snoop, "PATCH", item, `{"status": "disabled"}`, 403, "insufficient_scope"},
				{"redeliver without accounts:read", snoop, "POST", item + "/deliveries/" + delivery + "/redeliver", "", 403, "insufficient_scope"},
				{"url by an app of one branch", southApp, "PATCH", item, `{"url": "http://127.0.0.1:9/mine"}`, 404, "not_found"},
			} {
				res := swDo(t, c.method, c.path, c.token, c.body, nil)
				assert.Equal(t, c.status, res.status, "%s: %s", c.name, res.body)
				assert.Equal(t, c.code, res.json(t)["error"], c.name)
				if c.status == 403 {
					assert.Contains(t, res.json(t)["error_description"], "svc:accounts:read", c.name)
				}
				assert.Equal(t, before, get(), "%s changed nothing", c.name)
			}

			// An app that reads everything the endpoint gets takes it over.
			res = swDo(t, "PATCH", item, other, `{"url": "`+rc.srv.URL+`/other"}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.Equal(t, otherApp.clientID, res.json(t)["data"].(map[string]any)["client_id"])

			out := adminJSON(t, "admin", "app", "disconnect", "--org", w.org, "--client-id", ownerApp.clientID, "--database-url", dbURL)
			assert.EqualValues(t, 0, out["disabled_webhook_endpoints"], "the endpoint no longer acts for the app that registered it")
			assert.Equal(t, "enabled", swDo(t, "GET", item, other, "", nil).json(t)["data"].(map[string]any)["status"])
			out = adminJSON(t, "admin", "app", "disconnect", "--org", w.org, "--client-id", otherApp.clientID, "--database-url", dbURL)
			assert.EqualValues(t, 1, out["disabled_webhook_endpoints"])

			after := swDo(t, "GET", item, third, "", nil).json(t)["data"].(map[string]any)
			assert.Equal(t, "disabled", after["status"])
			for _, c := range []struct{ name, method, path, body string }{
				{"enable", "PATCH", item, `{"status": "enabled"}`},
				{"redeliver", "POST", item + "/deliveries/" + delivery + "/redeliver", ""},
			} {
				res := swDo(t, c.method, c.path, third, c.body, nil)
				assert.Equal(t, http.StatusConflict, res.status, "%s: %s", c.name, res.body)
				assert.Equal(t, "conflict", res.json(t)["error"], c.name)
				assert.Equal(t, after, swDo(t, "GET", item, third, "", nil).json(t)["data"], "%s changed nothing", c.name)
			}
		})
	}
}
