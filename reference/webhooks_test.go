package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receiver is a webhook receiver for the tests: it checks every delivery's
// signature with its own implementation of the Standard Webhooks scheme
// (not package webhook's) and keeps what arrived.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	hold   chan struct{} // when not nil, every delivery waits for it to close
	held   chan string   // the ids of the deliveries that are waiting
	got    []map[string]any
	events []*cloudevents.Event // got, as the CloudEvents SDK read them
	count  map[string]int       // deliveries by webhook-id, bad ones included
	bad    []string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{count: map[string]int{}, held: make(chan string, 100)}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	rc.mu.Lock()
	rc.count[id]++
	hold, secret := rc.hold, rc.secret
	rc.mu.Unlock()
	if hold != nil {
		rc.held <- id
		<-hold
	}
	problem := ""
	switch key, decodeErr := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); {
	case err != nil:
		problem = "body: " + err.Error()
	case decodeErr != nil || !strings.HasPrefix(secret, "whsec_"):
		problem = "no secret yet"
	default:
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "." + string(body)))
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		at, tsErr := strconv.ParseInt(ts, 10, 64)
		if sig != want || tsErr != nil || time.Since(time.Unix(at, 0)).Abs() > 5*time.Minute || r.Header.Get("Content-Type") != "application/cloudevents+json" {
			problem = fmt.Sprintf("signature %q, timestamp %q, content type %q", sig, ts, r.Header.Get("Content-Type"))
		}
	}
	var ev map[string]any
	var ce *cloudevents.Event
	if problem == "" {
		// As a receiver built on the CloudEvents SDK reads it.
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		if ce, err = cehttp.NewEventFromHTTPRequest(req); err != nil || ce.ID() != id {
			problem = fmt.Sprintf("the CloudEvents HTTP binding reads no event %s from %s: %v", id, body, err)
		} else if err := json.Unmarshal(body, &ev); err != nil {
			problem = fmt.Sprintf("body %s: %v", body, err)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if problem != "" {
		rc.bad = append(rc.bad, problem)
		http.Error(w, problem, http.StatusBadRequest)
		return
	}
	rc.got = append(rc.got, ev)
	rc.events = append(rc.events, ce)
	w.WriteHeader(http.StatusNoContent)
}

// types returns the types of the events received, in order.
func (rc *receiver) types() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, ev := range rc.got {
		out = append(out, ev["type"].(string))
	}
	return out
}

// webhookWorld is a server with an organization, a branch and an app
// whose token may write webhooks, accounts and quotations.
type webhookWorld struct {
	base, org, branch, token string
}

var webhookScopes = "svc:webhooks:read svc:webhooks:write svc:events:read svc:accounts:read svc:accounts:write svc:quotations:read svc:quotations:write"

func newWebhookWorld(t testing.TB, dbURL string, serve ...string) webhookWorld {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Hooks", "--all-branches", "--scopes", webhookScopes, "--database-url", dbURL)
	base, _, stop := startRun(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, serve...), env(nil))
	t.Cleanup(func() { require.NoError(t, stop()) })
	token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})
	return webhookWorld{base: base, org: org, branch: branch, token: token}
}

// register registers an endpoint at url for types and returns its id,
// giving its secret to rc.
func (w webhookWorld) register(t *testing.T, rc *receiver, types string) string {
	t.Helper()
	res := swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", w.token, `{"url": "`+rc.srv.URL+`", "event_types": [`+types+`]}`, nil)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	data := res.json(t)["data"].(map[string]any)
	rc.mu.Lock()
	rc.secret = data["secret"].(string)
	rc.mu.Unlock()
	return data["id"].(string)
}

// quotation creates an account and a quotation of it, and moves the
// quotation to sent; it returns the quotation's id.
func (w webhookWorld) quotation(t *testing.T, base string) string {
	t.Helper()
	account := swDo(t, "POST", base+"/v1/"+w.branch+"/accounts", w.token, `{"company_name": "Firm"}`, nil)
	require.Equal(t, http.StatusCreated, account.status, account.body)
	accountID := account.json(t)["data"].(map[string]any)["id"].(string)
	q := swDo(t, "POST", base+"/v1/"+w.branch+"/quotations", w.token, `{"account_id": "`+accountID+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24"}`, nil)
	require.Equal(t, http.StatusCreated, q.status, q.body)
	id := q.json(t)["data"].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, swDo(t, "PATCH", base+"/v1/"+w.branch+"/quotations/"+id, w.token, `{"status": "sent"}`, nil).status)
	return id
}

// TestWebhooks registers an endpoint through the API of the server and
// follows the writes of a quotation to it: signed deliveries in the order
// of the record's events, only the types it asked for, the attempts
// listed, the figures in /metrics; and private addresses refused without
// --webhook-allow-private.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			w := newWebhookWorld(t, dbURL, "--webhook-allow-private")
			rc := newReceiver(t)
			endpoint := w.register(t, rc, `"quotation.*"`)
			qid := w.quotation(t, w.base)
			require.Eventually(t, func() bool { return len(rc.types()) == 3 }, 10*time.Second, 10*time.Millisecond, "received %v", rc.types())
			assert.Equal(t, []string{"quotation.created", "quotation.updated", "quotation.status_changed"}, rc.types(), "in the order of the record's events; no account event")
			assert.Empty(t, rc.bad)
			rc.mu.Lock()
			assert.Equal(t, qid, rc.got[0]["subject"])
			ces := rc.events
			rc.mu.Unlock()

			// The events, as the CloudEvents SDK read them, carry the times
			// of the record as the API answers it.
			get := swDo(t, "GET", w.base+"/v1/"+w.branch+"/quotations/"+qid, w.token, "", nil)
			require.Equal(t, http.StatusOK, get.status, get.body)
			record := get.json(t)["data"].(map[string]any)
			require.Len(t, ces, 3)
			for i, want := range []string{record["created_at"].(string), record["updated_at"].(string), record["updated_at"].(string)} {
				assert.Equal(t, "/v1/"+w.branch+"/quotations/"+qid, ces[i].Source())
				assert.Equal(t, rc.types()[i], ces[i].Type())
				assert.Equal(t, want, ces[i].Time().UTC().Format("2006-01-02T15:04:05.000000Z"), "the time of %s", ces[i].Type())
				var data struct {
					Record map[string]any `json:"record"`
				}
				require.NoError(t, json.Unmarshal(ces[i].Data(), &data))
				assert.Equal(t, qid, data.Record["id"])
				if i == 2 {
					assert.Equal(t, record, data.Record, "the last event carries the record as it is")
				}
			}

			// The receiver keeps a delivery when it arrives; the server records
			// it once the answer is back.
			var deliveries []any
			require.Eventually(t, func() bool {
				list := swDo(t, "GET", w.base+"/v1/"+w.org+"/webhook_endpoints/"+endpoint+"/deliveries", w.token, "", nil)
				require.Equal(t, http.StatusOK, list.status, list.body)
				deliveries = list.json(t)["data"].([]any)
				for _, d := range deliveries {
					if d.(map[string]any)["status"] != "delivered" {
						return false
					}
				}
				return len(deliveries) == 3
			}, 10*time.Second, 20*time.Millisecond, "three deliveries recorded delivered: %v", deliveries)
			for _, d := range deliveries {
				attempts := d.(map[string]any)["attempts"].([]any)
				require.Len(t, attempts, 1)
				assert.Equal(t, 204.0, attempts[0].(map[string]any)["status_code"])
			}

			var metrics swAnswer
			require.Eventually(t, func() bool {
				metrics = swDo(t, "GET", w.base+"/metrics", "", "", nil)
				return strings.Contains(metrics.body, `waybill_webhook_attempts_total{outcome="delivered"} 3`)
			}, 10*time.Second, 20*time.Millisecond, "three attempts delivered in /metrics")
			assert.Contains(t, metrics.body, "waybill_webhook_deliveries_pending 0")
			assert.Contains(t, metrics.body, "waybill_events_feed_lag_seconds 0")

			// Another server on the database, without the flag.
			strict := newWebhookWorld(t, dbURL)
			for _, url := range []string{rc.srv.URL, "http://10.0.0.1/hook", "http://169.254.169.254/latest", "http://localhost:9/hook"} {
				res := swDo(t, "POST", strict.base+"/v1/"+strict.org+"/webhook_endpoints", strict.token, `{"url": "`+url+`", "event_types": ["*"]}`, nil)
				assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", url, res.body)
			}
		})
	}
}
