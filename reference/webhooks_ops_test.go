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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook/signature"
)

// hookCall is one delivery a hookLog received, as it came.
type hookCall struct {
	header http.Header
	body   []byte
	event  map[string]any
	// sdkErr is why the CloudEvents SDK's HTTP binding could not read the
	// delivery as a CloudEvent with its webhook-id, or nil.
	sdkErr error
}

// hookLog is a receiver that keeps every delivery as it came, without
// checking it, and answers status (204 unless set).
type hookLog struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int
	calls  []hookCall
}

func newHookLog(t *testing.T) *hookLog {
	h := &hookLog{status: http.StatusNoContent}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		call := hookCall{header: r.Header.Clone(), body: body, event: ev}
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		if ce, err := cehttp.NewEventFromHTTPRequest(req); err != nil {
			call.sdkErr = err
		} else if ce.ID() != r.Header.Get("webhook-id") {
			call.sdkErr = fmt.Errorf("the SDK read the event %q, not %q", ce.ID(), r.Header.Get("webhook-id"))
		}
		h.mu.Lock()
		h.calls = append(h.calls, call)
		status := h.status
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// snapshot returns the deliveries received so far.
func (h *hookLog) snapshot() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookCall(nil), h.calls...)
}

// setStatus sets the status of the answers from now on.
func (h *hookLog) setStatus(status int) {
	h.mu.Lock()
	h.status = status
	h.mu.Unlock()
}

// wait waits until n deliveries have come and returns them.
func (h *hookLog) wait(t *testing.T, n int) []hookCall {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.snapshot()) >= n }, 15*time.Second, 10*time.Millisecond, "%d deliveries", n)
	calls := h.snapshot()
	for _, c := range calls {
		require.NoError(t, c.sdkErr, "the CloudEvents SDK reads every delivery: %s", c.body)
	}
	return calls
}

// handSign is the Standard Webhooks signature computed by hand: "v1," and
// the base64 HMAC-SHA256 of "id.timestamp.body" under the key of secret.
func handSign(t *testing.T, secret string, c hookCall) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(c.header.Get("webhook-id") + "." + c.header.Get("webhook-timestamp") + "."))
	mac.Write(c.body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// verifiesWith reports whether both package signature and the Standard
// Webhooks library accept c with secret; they must agree.
func verifiesWith(t *testing.T, secret string, c hookCall) bool {
	t.Helper()
	ours := signature.Verify(secret, c.header, c.body) == nil
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	theirs := wh.Verify(c.body, c.header) == nil
	require.Equal(t, ours, theirs, "package signature and the Standard Webhooks library disagree")
	return ours
}

// hookEndpoint registers an endpoint at h for types and returns its path
// under the base and its secret.
func (w webhookWorld) hookEndpoint(t *testing.T, h *hookLog, types string) (path, secret string) {
	t.Helper()
	res := swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", w.token, `{"url": "`+h.srv.URL+`", "event_types": [`+types+`]}`, nil)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	data := res.json(t)["data"].(map[string]any)
	return "/v1/" + w.org + "/webhook_endpoints/" + data["id"].(string), data["secret"].(string)
}

// account creates an account in the world's branch and returns its id.
func (w webhookWorld) account(t *testing.T, name string) string {
	t.Helper()
	res := swDo(t, "POST", w.base+"/v1/"+w.branch+"/accounts", w.token, `{"company_name": "`+name+`"}`, nil)
	require.Equal(t, http.StatusCreated, res.status, res.body)
	return res.json(t)["data"].(map[string]any)["id"].(string)
}

// TestWebhookRotateSecret rotates an endpoint's secret through the built
// server: during the grace each delivery carries two signatures, the new
// secret's then the old one's, each equal to the HMAC computed by hand and
// accepted by package signature and the Standard Webhooks library; after
// the grace only the new one signs. Bad bodies change nothing.
func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			w := newWebhookWorld(t, dbURL, "--webhook-allow-private")
			h := newHookLog(t)
			endpoint, old := w.hookEndpoint(t, h, `"account.*"`)
			rotate := w.base + endpoint + "/rotate_secret"

			before := swDo(t, "GET", w.base+endpoint, w.token, "", nil)
			require.Equal(t, http.StatusOK, before.status, before.body)
			for _, body := range []string{`{"grace_seconds": -1}`, `{"grace_seconds": 604801}`, `{"grace_seconds": "60"}`, `{"grace_seconds": 1.5}`,
				`{"grace_seconds": null}`, `{"grace": 60}`, `[60]`, `{"grace_seconds": 1, "grace_seconds": 2}`} {
				res := swDo(t, "POST", rotate, w.token, body, nil)
				assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", body, res.body)
				assert.Equal(t, "invalid_request", res.json(t)["error"], body)
			}
			assert.Equal(t, http.StatusNotFound, swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints/"+w.org+"/rotate_secret", w.token, "", nil).status)
			assert.Equal(t, http.StatusMethodNotAllowed, swDo(t, "GET", rotate, w.token, "", nil).status)
			after := swDo(t, "GET", w.base+endpoint, w.token, "", nil)
			assert.Equal(t, before.header.Get("ETag"), after.header.Get("ETag"), "the refused rotations changed nothing")

			res := swDo(t, "POST", rotate, w.token, `{"grace_seconds": 3}`, map[string]string{"Idempotency-Key": "rotate-1"})
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			data := res.json(t)["data"].(map[string]any)
			current := data["secret"].(string)
			assert.True(t, strings.HasPrefix(current, "whsec_"))
			assert.NotEqual(t, old, current)
			expires, err := time.Parse(time.RFC3339, data["previous_secret_expires_at"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, time.Now().Add(3*time.Second), expires, 2*time.Second)
			replay := swDo(t, "POST", rotate, w.token, `{"grace_seconds": 3}`, map[string]string{"Idempotency-Key": "rotate-1"})
			require.Equal(t, http.StatusOK, replay.status, replay.body)
			assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
			assert.Equal(t, current, replay.json(t)["data"].(map[string]any)["secret"], "a replay shows the secret again, and rotates nothing")
			got := swDo(t, "GET", w.base+endpoint, w.token, "", nil)
			assert.NotContains(t, got.body, "whsec_", "GET never shows a secret")
			assert.Equal(t, data["previous_secret_expires_at"], got.json(t)["data"].(map[string]any)["previous_secret_expires_at"])

			// During the grace: both sign, the new one first.
			w.account(t, "During")
			during := h.wait(t, 1)[0]
			sigs := strings.Split(during.header.Get("webhook-signature"), " ")
			assert.Equal(t, []string{handSign(t, current, during), handSign(t, old, during)}, sigs)
			assert.True(t, verifiesWith(t, current, during))
			assert.True(t, verifiesWith(t, old, during))
			assert.False(t, verifiesWith(t, signature.NewSecret(), during))

			// After the grace: the new one alone.
			time.Sleep(time.Until(expires) + 100*time.Millisecond)
			w.account(t, "After")
			later := h.wait(t, 2)[1]
			assert.Equal(t, handSign(t, current, later), later.header.Get("webhook-signature"))
			assert.True(t, verifiesWith(t, current, later))
			assert.False(t, verifiesWith(t, old, later))
			got = swDo(t, "GET", w.base+endpoint, w.token, "", nil)
			assert.Nil(t, got.json(t)["data"].(map[string]any)["previous_secret_expires_at"])
			// Forgotten: the purge erases it.
			db, _, err := openDB(t.Context(), dbURL, 1)
			require.NoError(t, err)
			defer db.Close()
			id := strings.TrimPrefix(endpoint, "/v1/"+w.org+"/webhook_endpoints/")
			stored := func() (kept bool) {
				require.NoError(t, db.QueryRowContext(t.Context(), `SELECT previous_secret IS NOT NULL FROM waybill_webhook_endpoints WHERE id = '`+id+`'`).Scan(&kept))
				return kept
			}
			assert.True(t, stored(), "kept until the purge")
			_, err = runCommand(t, nil, "admin", "purge", "--database-url", dbURL)
			require.NoError(t, err)
			assert.False(t, stored(), "erased by the purge")

			// No grace, and no body (every default but the grace, given):
			// the old secret stops at once.
			res = swDo(t, "POST", rotate, w.token, `{"grace_seconds": 0}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			third := res.json(t)["data"].(map[string]any)["secret"].(string)
			assert.Nil(t, res.json(t)["data"].(map[string]any)["previous_secret_expires_at"])
			w.account(t, "Third")
			last := h.wait(t, 3)[2]
			assert.Equal(t, handSign(t, third, last), last.header.Get("webhook-signature"))
			res = swDo(t, "POST", rotate, w.token, "", nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			expires, err = time.Parse(time.RFC3339, res.json(t)["data"].(map[string]any)["previous_secret_expires_at"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, time.Now().Add(24*time.Hour), expires, time.Minute, "the default grace is a day")
		})
	}
}

// TestWebhookTestEvent sends a webhook.test event through the built
// server: it reaches the endpoint alone, signed, as a CloudEvent in
// structured mode; it is listed in the endpoint's deliveries and absent
// from the organization's feed; a failed test is tried once and never
// disables the endpoint; a disabled endpoint cannot be tested.
func TestWebhookTestEvent(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t), "--webhook-allow-private")
			h, other := newHookLog(t), newHookLog(t)
			endpoint, secret := w.hookEndpoint(t, h, `"*"`)
			w.hookEndpoint(t, other, `"*"`)
			test := w.base + endpoint + "/test"

			for _, c := range []struct {
				name, method, url, body string
				status                  int
			}{
				{"a member", "POST", test, `{"type": "quotation.created"}`, http.StatusBadRequest},
				{"not an object", "POST", test, `[]`, http.StatusBadRequest},
				{"no such endpoint", "POST", w.base + "/v1/" + w.org + "/webhook_endpoints/" + w.org + "/test", "", http.StatusNotFound},
				{"not a uuid", "POST", w.base + "/v1/" + w.org + "/webhook_endpoints/x/test", "", http.StatusNotFound},
				{"GET", "GET", test, "", http.StatusMethodNotAllowed},
			} {
				res := swDo(t, c.method, c.url, w.token, c.body, nil)
				assert.Equal(t, c.status, res.status, "%s: %s", c.name, res.body)
			}

			res := swDo(t, "POST", test, w.token, "", map[string]string{"Idempotency-Key": "test-1"})
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			queued := res.json(t)["data"].(map[string]any)
			assert.Equal(t, "webhook.test", queued["event_type"])
			assert.Equal(t, "pending", queued["status"])
			replay := swDo(t, "POST", test, w.token, "", map[string]string{"Idempotency-Key": "test-1"})
			assert.Equal(t, res.body, replay.body, "a replay queues nothing more")

			call := h.wait(t, 1)[0]
			assert.Equal(t, "application/cloudevents+json", call.header.Get("Content-Type"))
			assert.Equal(t, handSign(t, secret, call), call.header.Get("webhook-signature"))
			assert.True(t, verifiesWith(t, secret, call))
			assert.Equal(t, queued["event_id"], call.header.Get("webhook-id"))
			id := strings.TrimPrefix(endpoint, "/v1/"+w.org+"/webhook_endpoints/")
			assert.Equal(t, "webhook.test", call.event["type"])
			assert.Equal(t, "1.0", call.event["specversion"])
			assert.Equal(t, endpoint, call.event["source"])
			assert.Equal(t, id, call.event["subject"])
			assert.Equal(t, w.org, call.event["organizationid"])
			record := call.event["data"].(map[string]any)["record"].(map[string]any)
			assert.Equal(t, id, record["id"])
			assert.NotContains(t, string(call.body), "whsec_", "the event carries no secret")

			var deliveries []any
			require.Eventually(t, func() bool {
				list := swDo(t, "GET", w.base+endpoint+"/deliveries", w.token, "", nil)
				require.Equal(t, http.StatusOK, list.status, list.body)
				deliveries = list.json(t)["data"].([]any)
				return len(deliveries) == 1 && deliveries[0].(map[string]any)["status"] == "delivered"
			}, 10*time.Second, 20*time.Millisecond, "the test is recorded delivered: %v", deliveries)
			assert.Equal(t, "webhook.test", deliveries[0].(map[string]any)["event_type"])
			feed := swDo(t, "GET", w.base+"/v1/"+w.org+"/events?limit=1000", w.token, "", nil)
			require.Equal(t, http.StatusOK, feed.status, feed.body)
			assert.NotContains(t, feed.body, "webhook.test", "a test is not in the feed")
			time.Sleep(200 * time.Millisecond)
			assert.Empty(t, other.snapshot(), "the other endpoint got nothing")

			// A failed test: one attempt, the endpoint stays enabled.
			h.setStatus(http.StatusInternalServerError)
			res = swDo(t, "POST", test, w.token, "", nil)
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			failedID := res.json(t)["data"].(map[string]any)["id"]
			require.Eventually(t, func() bool {
				list := swDo(t, "GET", w.base+endpoint+"/deliveries?status=failed", w.token, "", nil)
				return strings.Contains(list.body, failedID.(string))
			}, 10*time.Second, 20*time.Millisecond, "the failed test")
			got := swDo(t, "GET", w.base+endpoint, w.token, "", nil)
			assert.Equal(t, "enabled", got.json(t)["data"].(map[string]any)["status"])
			redo := swDo(t, "POST", w.base+endpoint+"/deliveries/"+failedID.(string)+"/redeliver", w.token, "", nil)
			assert.Equal(t, http.StatusAccepted, redo.status, "a test may be sent again: %s", redo.body)

			require.Equal(t, http.StatusOK, swDo(t, "PATCH", w.base+endpoint, w.token, `{"status": "disabled"}`, nil).status)
			res = swDo(t, "POST", test, w.token, "", nil)
			assert.Equal(t, http.StatusConflict, res.status, res.body)
		})
	}
}

// TestWebhookDisabledEvent runs the built server with a short retry
// schedule (--webhook-max-attempts 2 --webhook-backoff 100ms): an endpoint
// whose receiver fails both attempts is disabled, and the organization's
// feed gets a webhook_endpoint.disabled event in the same transaction,
// delivered to the endpoints that subscribe to it (by its type, its
// resource's types or *) and shown in the feed to tokens with
// svc:webhooks:read only.
func TestWebhookDisabledEvent(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			w := newWebhookWorld(t, dbURL, "--webhook-allow-private", "--webhook-max-attempts", "2", "--webhook-backoff", "100ms")
			failing, exact, wildcard, all, accounts := newHookLog(t), newHookLog(t), newHookLog(t), newHookLog(t), newHookLog(t)
			failing.setStatus(http.StatusServiceUnavailable)
			bad, _ := w.hookEndpoint(t, failing, `"account.created"`)
			_, exactSecret := w.hookEndpoint(t, exact, `"webhook_endpoint.disabled"`)
			w.hookEndpoint(t, wildcard, `"webhook_endpoint.*"`)
			w.hookEndpoint(t, all, `"*"`)
			w.hookEndpoint(t, accounts, `"account.*"`)
			badID := strings.TrimPrefix(bad, "/v1/"+w.org+"/webhook_endpoints/")

			// Without svc:webhooks:read, no subscription to it.
			narrow := adminJSON(t, "admin", "app", "create", "--org", w.org, "--name", "Narrow", "--all-branches",
				"--scopes", "svc:webhooks:write svc:events:read svc:accounts:read", "--database-url", dbURL)
			narrowToken := rlToken(t, w.base, rlTenant{org: w.org, clientID: narrow["client_id"].(string), secret: narrow["client_secret"].(string)})
			res := swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", narrowToken, `{"url": "`+exact.srv.URL+`", "event_types": ["webhook_endpoint.disabled"]}`, nil)
			assert.Equal(t, http.StatusForbidden, res.status, res.body)
			assert.Contains(t, res.body, "svc:webhooks:read")
			res = swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints", w.token, `{"url": "`+exact.srv.URL+`", "event_types": ["webhook_endpoint.enabled"]}`, nil)
			assert.Equal(t, http.StatusBadRequest, res.status, res.body)

			w.account(t, "Unreachable")
			call := exact.wait(t, 1)[0]
			assert.Equal(t, "webhook_endpoint.disabled", call.event["type"])
			assert.Equal(t, bad, call.event["source"])
			assert.Equal(t, badID, call.event["subject"])
			assert.Equal(t, w.org, call.event["organizationid"])
			assert.True(t, verifiesWith(t, exactSecret, call))
			assert.Equal(t, handSign(t, exactSecret, call), call.header.Get("webhook-signature"))
			record := call.event["data"].(map[string]any)["record"].(map[string]any)
			assert.Equal(t, badID, record["id"])
			assert.Equal(t, "disabled", record["status"])
			assert.Contains(t, record["disabled_reason"], "HTTP 503")
			assert.NotContains(t, string(call.body), "whsec_")

			assert.Equal(t, "webhook_endpoint.disabled", wildcard.wait(t, 1)[0].event["type"])
			require.Eventually(t, func() bool {
				for _, c := range all.snapshot() {
					if c.event["type"] == "webhook_endpoint.disabled" {
						return true
					}
				}
				return false
			}, 10*time.Second, 10*time.Millisecond, "* gets it too")
			time.Sleep(200 * time.Millisecond)
			for _, c := range accounts.snapshot() {
				assert.Equal(t, "account.created", c.event["type"], "account.* does not get it")
			}
			assert.Len(t, failing.snapshot(), 2, "two attempts, then disabled")
			got := swDo(t, "GET", w.base+bad, w.token, "", nil)
			assert.Equal(t, "disabled", got.json(t)["data"].(map[string]any)["status"])
			assert.Len(t, exact.snapshot(), 1, "one event")
			out, err := runCommand(t, nil, "admin", "audit", "--org", w.org, "--database-url", dbURL)
			require.NoError(t, err)
			assert.Contains(t, out, `"action":"webhook_endpoint.disabled","actor":{"kind":"system","id":"webhook dispatcher"},"target":{"kind":"webhook_endpoint","id":"`+badID+`"}`,
				"the audit log has it too")

			// The feed: with svc:webhooks:read, by its type and its
			// resource's; without it, nothing.
			for _, types := range []string{"webhook_endpoint.disabled", "webhook_endpoint.*", "*"} {
				feed := swDo(t, "GET", w.base+"/v1/"+w.org+"/events?types="+types, w.token, "", nil)
				require.Equal(t, http.StatusOK, feed.status, feed.body)
				assert.Contains(t, feed.body, `"type":"webhook_endpoint.disabled"`, types)
				branch := swDo(t, "GET", w.base+"/v1/"+w.branch+"/events?types="+types, w.token, "", nil)
				assert.Contains(t, branch.body, `"type":"webhook_endpoint.disabled"`, "every scope of the organization shows it: %s", types)
			}
			feed := swDo(t, "GET", w.base+"/v1/"+w.org+"/events", narrowToken, "", nil)
			require.Equal(t, http.StatusOK, feed.status, feed.body)
			assert.Contains(t, feed.body, "account.created")
			assert.NotContains(t, feed.body, "webhook_endpoint.disabled", "not without svc:webhooks:read")
			assert.Equal(t, http.StatusBadRequest, swDo(t, "GET", w.base+"/v1/"+w.org+"/events?types=webhook_endpoint.deleted", w.token, "", nil).status)
		})
	}
}

// feedEvent is an event of the feed: its id, type and time.
type feedEvent struct {
	id, typ string
	at      time.Time
}

// feedEvents returns the organization's events of types, in the feed's
// order.
func (w webhookWorld) feedEvents(t *testing.T, types string) []feedEvent {
	t.Helper()
	res := swDo(t, "GET", w.base+"/v1/"+w.org+"/events?limit=1000&types="+types, w.token, "", nil)
	require.Equal(t, http.StatusOK, res.status, res.body)
	var out []feedEvent
	for _, e := range res.json(t)["data"].([]any) {
		m := e.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		require.NoError(t, err)
		out = append(out, feedEvent{id: m["id"].(string), typ: m["type"].(string), at: at})
	}
	return out
}

// assertInOrder asserts that calls are exactly the events want (ids in the
// feed's order), each once, those of each record (subject) in their
// order: deliveries of different records go out in parallel.
func assertInOrder(t *testing.T, want []string, calls []hookCall) {
	t.Helper()
	var got []string
	bySubject := map[string][]string{}
	for _, c := range calls {
		id := c.header.Get("webhook-id")
		got = append(got, id)
		subject, _ := c.event["subject"].(string)
		bySubject[subject] = append(bySubject[subject], id)
	}
	assert.ElementsMatch(t, want, got, "exactly the events, each once")
	for subject, ids := range bySubject {
		var inFeed []string
		for _, id := range want {
			if slices.Contains(ids, id) {
				inFeed = append(inFeed, id)
			}
		}
		assert.Equal(t, inFeed, ids, "the events of %s in their order", subject)
	}
}

// TestWebhookRecover recovers through the built server the events an
// endpoint missed while it was disabled: exactly those of the range it
// subscribes to, in the order of the feed, each once; a recovery of a
// disabled endpoint waits until it is enabled; bad ranges are 400 and
// queue nothing.
func TestWebhookRecover(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t), "--webhook-allow-private")
			h := newHookLog(t)
			endpoint, secret := w.hookEndpoint(t, h, `"account.*"`)
			// Another endpoint stays enabled: the fan-out goes on while the
			// first is disabled (with none enabled, it would wait).
			quotations := newHookLog(t)
			w.hookEndpoint(t, quotations, `"quotation.*"`)
			recoverURL := w.base + endpoint + "/recover"
			patch := func(status string) {
				t.Helper()
				res := swDo(t, "PATCH", w.base+endpoint, w.token, `{"status": "`+status+`"}`, nil)
				require.Equal(t, http.StatusOK, res.status, res.body)
			}

			first := w.account(t, "Before")
			h.wait(t, 1)
			patch("disabled")
			missed := []string{w.account(t, "Missed 1"), w.account(t, "Missed 2")}
			res := swDo(t, "PATCH", w.base+"/v1/"+w.branch+"/accounts/"+missed[0], w.token, `{"comment": "changed"}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			w.quotation(t, w.base) // another account and a quotation, which the endpoint does not get
			// The quotation's events reached the other endpoint: the fan-out
			// is past the missed events, which it handed out while the
			// endpoint was disabled.
			quotations.wait(t, 3)
			patch("enabled")
			time.Sleep(300 * time.Millisecond)
			require.Equal(t, 1, len(h.snapshot()), "nothing of the disabled time came")
			res = swDo(t, "PATCH", w.base+"/v1/"+w.branch+"/accounts/"+first, w.token, `{"comment": "live"}`, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			h.wait(t, 2)

			all := w.feedEvents(t, "account.*")
			require.Len(t, all, 6, "created, 2 missed created, 1 missed updated, the quotation's account, the live update")
			since, until := all[1].at, all[5].at // the first missed event, the live one (excluded)
			var want []string
			for _, e := range all[1:5] {
				want = append(want, e.id)
			}

			for _, c := range []struct{ name, body string }{
				{"no since", `{}`},
				{"no body", ``},
				{"since not a string", `{"since": 1}`},
				{"since not RFC 3339", `{"since": "2026-11-24 10:00"}`},
				{"since null", `{"since": null}`},
				{"since in the future", `{"since": "` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`},
				{"until before since", `{"since": "` + until.Format(time.RFC3339Nano) + `", "until": "` + since.Format(time.RFC3339Nano) + `"}`},
				{"until equal to since", `{"since": "` + since.Format(time.RFC3339Nano) + `", "until": "` + since.Format(time.RFC3339Nano) + `"}`},
				{"older than the retention", `{"since": "` + time.Now().Add(-8*24*time.Hour).UTC().Format(time.RFC3339) + `"}`},
				{"another member", `{"since": "` + since.Format(time.RFC3339Nano) + `", "types": ["account.*"]}`},
			} {
				res := swDo(t, "POST", recoverURL, w.token, c.body, nil)
				assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", c.name, res.body)
				assert.Equal(t, "invalid_request", res.json(t)["error"], c.name)
			}
			assert.Equal(t, http.StatusNotFound, swDo(t, "POST", w.base+"/v1/"+w.org+"/webhook_endpoints/"+w.org+"/recover", w.token, `{"since": "`+since.Format(time.RFC3339Nano)+`"}`, nil).status)
			assert.Equal(t, http.StatusMethodNotAllowed, swDo(t, "GET", recoverURL, w.token, "", nil).status)
			time.Sleep(300 * time.Millisecond)
			require.Equal(t, 2, len(h.snapshot()), "the refused recoveries queued nothing")

			body := `{"since": "` + since.Format(time.RFC3339Nano) + `", "until": "` + until.Format(time.RFC3339Nano) + `"}`
			res = swDo(t, "POST", recoverURL, w.token, body, nil)
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			data := res.json(t)["data"].(map[string]any)
			assert.Equal(t, 4.0, data["queued"])
			assert.Nil(t, data["next_since"])
			calls := h.wait(t, 6)
			for _, c := range calls[2:] {
				assert.True(t, verifiesWith(t, secret, c))
			}
			assertInOrder(t, want, calls[2:])
			time.Sleep(300 * time.Millisecond)
			assert.Equal(t, 6, len(h.snapshot()), "each once")

			// While disabled: queued, sent once enabled, in order again
			// (every event since the first, the ones delivered included).
			patch("disabled")
			res = swDo(t, "POST", recoverURL, w.token, `{"since": "`+all[0].at.Format(time.RFC3339Nano)+`"}`, nil)
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			assert.Equal(t, 6.0, res.json(t)["data"].(map[string]any)["queued"])
			time.Sleep(300 * time.Millisecond)
			assert.Equal(t, 6, len(h.snapshot()), "nothing while disabled")
			patch("enabled")
			calls = h.wait(t, 12)
			var every []string
			for _, e := range all {
				every = append(every, e.id)
			}
			assertInOrder(t, every, calls[6:])
		})
	}
}

// TestWebhookDisabledEventBranches: the disabled event of an endpoint of
// one branch is that branch's, that of an endpoint of every branch the
// organization's: an app limited to some branches sees the first and not
// the second, in the feed and through its endpoint, as its token sees the
// endpoints themselves; an app of every branch sees both.
func TestWebhookDisabledEventBranches(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
			north := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", db)
			createID(t, "admin", "branch", "create", "--org", org, "--name", "South", "--database-url", db)
			scopes := "svc:webhooks:read svc:webhooks:write svc:events:read svc:accounts:read svc:accounts:write"
			full := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Full", "--all-branches", "--scopes", scopes, "--database-url", db)
			limited := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Limited", "--branches", north, "--scopes", scopes, "--database-url", db)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--webhook-allow-private",
				"--webhook-max-attempts", "1", "--webhook-backoff", "100ms"}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			fullToken := rlToken(t, base, rlTenant{org: org, clientID: full["client_id"].(string), secret: full["client_secret"].(string)})
			limitedToken := rlToken(t, base, rlTenant{org: org, clientID: limited["client_id"].(string), secret: limited["client_secret"].(string)})
			endpoints := base + "/v1/" + org + "/webhook_endpoints"
			register := func(token string, h *hookLog, body string) string {
				t.Helper()
				res := swDo(t, "POST", endpoints, token, `{"url": "`+h.srv.URL+`", `+body+`}`, nil)
				require.Equal(t, http.StatusCreated, res.status, res.body)
				return res.json(t)["data"].(map[string]any)["id"].(string)
			}
			failing := newHookLog(t)
			failing.setStatus(http.StatusServiceUnavailable)
			everyBranch := register(fullToken, failing, `"event_types": ["account.created"]`)
			oneBranch := register(fullToken, failing, `"event_types": ["account.created"], "branch_ids": ["`+north+`"]`)
			fullWatch, limitedWatch := newHookLog(t), newHookLog(t)
			register(fullToken, fullWatch, `"event_types": ["webhook_endpoint.*"]`)
			register(limitedToken, limitedWatch, `"event_types": ["webhook_endpoint.*", "account.*"], "branch_ids": ["`+north+`"]`)

			res := swDo(t, "POST", base+"/v1/"+north+"/accounts", fullToken, `{"company_name": "Unreachable"}`, nil)
			require.Equal(t, http.StatusCreated, res.status, res.body)
			subjects := func(calls []hookCall) []string {
				var out []string
				for _, c := range calls {
					if c.event["type"] == "webhook_endpoint.disabled" {
						out = append(out, c.event["subject"].(string))
					}
				}
				slices.Sort(out)
				return out
			}
			both := []string{everyBranch, oneBranch}
			slices.Sort(both)
			assert.Equal(t, both, subjects(fullWatch.wait(t, 2)), "an app of every branch gets both")
			require.Eventually(t, func() bool { return len(subjects(limitedWatch.snapshot())) > 0 }, 10*time.Second, 10*time.Millisecond)
			time.Sleep(300 * time.Millisecond) // the other one, were it sent, would be there by now
			assert.Equal(t, []string{oneBranch}, subjects(limitedWatch.snapshot()), "an app of North gets North's endpoint's alone")

			feed := func(token string) []string {
				res := swDo(t, "GET", base+"/v1/"+org+"/events?types=webhook_endpoint.disabled", token, "", nil)
				require.Equal(t, http.StatusOK, res.status, res.body)
				var out []string
				for _, e := range res.json(t)["data"].([]any) {
					out = append(out, e.(map[string]any)["subject"].(string))
				}
				slices.Sort(out)
				return out
			}
			assert.Equal(t, both, feed(fullToken))
			assert.Equal(t, []string{oneBranch}, feed(limitedToken))
			res = swDo(t, "GET", endpoints+"/"+everyBranch, limitedToken, "", nil)
			assert.Equal(t, http.StatusNotFound, res.status, "as the API hides that endpoint from it")
		})
	}
}
