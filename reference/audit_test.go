package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// auditPath is the audit log of org.
func auditPath(org string) string {
	return strings.Replace(oauth.PathAuditLog, "{organization_id}", org, 1)
}

// TestAuditLog drives the token service's audited actions through the
// server and the admin commands, on SQLite and PostgreSQL, and reads the
// organization's audit log back by HTTP (an admin only) and by "waybill
// admin audit": each action once, oldest first, with its actor (the CLI, a
// user from an address), its target and its details; an action of the
// whole installation (a registration token) in every organization's log.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			base, c := rvServed(t, db) // its app is created by the CLI
			otherOrg := createID(t, "admin", "org", "create", "--name", "Other Freight", "--database-url", db)
			otherAdmin := "other-" + newID()[:8] + "@rv.test"
			createID(t, "admin", "user", "create", "--email", otherAdmin, "--password", "s3cret-pass", "--org", otherOrg, "--admin", "--database-url", db)
			member := "member-" + newID()[:8] + "@rv.test"
			memberID := createID(t, "admin", "user", "create", "--email", member, "--password", "s3cret-pass", "--org", c.org, "--database-url", db)
			adminJSON(t, "admin", "registration-token", "create", "--database-url", db)

			signIn := func(email, password string) string {
				t.Helper()
				res, body := postJSON(t, base+oauth.PathUserToken+"?grant_type=password", map[string]any{"email": email, "password": password}, "")
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				return body["access_token"].(string)
			}
			admin := signIn(c.email, c.password)

			// A user registers an app and rotates its secret; a user consents to
			// the CLI's app; an admin disconnects it.
			res, body := postJSON(t, base+oauth.PathApps, map[string]any{"organization_id": c.org, "name": "Desk", "scopes": []string{"svc:vehicles:read"}}, admin)
			require.Equal(t, http.StatusCreated, res.StatusCode, body)
			desk := body["client_id"].(string)
			res, body = postJSON(t, base+oauth.PathApps+"/"+desk+"/rotate-secret", map[string]any{}, admin)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			rvCodeTokens(t, base, c)
			req := mustRequest(t, http.MethodDelete, base+strings.Replace(oauth.PathConnectedApps, "{organization_id}", c.org, 1)+"/"+url.PathEscape(c.clientID))
			req.Header.Set("Authorization", "Bearer "+admin)
			res, body = doJSON(t, req)
			require.Equal(t, http.StatusOK, res.StatusCode, body)

			read := func(token, query string) (*http.Response, map[string]any) {
				t.Helper()
				req := mustRequest(t, http.MethodGet, base+auditPath(c.org)+query)
				req.Header.Set("Authorization", "Bearer "+token)
				return doJSON(t, req)
			}
			res, body = read(admin, "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
			var entries []map[string]any
			for _, e := range body["data"].([]any) {
				entries = append(entries, e.(map[string]any))
			}
			type seen struct{ action, actor, target string }
			var got []seen
			for _, e := range entries {
				actor, target := e["actor"].(map[string]any), e["target"].(map[string]any)
				got = append(got, seen{e["action"].(string), actor["kind"].(string) + ":" + actor["id"].(string), target["kind"].(string) + ":" + target["id"].(string)})
			}
			adminID := claimsOf(t, admin)["sub"].(string)
			require.Len(t, got, 8, "%v", got)
			assert.Equal(t, "registration_token.created", got[3].action)
			assert.Equal(t, "cli:", got[3].actor)
			got[3] = seen{}
			assert.Equal(t, []seen{
				{"member.added", "cli:", "user:" + adminID},
				{"app.created", "cli:", "app:" + c.clientID},
				{"member.added", "cli:", "user:" + memberID},
				{},
				{"app.created", "user:" + adminID, "app:" + desk},
				{"app.secret_rotated", "user:" + adminID, "app:" + desk},
				{"consent.granted", "user:" + adminID, "app:" + c.clientID},
				{"app.disconnected", "user:" + adminID, "app:" + c.clientID},
			}, got)
			assert.Equal(t, "", entries[0]["remote_addr"], "the CLI has no address")
			assert.Equal(t, true, entries[0]["details"].(map[string]any)["admin"])
			assert.Equal(t, "127.0.0.1", entries[4]["remote_addr"])
			assert.Equal(t, []any{"svc:vehicles:read"}, entries[6]["details"].(map[string]any)["scopes"])
			assert.Equal(t, float64(1), entries[7]["details"].(map[string]any)["removed_consents"])
			assert.Nil(t, body["next_cursor"])
			assert.Equal(t, "v1", body["version"])

			// Pages of two, and the same entries by the admin command.
			var paged []any
			for query := "?limit=2"; ; {
				res, body = read(admin, query)
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				paged = append(paged, body["data"].([]any)...)
				next, ok := body["next_cursor"].(string)
				if !ok {
					break
				}
				query = "?limit=2&after=" + url.QueryEscape(next)
			}
			assert.Len(t, paged, 8)
			out, err := runCommand(t, nil, "admin", "audit", "--org", c.org, "--database-url", db)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 8)
			for i, line := range lines {
				var e map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &e))
				assert.Equal(t, entries[i]["id"], e["id"], "line %d", i)
			}

			// Only an admin of the organization reads it.
			res, body = read(signIn(member, "s3cret-pass"), "")
			assert.Equal(t, http.StatusForbidden, res.StatusCode, body)
			res, body = read(signIn(otherAdmin, "s3cret-pass"), "")
			assert.Equal(t, http.StatusNotFound, res.StatusCode, body)
			for _, query := range []string{"?limit=0", "?limit=1001", "?after=abc", "?after=-1", "?since=2026-01-01", "?limit=1&limit=2"} {
				res, body = read(admin, query)
				assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %v", query, body)
				assert.Equal(t, "invalid_request", body["error"], query)
			}

			// The CLI's actions on members, users, quotas and keys.
			adminJSON(t, "admin", "app", "set-quota", "--client-id", desk, "--rest-per-minute", "120", "--database-url", db)
			adminJSON(t, "admin", "user", "remove", "--id", memberID, "--org", c.org, "--database-url", db)
			adminJSON(t, "admin", "keys", "rotate", "--database-url", db)
			gone := createID(t, "admin", "user", "create", "--email", "gone-"+newID()[:8]+"@rv.test", "--password", "s3cret-pass", "--org", c.org, "--database-url", db)
			adminJSON(t, "admin", "user", "delete", "--id", gone, "--database-url", db)
			out, err = runCommand(t, nil, "admin", "audit", "--org", c.org, "--database-url", db)
			require.NoError(t, err)
			lines = strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 13, out)
			var later []map[string]any
			for _, line := range lines[8:] {
				var e map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &e))
				later = append(later, e)
			}
			assert.Equal(t, "app.quota_set", later[0]["action"])
			assert.Equal(t, float64(120), later[0]["details"].(map[string]any)["rest_per_minute"])
			assert.Equal(t, "member.removed", later[1]["action"])
			assert.Equal(t, map[string]any{"kind": "user", "id": memberID}, later[1]["target"])
			assert.Equal(t, "signing_key.rotated", later[2]["action"])
			assert.Equal(t, "staged", later[2]["details"].(map[string]any)["step"])
			assert.Equal(t, "member.added", later[3]["action"])
			assert.Equal(t, "user.deleted", later[4]["action"])
			assert.Equal(t, map[string]any{"kind": "user", "id": gone}, later[4]["target"])
			for _, e := range later {
				assert.Equal(t, map[string]any{"kind": "cli", "id": ""}, e["actor"])
			}

			// The other organization sees the installation's token alone,
			// nothing of this one's.
			out, err = runCommand(t, nil, "admin", "audit", "--org", otherOrg, "--database-url", db)
			require.NoError(t, err)
			assert.Equal(t, 3, strings.Count(out, "\n"), "its admin's membership, the installation's token and key rotation: %s", out)
			assert.Contains(t, out, "registration_token.created")
			assert.NotContains(t, out, desk)

		})
	}
}

// TestAuditLogOfWebhookEndpoints: registering, changing and deleting a
// webhook endpoint are in the organization's audit log, done by the app
// whose token did them, from its address.
func TestAuditLogOfWebhookEndpoints(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			w := newWebhookWorld(t, db, "--webhook-allow-private")
			rc := newReceiver(t)
			id := w.register(t, rc, `"quotation.*"`)
			res := swDo(t, "PATCH", w.base+"/v1/"+w.org+"/webhook_endpoints/"+id, w.token, `{"event_types": ["quotation.created"], "status": "disabled"}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			res = swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints/"+id+"/rotate_secret", w.token, `{"grace_seconds": 60}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			res = swDo(t, "DELETE", w.base+"/v1/"+w.org+"/webhook_endpoints/"+id, w.token, "", nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			clientID := claimsOf(t, w.token)["client_id"].(string)

			out, err := runCommand(t, nil, "admin", "audit", "--org", w.org, "--database-url", db)
			require.NoError(t, err)
			var endpoint []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var e map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &e))
				if strings.HasPrefix(e["action"].(string), "webhook_endpoint.") {
					endpoint = append(endpoint, e)
				}
			}
			require.Len(t, endpoint, 4, out)
			for i, action := range []string{"webhook_endpoint.created", "webhook_endpoint.changed", "webhook_endpoint.secret_rotated", "webhook_endpoint.deleted"} {
				assert.Equal(t, action, endpoint[i]["action"])
				assert.Equal(t, map[string]any{"kind": "app", "id": clientID}, endpoint[i]["actor"])
				assert.Equal(t, map[string]any{"kind": "webhook_endpoint", "id": id}, endpoint[i]["target"])
				assert.Equal(t, "127.0.0.1", endpoint[i]["remote_addr"])
			}
			assert.Equal(t, rc.srv.URL, endpoint[0]["details"].(map[string]any)["url"])
			assert.Equal(t, []any{"event_types", "status"}, endpoint[1]["details"].(map[string]any)["fields"])
			assert.Equal(t, float64(60), endpoint[2]["details"].(map[string]any)["grace_seconds"])
		})
	}
}
