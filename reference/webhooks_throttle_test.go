package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWebhookRateLimit runs two replicas of the built binary on one
// database (PostgreSQL, and a SQLite file), registers an endpoint with a
// rate_limit, and writes a burst of records through both: the receiver
// sees every event once, and never more than the limit a second.
//
// The allowance: each replica takes the endpoint's turn in the database
// with the generic cell rate algorithm at no burst beyond one, so the
// turns are at least 1/rate_limit apart and any second holds at most
// rate_limit of them. The receiver, though, sees a delivery after its
// post's latency, which varies by milliseconds from one delivery to the
// next; so a window of one second at the receiver may catch one more
// turn than the replicas gave: rate_limit + 1 at most.
func TestWebhookRateLimit(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
			branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Hooks", "--all-branches", "--scopes", webhookScopes, "--database-url", dbURL)
			args := serveArgs("--database-url", dbURL, "--issuer", "https://waybill.test", "--webhook-allow-private")
			first, _ := startProcess(t, bin, nil, args...)
			second, _ := startProcess(t, bin, nil, args...)
			replicas := []string{first, second}
			token := rlToken(t, first, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})

			var (
				mu       sync.Mutex
				arrivals []time.Time
				count    = map[string]int{}
			)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrivals = append(arrivals, time.Now())
				count[r.Header.Get("webhook-id")]++
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(rc.Close)
			const rate, writes = 5, 24
			res := swDo(t, "POST", first+"/v1/"+org+"/webhook_endpoints", token, fmt.Sprintf(`{"url": %q, "event_types": ["account.created"], "rate_limit": %d}`, rc.URL, rate), nil)
			require.Equal(t, http.StatusCreated, res.status, res.body)
			endpoint := res.json(t)["data"].(map[string]any)["id"].(string)

			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range writes / 4 {
						res := swDo(t, "POST", replicas[(g+i)%2]+"/v1/"+branch+"/accounts", token, fmt.Sprintf(`{"company_name": "Firm %d-%d"}`, g, i), nil)
						assert.Equal(t, http.StatusCreated, res.status, res.body)
					}
				})
			}
			wg.Wait()
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(count) == writes
			}, 30*time.Second, 20*time.Millisecond, "every event arrives")
			time.Sleep(300 * time.Millisecond) // what a second copy would take
			mu.Lock()
			defer mu.Unlock()
			for id, n := range count {
				assert.Equal(t, 1, n, "event %s delivered once", id)
			}
			sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
			most := 0
			for i, start := range arrivals {
				n := sort.Search(len(arrivals), func(k int) bool { return !arrivals[k].Before(start.Add(time.Second)) }) - i
				most = max(most, n)
			}
			assert.LessOrEqual(t, most, rate+1, "deliveries in one second at the receiver")
			// writes deliveries at rate a second span at least
			// (writes-1)/rate seconds, less the jitter the allowance takes.
			span := arrivals[len(arrivals)-1].Sub(arrivals[0])
			assert.GreaterOrEqual(t, span, time.Duration(writes-2)*time.Second/rate, "the deliveries were spread")
			t.Logf("%d deliveries in %s, at most %d in one second", len(arrivals), span, most)

			// The postponed deliveries cost no attempt: each was delivered
			// at its first.
			list := swDo(t, "GET", first+"/v1/"+org+"/webhook_endpoints/"+endpoint+"/deliveries?limit=100", token, "", nil)
			require.Equal(t, http.StatusOK, list.status, list.body)
			deliveries := list.json(t)["data"].([]any)
			assert.Len(t, deliveries, writes)
			for _, d := range deliveries {
				d := d.(map[string]any)
				assert.Equal(t, "delivered", d["status"])
				assert.Len(t, d["attempts"], 1, "one attempt: waiting for the turn is none")
			}
		})
	}
}
