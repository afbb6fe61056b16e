package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWebhookFilter registers endpoints with filters on the built server,
// on both databases, makes writes, and checks that only the events that
// meet every condition arrive: a status move, a changed field, number
// comparisons, in and isnull.
func TestWebhookFilter(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t), "--webhook-allow-private")
			register := func(types, filter string) (*receiver, map[string]any) {
				rc := newReceiver(t)
				res := swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", w.token,
					`{"url": "`+rc.srv.URL+`", "event_types": [`+types+`], "filter": `+filter+`}`, nil)
				require.Equal(t, http.StatusCreated, res.status, res.body)
				data := res.json(t)["data"].(map[string]any)
				rc.secret = data["secret"].(string)
				return rc, data
			}
			moved, ep := register(`"quotation.*"`, `["status.to:eq:sent"]`)
			assert.Equal(t, []any{"status.to:eq:sent"}, ep["filter"], "the answer shows the filter")
			assert.Nil(t, ep["rate_limit"])
			got := swDo(t, "GET", w.base+"/v1/"+w.org+"/webhook_endpoints/"+ep["id"].(string), w.token, "", nil)
			require.Equal(t, http.StatusOK, got.status, got.body)
			assert.Equal(t, []any{"status.to:eq:sent"}, got.json(t)["data"].(map[string]any)["filter"], "stored with the endpoint")
			changed, _ := register(`"quotation.updated"`, `["changed:eq:total_packages"]`)
			heavy, _ := register(`"quotation.created"`, `["total_weight_kg:gt:100", "total_weight_kg:lt:1000", "total_packages:in:2,3,20"]`)
			withEmail, _ := register(`"account.created"`, `["email:isnull:false", "company_name:ne:Other"]`)
			all, _ := register(`"*"`, `null`)

			post := func(path, body string) string {
				res := swDo(t, "POST", w.base+"/v1/"+w.branch+path, w.token, body, nil)
				require.Equal(t, http.StatusCreated, res.status, res.body)
				return res.json(t)["data"].(map[string]any)["id"].(string)
			}
			patch := func(path, body string) {
				res := swDo(t, "PATCH", w.base+"/v1/"+w.branch+path, w.token, body, nil)
				require.Equal(t, http.StatusOK, res.status, res.body)
			}
			account := post("/accounts", `{"company_name": "No mail"}`)
			mailed := post("/accounts", `{"company_name": "Mailed", "email": "ops@mailed.example"}`)
			// 20 packages: 20 > 3 as a number, though "20" < "3" as text.
			light := post("/quotations", `{"account_id": "`+account+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24", "total_weight_kg": 50, "total_packages": 20}`)
			heavyQ := post("/quotations", `{"account_id": "`+account+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24", "total_weight_kg": 500.5, "total_packages": 20}`)
			post("/quotations", `{"account_id": "`+account+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24", "total_weight_kg": 5000, "total_packages": 2}`)
			patch("/quotations/"+light, `{"total_packages": 3}`)
			patch("/quotations/"+light, `{"status": "sent"}`)
			patch("/quotations/"+heavyQ, `{"status": "accepted"}`)

			// 2 accounts; 3 quotations created; light updated twice with a
			// status move; heavyQ updated once with one.
			require.Eventually(t, func() bool { return len(all.types()) == 10 }, 15*time.Second, 20*time.Millisecond, "every event: %v", all.types())
			subjects := func(rc *receiver) []string {
				rc.mu.Lock()
				defer rc.mu.Unlock()
				var out []string
				for _, ev := range rc.got {
					out = append(out, ev["type"].(string)+" "+ev["subject"].(string))
				}
				return out
			}
			want := map[*receiver][]string{
				moved:     {"quotation.status_changed " + light},
				changed:   {"quotation.updated " + light},
				heavy:     {"quotation.created " + heavyQ},
				withEmail: {"account.created " + mailed},
			}
			for rc, events := range want {
				require.Eventually(t, func() bool { return len(subjects(rc)) >= len(events) }, 10*time.Second, 20*time.Millisecond, "want %v, got %v", events, subjects(rc))
			}
			time.Sleep(500 * time.Millisecond) // what an event that should not come would take
			for rc, events := range want {
				assert.Equal(t, events, subjects(rc))
				assert.Empty(t, rc.bad)
			}
		})
	}
}

// TestWebhookFilterRefused sends filters and rate limits that are not
// valid: each is 400 invalid_create (POST) or invalid_update (PATCH), and
// nothing changes.
func TestWebhookFilterRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t), "--webhook-allow-private")
			rc := newReceiver(t)
			endpoints := w.base + "/v1/" + w.org + "/webhook_endpoints"
			created := swDo(t, "POST", endpoints, w.token, `{"url": "`+rc.srv.URL+`", "event_types": ["quotation.*"], "filter": ["status.to:eq:sent"], "rate_limit": 5}`, nil)
			require.Equal(t, http.StatusCreated, created.status, created.body)
			id := created.json(t)["data"].(map[string]any)["id"].(string)
			assert.Equal(t, 5.0, created.json(t)["data"].(map[string]any)["rate_limit"])
			before := swDo(t, "GET", endpoints+"/"+id, w.token, "", nil)
			require.Equal(t, http.StatusOK, before.status, before.body)
			for _, tc := range []struct {
				name, members string
			}{
				{"unknown field", `"filter": ["eta:eq:2026-01-01"]`},
				{"bad operator", `"filter": ["status:like:s%"]`},
				{"unknown operator", `"filter": ["status:between:a"]`},
				{"not a number", `"filter": ["total_weight_kg:gt:heavy"]`},
				{"not an integer", `"filter": ["total_packages:eq:2.5"]`},
				{"not a date", `"filter": ["valid_until:gte:soon"]`},
				{"not a state", `"filter": ["status.to:eq:delivered"]`},
				{"changed names no field", `"filter": ["changed:eq:eta"]`},
				{"isnull not a boolean", `"filter": ["total_packages:isnull:maybe"]`},
				{"no value", `"filter": ["status:eq"]`},
				{"empty", `"filter": []`},
				{"not strings", `"filter": [1]`},
				{"not a list", `"filter": "status:eq:sent"`},
				{"field of one resource only", `"event_types": ["quotation.*", "account.*"], "filter": ["total_packages:gt:1"]`},
				{"status flow missing", `"event_types": ["account.*"], "filter": ["status.to:eq:active"]`},
				{"zero rate", `"rate_limit": 0`},
				{"negative rate", `"rate_limit": -3`},
				{"fractional rate", `"rate_limit": 2.5`},
				{"rate as text", `"rate_limit": "5"`},
				{"rate too high", `"rate_limit": 1000000`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					post := swDo(t, "POST", endpoints, w.token, `{"url": "`+rc.srv.URL+`", "event_types": ["quotation.*"], `+tc.members+`}`, nil)
					if tc.name == "field of one resource only" || tc.name == "status flow missing" {
						post = swDo(t, "POST", endpoints, w.token, `{"url": "`+rc.srv.URL+`", `+tc.members+`}`, nil)
					}
					assert.Equal(t, http.StatusBadRequest, post.status, post.body)
					assert.Equal(t, "invalid_create", post.json(t)["error"], post.body)
					patch := swDo(t, "PATCH", endpoints+"/"+id, w.token, `{`+tc.members+`}`, nil)
					assert.Equal(t, http.StatusBadRequest, patch.status, patch.body)
					assert.Equal(t, "invalid_update", patch.json(t)["error"], patch.body)
				})
			}
			// Event types the stored filter does not hold for.
			patch := swDo(t, "PATCH", endpoints+"/"+id, w.token, `{"event_types": ["account.*"]}`, nil)
			assert.Equal(t, http.StatusBadRequest, patch.status, patch.body)
			assert.Equal(t, "invalid_update", patch.json(t)["error"], patch.body)

			list := swDo(t, "GET", endpoints, w.token, "", nil)
			require.Equal(t, http.StatusOK, list.status, list.body)
			assert.Len(t, list.json(t)["data"], 1, "no endpoint was created")
			after := swDo(t, "GET", endpoints+"/"+id, w.token, "", nil)
			assert.Equal(t, before.body, after.body, "the endpoint is as it was")
			assert.Equal(t, before.header.Get("ETag"), after.header.Get("ETag"))

			// A valid change of both, then both cleared.
			ok := swDo(t, "PATCH", endpoints+"/"+id, w.token, `{"filter": ["changed:in:status,total_packages"], "rate_limit": 20}`, nil)
			require.Equal(t, http.StatusOK, ok.status, ok.body)
			data := ok.json(t)["data"].(map[string]any)
			assert.Equal(t, []any{"changed:in:status,total_packages"}, data["filter"])
			assert.Equal(t, 20.0, data["rate_limit"])
			ok = swDo(t, "PATCH", endpoints+"/"+id, w.token, `{"filter": null, "rate_limit": null, "event_types": ["*"]}`, nil)
			require.Equal(t, http.StatusOK, ok.status, ok.body)
			data = ok.json(t)["data"].(map[string]any)
			assert.Nil(t, data["filter"])
			assert.Nil(t, data["rate_limit"])
		})
	}
}
