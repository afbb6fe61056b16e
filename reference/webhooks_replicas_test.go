package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// TestWebhookReplicas runs the built binary as several replicas on one
// PostgreSQL database: two replicas deliver each event once between them,
// and when the replica delivering an event is killed (SIGKILL) in the
// middle of the delivery, another one delivers it once the dead one's
// lease has run out.
func TestWebhookReplicas(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL := testdb.PostgresURL(t)
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Hooks", "--all-branches", "--scopes", webhookScopes, "--database-url", dbURL)
	// One issuer for every replica; a lease of 6 × 2 s: a dead replica's
	// delivery waits 12 s for another.
	args := serveArgs("--database-url", dbURL, "--issuer", "https://waybill.test", "--webhook-allow-private", "--webhook-timeout", "2s")
	replicas := []*proc{startProc(t, bin, nil, args...), startProc(t, bin, nil, args...)}
	tenant := rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}
	w := webhookWorld{base: replicas[0].url, org: org, branch: branch, token: rlToken(t, replicas[0].url, tenant)}
	rc := newReceiver(t)
	endpoint := w.register(t, rc, `"account.*"`)

	// 40 accounts, written through both replicas at once.
	const writes = 40
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range writes / 4 {
				base := replicas[(g+i)%2].url
				res := swDo(t, "POST", base+"/v1/"+branch+"/accounts", w.token, fmt.Sprintf(`{"company_name": "Firm %d-%d"}`, g, i), nil)
				assert.Equal(t, http.StatusCreated, res.status, res.body)
			}
		})
	}
	wg.Wait()
	received := func() (ids, deliveries int) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, n := range rc.count {
			deliveries += n
		}
		return len(rc.count), deliveries
	}
	require.Eventually(t, func() bool { ids, _ := received(); return ids == writes }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(time.Second) // what a second copy would take to arrive
	ids, deliveries := received()
	assert.Equal(t, writes, ids)
	assert.Equal(t, writes, deliveries, "each event was delivered once, by one of the replicas")
	assert.Empty(t, rc.bad)

	// One replica left, whose delivery the receiver holds until it is
	// killed; a new replica delivers it after the lease.
	require.NoError(t, replicas[1].stop(t))
	hold := make(chan struct{})
	rc.mu.Lock()
	rc.hold = hold
	rc.mu.Unlock()
	res := swDo(t, "POST", replicas[0].url+"/v1/"+branch+"/accounts", w.token, `{"company_name": "Held"}`, nil)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	var held string
	select {
	case held = <-rc.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery did not arrive")
	}
	replicas[0].kill9(t)
	rc.mu.Lock()
	rc.hold = nil
	rc.mu.Unlock()
	close(hold)
	killedAt := time.Now()
	third := startProc(t, bin, nil, args...)
	require.Eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.count[held] == 2
	}, 30*time.Second, 50*time.Millisecond, "the held delivery is delivered again by another replica")
	assert.Greater(t, time.Since(killedAt), 8*time.Second, "not before the dead replica's lease ran out")

	// The receiver counts a delivery when it arrives; the replica records it
	// once the answer is back.
	var found map[string]any
	require.Eventually(t, func() bool {
		list := swDo(t, "GET", third.url+"/v1/"+org+"/webhook_endpoints/"+endpoint+"/deliveries?limit=100", w.token, "", nil)
		require.Equal(t, http.StatusOK, list.status, list.body)
		for _, d := range list.json(t)["data"].([]any) {
			if d := d.(map[string]any); d["event_id"] == held {
				found = d
			}
		}
		return found != nil && found["status"] == "delivered"
	}, 10*time.Second, 50*time.Millisecond, "the held delivery is recorded delivered: %v", found)
	assert.Len(t, found["attempts"], 1, "the killed replica's attempt was never recorded; the second one was")
	require.NoError(t, third.stop(t))
}
