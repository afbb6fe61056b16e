package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
		h.mu.Lock()
		h.calls = append(h.calls, hookCall{header: r.Header.Clone(), body: body, event: ev})
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
	return h.snapshot()
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
			w := newWebhookWorld(t, b.url(t), "--webhook-allow-private")
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
