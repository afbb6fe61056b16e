package resource_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
)

// historyEntries returns the entries of a history answer without their
// ids and times, which the test cannot know.
func historyEntries(t *testing.T, r response) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range r.list() {
		m := e.(map[string]any)
		assert.NotEmpty(t, m["id"])
		_, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		assert.NoError(t, err)
		delete(m, "id")
		delete(m, "time")
		out = append(out, m)
	}
	return out
}

// TestHistory keeps the history of a registry with an SQLHistory and no
// Outbox, on both databases: the entries of an organization-scoped
// record's create, update, update of nothing and delete, with the actor of
// each token; the tenant rules of the route; and the purge.
func TestHistory(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name+"/history", func(t *testing.T) {
			t.Parallel()
			hist := &resource.SQLHistory{Dialect: b.dialect}
			e := newEnvWith(t, b, func(reg *resource.Registry, _ []*resource.Resource) { reg.History = hist })
			user := e.codeToken(t, orgA, allScopes...)
			app := e.ccToken(t, orgA, []string{a1}, allScopes...)

			v := e.mustCreate(t, user, "/v1/"+orgA+"/vehicles", `{"plate":"AB-123","active":true}`)
			vehicle := "/v1/" + orgA + "/vehicles/" + v["id"].(string)
			require.Equal(t, http.StatusOK, e.do(t, "PATCH", vehicle, user, `{"active":false}`).status)
			require.Equal(t, http.StatusOK, e.do(t, "PATCH", vehicle, user, `{"active":false}`).status, "the same value: an entry that changes nothing")
			require.Equal(t, http.StatusOK, e.do(t, "DELETE", vehicle, user, "").status)
			r := e.do(t, "GET", vehicle+"/history", user, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Nil(t, r.body["next_cursor"])
			assert.Equal(t, []map[string]any{
				{"type": "vehicle.created", "clientid": "client-1", "userid": "user-1", "changed": []any{"plate", "active"},
					"before": map[string]any{}, "after": map[string]any{"plate": "AB-123", "active": true}},
				{"type": "vehicle.updated", "clientid": "client-1", "userid": "user-1", "changed": []any{"active"},
					"before": map[string]any{"active": true}, "after": map[string]any{"active": false}},
				{"type": "vehicle.updated", "clientid": "client-1", "userid": "user-1", "changed": []any{},
					"before": map[string]any{}, "after": map[string]any{}},
				{"type": "vehicle.deleted", "clientid": "client-1", "userid": "user-1", "changed": []any{"plate", "active"},
					"before": map[string]any{"plate": "AB-123", "active": false}, "after": map[string]any{}},
			}, historyEntries(t, r))
			other := e.codeToken(t, orgB, allScopes...)
			assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/v1/"+orgB+"/vehicles/"+v["id"].(string)+"/history", other, "").status)

			// A branch record: a client-credentials token has no user; the
			// sibling branch does not see its history.
			a := e.mustCreate(t, app, "/v1/"+a1+"/accounts", `{"company_name":"Acme","account_type":"customer"}`)
			account := "/v1/" + a1 + "/accounts/" + a["id"].(string)
			r = e.do(t, "GET", account+"/history?limit=1", app, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			entries := historyEntries(t, r)
			require.Len(t, entries, 1)
			assert.Equal(t, "client-2", entries[0]["clientid"])
			assert.Nil(t, entries[0]["userid"])
			assert.Nil(t, r.body["next_cursor"])
			assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/v1/"+a2+"/accounts/"+a["id"].(string)+"/history", user, "").status)
			assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/api/v1/"+a2+"/accounts/"+a["id"].(string)+"/history", user, "").status)
			require.Equal(t, http.StatusOK, e.do(t, "PATCH", account, app, `{"comment":"key account"}`).status)
			r = e.do(t, "GET", account+"/history?limit=1", app, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			next, _ := r.body["next_cursor"].(string)
			require.NotEmpty(t, next)
			r = e.do(t, "GET", "/api/v1/"+a1+"/accounts/"+a["id"].(string)+"/history?limit=1&after="+url.QueryEscape(next), app, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			entries = historyEntries(t, r)
			require.Len(t, entries, 1)
			assert.Equal(t, map[string]any{"comment": nil}, entries[0]["before"])
			assert.Equal(t, map[string]any{"comment": "key account"}, entries[0]["after"])
			assert.Equal(t, http.StatusBadRequest, e.do(t, "GET", vehicle+"/history?after="+url.QueryEscape(next), user, "").status, "a cursor of another record")

			// The purge removes what is older than its time.
			n, err := hist.Purge(context.Background(), e.db, time.Now().Add(-time.Hour))
			require.NoError(t, err)
			assert.Zero(t, n)
			n, err = hist.Purge(context.Background(), e.db, time.Now().Add(time.Hour))
			require.NoError(t, err)
			assert.EqualValues(t, 6, n)
			r = e.do(t, "GET", vehicle+"/history", user, "")
			assert.Equal(t, http.StatusNotFound, r.status, "a deleted record whose history is purged is unknown: %s", r.raw)
			r = e.do(t, "GET", account+"/history", app, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Empty(t, r.list(), "a record whose history is purged has an empty one")
		})
	}
}
