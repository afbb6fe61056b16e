package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveWebhookWorkers is how many deliveries a server posts at once: the
// dispatcher's default, which serve keeps.
const serveWebhookWorkers = 8

// fairOrg is an organization of the fairness test: its branch and app,
// its token on the server, and the receiver of its one endpoint.
type fairOrg struct {
	webhookWorld
	name   string
	tenant rlTenant
	rc     *receiver
}

// newFairOrg creates, in the database dbURL, an organization with a
// branch and an app whose token may write webhooks and quotations, and a
// receiver for its endpoint; connect gets its token once a server runs.
func newFairOrg(t *testing.T, dbURL, name string) *fairOrg {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", "Org "+name, "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Hooks "+name, "--all-branches", "--scopes", webhookScopes, "--database-url", dbURL)
	return &fairOrg{
		webhookWorld: webhookWorld{org: org, branch: branch},
		name:         name,
		tenant:       rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)},
		rc:           newReceiver(t),
	}
}

// connect gets o's token from the server at base and registers o's
// receiver as its endpoint for the quotation events.
func (o *fairOrg) connect(t *testing.T, base string) {
	t.Helper()
	o.base = base
	o.token = rlToken(t, base, o.tenant)
	o.register(t, o.rc, `"quotation.*"`)
}

// quotations creates an account and n quotations of it, one
// quotation.created event each, and returns the quotations' ids.
func (o *fairOrg) quotations(t *testing.T, n int) []string {
	t.Helper()
	account := swDo(t, "POST", o.base+"/v1/"+o.branch+"/accounts", o.token, `{"company_name": "Firm `+o.name+`"}`, nil)
	require.Equal(t, http.StatusCreated, account.status, account.body)
	accountID := account.json(t)["data"].(map[string]any)["id"].(string)
	ids := make([]string, n)
	for i := range ids {
		q := swDo(t, "POST", o.base+"/v1/"+o.branch+"/quotations", o.token, `{"account_id": "`+accountID+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24"}`, nil)
		require.Equal(t, http.StatusCreated, q.status, q.body)
		ids[i] = q.json(t)["data"].(map[string]any)["id"].(string)
	}
	return ids
}

// arrived returns how many deliveries reached rc, answered or not.
func (rc *receiver) arrived() (n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, c := range rc.count {
		n += c
	}
	return n
}

// subjects returns the subjects of the events rc answered, in order.
func (rc *receiver) subjects() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, ev := range rc.got {
		out = append(out, fmt.Sprint(ev["subject"]))
	}
	return out
}

// TestWebhookFairnessThroughTheServer: the receivers of two organizations
// of one server hang, each with a backlog of deliveries; the server's
// dispatcher shares its workers between them and keeps one free, so that
// a third organization's delivery leaves while they still hang. Once they
// answer, every delivery arrives exactly once.
//
// The attempts never time out here (--webhook-timeout is far above the
// test's guards): a worker freed by a timed-out attempt could carry the
// third organization's delivery on a dispatcher that lets the two take
// every worker, and the attempt's retry would be a second copy at its
// receiver.
func TestWebhookFairnessThroughTheServer(t *testing.T) {
	t.Parallel()
	const backlog = 20 // quotations of A and of B, deliveries waiting behind the hung ones
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			a, bb, c := newFairOrg(t, dbURL, "A"), newFairOrg(t, dbURL, "B"), newFairOrg(t, dbURL, "C")
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL,
				"--webhook-allow-private", "--webhook-timeout", "2m"}, env(nil))
			t.Cleanup(func() { require.NoError(t, stop()) })
			for _, o := range []*fairOrg{a, bb, c} {
				o.connect(t, base)
			}

			// A's and B's receivers hold every delivery until release, which
			// runs before the server stops and the receivers close, also when
			// the test fails.
			hold := make(chan struct{})
			release := sync.OnceFunc(func() {
				for _, o := range []*fairOrg{a, bb} {
					o.rc.mu.Lock()
					o.rc.hold = nil
					o.rc.mu.Unlock()
				}
				close(hold)
			})
			t.Cleanup(release)
			for _, o := range []*fairOrg{a, bb} {
				o.rc.mu.Lock()
				o.rc.hold = hold
				o.rc.mu.Unlock()
			}
			want := map[*fairOrg][]string{a: a.quotations(t, backlog), bb: bb.quotations(t, backlog)}
			for _, o := range []*fairOrg{a, bb} {
				select {
				case <-o.rc.held:
				case <-time.After(wait):
					t.Fatalf("%s's receiver holds none of its %d deliveries", o.name, backlog)
				}
			}

			want[c] = c.quotations(t, 1)
			arrived := assert.Eventually(t, func() bool { return len(c.rc.subjects()) > 0 }, wait, 10*time.Millisecond,
				"C's delivery arrives while A's and B's receivers hang")
			require.True(t, arrived, "A's receiver holds %d deliveries, B's %d", a.rc.arrived(), bb.rc.arrived())
			t.Logf("when C's delivery arrived, A's receiver held %d deliveries, B's %d", a.rc.arrived(), bb.rc.arrived())
			assert.Equal(t, want[c], c.rc.subjects())
			for _, o := range []*fairOrg{a, bb} {
				assert.Empty(t, o.rc.subjects(), "%s's receiver answered nothing yet", o.name)
				assert.LessOrEqual(t, o.rc.arrived(), serveWebhookWorkers/2, "%s holds at most half of the workers", o.name)
			}
			assert.Less(t, a.rc.arrived()+bb.rc.arrived(), serveWebhookWorkers, "A and B left a worker free")

			release()
			// Every attempt is counted once it is recorded.
			attempts := func(outcome string) float64 {
				v, _ := findMetric(scrape(t, base), "waybill_webhook_attempts_total", map[string]string{"outcome": outcome})
				return v
			}
			total := 2*backlog + 1
			require.Eventually(t, func() bool { return attempts("delivered") == float64(total) }, wait, 20*time.Millisecond,
				"%d attempts delivered", total)
			assert.Zero(t, attempts("retried"), "no attempt failed")
			assert.Zero(t, attempts("failed"), "no attempt failed")
			for o, ids := range want {
				assert.ElementsMatch(t, ids, o.rc.subjects(), "%s's receiver answered each of its quotations' events", o.name)
				o.rc.mu.Lock()
				assert.Len(t, o.rc.count, len(ids), "%s's receiver saw one webhook-id per event", o.name)
				for id, n := range o.rc.count {
					assert.Equal(t, 1, n, "%s's receiver got %s once", o.name, id)
				}
				assert.Empty(t, o.rc.bad, o.name)
				o.rc.mu.Unlock()
			}
		})
	}
}
