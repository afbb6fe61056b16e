package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChangeFeed follows the change feed of the server: the events of an
// account and a quotation created, moved and deleted through the API, in
// commit order, with the rate limits of the API, and none for a token that
// may not read the quotations.
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
			branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
				"--scopes", "svc:events:read svc:accounts:read svc:accounts:write svc:quotations:read svc:quotations:write", "--database-url", dbURL)
			narrow := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Accounts only", "--all-branches",
				"--scopes", "svc:events:read svc:accounts:read", "--database-url", dbURL)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
			t.Cleanup(func() { require.NoError(t, stop()) })
			token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})

			account := swDo(t, "POST", base+"/v1/"+branch+"/accounts", token, `{"company_name": "Firm"}`, nil)
			require.Equal(t, http.StatusCreated, account.status, account.body)
			accountID := account.json(t)["data"].(map[string]any)["id"].(string)
			q := swDo(t, "POST", base+"/v1/"+branch+"/quotations", token, `{"account_id": "`+accountID+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24"}`, nil)
			require.Equal(t, http.StatusCreated, q.status, q.body)
			qid := q.json(t)["data"].(map[string]any)["id"].(string)
			require.Equal(t, http.StatusOK, swDo(t, "PATCH", base+"/v1/"+branch+"/quotations/"+qid, token, `{"status": "sent"}`, nil).status)
			require.Equal(t, http.StatusOK, swDo(t, "DELETE", base+"/v1/"+branch+"/quotations/"+qid, token, "", nil).status)

			feed := swDo(t, "GET", base+"/v1/"+org+"/events", token, "", nil)
			require.Equal(t, http.StatusOK, feed.status, feed.body)
			assert.NotEmpty(t, feed.header.Get("RateLimit"), "the feed is rate limited as the API is")
			var page struct {
				Data       []map[string]any `json:"data"`
				NextCursor string           `json:"next_cursor"`
				Version    string           `json:"version"`
			}
			require.NoError(t, json.Unmarshal([]byte(feed.body), &page))
			var types []string
			for _, ev := range page.Data {
				types = append(types, ev["type"].(string))
				assert.Equal(t, org, ev["organizationid"])
				assert.Equal(t, branch, ev["branchid"])
				assert.Equal(t, app["client_id"], ev["clientid"])
				assert.True(t, strings.HasPrefix(ev["source"].(string), "/v1/"+branch+"/"), ev["source"])
			}
			assert.Equal(t, []string{"account.created", "quotation.created", "quotation.updated", "quotation.status_changed", "quotation.deleted"}, types)
			assert.Equal(t, "5", page.NextCursor)
			assert.Equal(t, "v1", page.Version)
			status := page.Data[3]["data"].(map[string]any)["status"]
			assert.Equal(t, map[string]any{"field": "status", "from": "draft", "to": "sent"}, status)

			narrowToken := rlToken(t, base, rlTenant{org: org, clientID: narrow["client_id"].(string), secret: narrow["client_secret"].(string)})
			onlyAccounts := swDo(t, "GET", base+"/v1/"+branch+"/events?types=quotation.*,account.*", narrowToken, "", nil)
			require.Equal(t, http.StatusOK, onlyAccounts.status, onlyAccounts.body)
			var narrowPage struct {
				Data []map[string]any `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(onlyAccounts.body), &narrowPage))
			require.Len(t, narrowPage.Data, 1, "a token without svc:quotations:read sees no quotation event")
			assert.Equal(t, "account.created", narrowPage.Data[0]["type"])

			ahead := swDo(t, "GET", base+"/v1/"+org+"/events?after=9", token, "", nil)
			assert.Equal(t, http.StatusBadRequest, ahead.status, ahead.body)
		})
	}
}

// json decodes the answer's body as a JSON object.
func (a swAnswer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.body), &m), a.body)
	return m
}
