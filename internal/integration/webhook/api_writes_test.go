package webhook_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/tenancy"
	"github.com/waybillhq/waybill/webhook"
)

// count returns how many endpoints org has.
func (e *env) count(t testing.TB, org string) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow("SELECT count(*) FROM waybill_webhook_endpoints WHERE organization_id = $1", org).Scan(&n))
	return n
}

// A POST, PATCH or redeliver sent again with its Idempotency-Key writes
// once and gets the first answer again, the create's signing secret
// included (read from the endpoint, sealed at rest, not from a copy);
// another request with the key is 422 and changes nothing; another
// client's key of the same name is its own.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(a *webhook.API) { a.Sealer = newSealer(t) }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		create := body(map[string]any{"url": publicURL, "event_types": []string{"quotation.*"}})
		idem := map[string]string{"Idempotency-Key": `"create-1"`}

		first := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, idem)
		require.Equal(t, http.StatusCreated, first.status, first.raw)
		assert.Empty(t, first.header.Get("Idempotent-Replayed"))
		again := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, map[string]string{"Idempotency-Key": "create-1"})
		require.Equal(t, http.StatusCreated, again.status, again.raw)
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.Equal(t, first.raw, again.raw, "the same answer, byte for byte, the secret included")
		for _, h := range []string{"Location", "ETag", "Cache-Control"} {
			assert.Equal(t, first.header.Get(h), again.header.Get(h), h)
		}
		assert.Equal(t, 1, e.count(t, orgA), "created once")
		id := first.data()["id"].(string)
		var stored string
		require.NoError(t, e.db.QueryRow("SELECT body FROM waybill_idempotency_keys WHERE idempotency_key = 'create-1'").Scan(&stored))
		assert.NotContains(t, stored, first.data()["secret"].(string), "the secret is not kept a second time")

		other := e.doWith(t, http.MethodPost, endpoints(orgA), tok, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}), idem)
		assert.Equal(t, http.StatusUnprocessableEntity, other.status, other.raw)
		assert.Equal(t, "idempotency_key_reused", other.code())
		assert.Equal(t, 1, e.count(t, orgA))

		// Another client's key of the same name is its own.
		otherApp := e.sign(t, &bearer.Claims{Subject: "user-1", OrganizationID: orgA, ClientID: "client-9", Scopes: readAll})
		r := e.doWith(t, http.MethodPost, endpoints(orgA), otherApp, create, idem)
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		assert.Empty(t, r.header.Get("Idempotent-Replayed"))
		assert.Equal(t, 2, e.count(t, orgA))

		// Another user of the same app: the key is a new key, which
		// neither replays the first user's answer (nor its secret) nor
		// tells that the key was used, whatever the request.
		user2 := e.sign(t, &bearer.Claims{Subject: "user-2", OrganizationID: orgA, ClientID: "client-1", Scopes: readAll})
		mine := body(map[string]any{"url": publicURL, "event_types": []string{"vehicle.*"}})
		u := e.doWith(t, http.MethodPost, endpoints(orgA), user2, mine, idem)
		require.Equal(t, http.StatusCreated, u.status, u.raw)
		assert.Empty(t, u.header.Get("Idempotent-Replayed"))
		assert.NotEqual(t, id, u.data()["id"])
		assert.NotEqual(t, first.data()["secret"], u.data()["secret"])
		assert.Equal(t, 3, e.count(t, orgA))
		u2 := e.doWith(t, http.MethodPost, endpoints(orgA), user2, mine, idem)
		require.Equal(t, http.StatusCreated, u2.status, u2.raw)
		assert.Equal(t, "true", u2.header.Get("Idempotent-Replayed"))
		assert.Equal(t, u.raw, u2.raw)
		assert.Equal(t, 3, e.count(t, orgA))

		// PATCH: once; the replay is the first answer even after a later change.
		item := endpoints(orgA) + "/" + id
		patch := map[string]string{"Idempotency-Key": "patch-1"}
		p1 := e.doWith(t, http.MethodPatch, item, tok, `{"url":"https://1.0.0.1/a"}`, patch)
		require.Equal(t, http.StatusOK, p1.status, p1.raw)
		require.Equal(t, http.StatusOK, e.do(t, http.MethodPatch, item, tok, `{"url":"https://1.0.0.1/b"}`).status)
		p2 := e.doWith(t, http.MethodPatch, item, tok, `{"url":"https://1.0.0.1/a"}`, patch)
		require.Equal(t, http.StatusOK, p2.status, p2.raw)
		assert.Equal(t, "true", p2.header.Get("Idempotent-Replayed"))
		assert.JSONEq(t, p1.raw, p2.raw)
		assert.Equal(t, "https://1.0.0.1/b", e.do(t, http.MethodGet, item, tok, "").data()["url"], "the replay wrote nothing")
		assert.Equal(t, "idempotency_key_reused", e.doWith(t, http.MethodPatch, endpoints(orgA)+"/"+r.data()["id"].(string), tok, `{"url":"https://1.0.0.1/a"}`, patch).code(),
			"the same body for another endpoint is another request")

		// Redeliver: the second one is the first answer, not a new round.
		now := time.Now().UTC()
		e.addEvent(t, orgA, 1, "0d000000-0000-4000-8000-000000000001", "quotation.created")
		delivery := e.addDelivery(t, id, orgA, 1, "0d000000-0000-4000-8000-000000000001", "failed", 10, now, now, nil)
		redeliver := item + "/deliveries/" + delivery + "/redeliver"
		d1 := e.doWith(t, http.MethodPost, redeliver, tok, "", map[string]string{"Idempotency-Key": "again-1"})
		require.Equal(t, http.StatusAccepted, d1.status, d1.raw)
		_, err := e.db.Exec("UPDATE waybill_webhook_deliveries SET status = 'failed', attempts = 3 WHERE id = $1", delivery)
		require.NoError(t, err)
		d2 := e.doWith(t, http.MethodPost, redeliver, tok, "", map[string]string{"Idempotency-Key": "again-1"})
		require.Equal(t, http.StatusAccepted, d2.status, d2.raw)
		assert.Equal(t, "true", d2.header.Get("Idempotent-Replayed"))
		assert.JSONEq(t, d1.raw, d2.raw)
		var status string
		require.NoError(t, e.db.QueryRow("SELECT status FROM waybill_webhook_deliveries WHERE id = $1", delivery).Scan(&status))
		assert.Equal(t, "failed", status, "the replay sent nothing again")

		// A deleted endpoint's create replays as it was stored, without a secret to show.
		require.Equal(t, http.StatusOK, e.do(t, http.MethodDelete, item, tok, "").status)
		gone := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, idem)
		require.Equal(t, http.StatusCreated, gone.status, gone.raw)
		assert.NotContains(t, gone.data(), "secret")

		for _, bad := range []string{"", `""`, "has space", strings.Repeat("k", 256)} {
			r := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, map[string]string{"Idempotency-Key": bad})
			assert.Equal(t, http.StatusBadRequest, r.status, "%q: %s", bad, r.raw)
		}
	})
}

// A replay, and a request that reuses a key for another request, are
// requests: the API's Middleware, here a rate limit of 3 a minute per
// organization, counts each, and over the limit refuses them with 429
// before their key is looked up: no stored answer, no secret.
func TestIdempotencyKeyRateLimited(t *testing.T) {
	t.Parallel()
	limited := func(a *webhook.API) {
		a.Registry.Middleware = ratelimit.MiddlewareWithOptions(ratelimit.Options{
			Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{}),
			Limit:   ratelimit.Limit{Name: "rest", Quota: 3, Window: time.Minute},
			Key: func(r *http.Request) (string, bool) {
				t, ok := tenancy.FromContext(r.Context())
				return t.OrganizationID, ok
			},
		})
	}
	eachBackend(t, limited, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		create := body(map[string]any{"url": publicURL, "event_types": []string{"*"}})
		other := body(map[string]any{"url": publicURL, "event_types": []string{"quotation.*"}})
		idem := map[string]string{"Idempotency-Key": "charged-1"}

		first := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, idem)
		require.Equal(t, http.StatusCreated, first.status, first.raw)
		assert.True(t, strings.HasPrefix(first.header.Get("RateLimit"), `"rest";r=2;`), first.header.Get("RateLimit"))
		again := e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, idem)
		require.Equal(t, http.StatusCreated, again.status, again.raw)
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.True(t, strings.HasPrefix(again.header.Get("RateLimit"), `"rest";r=1;`), "a replay counts: %s", again.header.Get("RateLimit"))
		reused := e.doWith(t, http.MethodPost, endpoints(orgA), tok, other, idem)
		assert.Equal(t, "idempotency_key_reused", reused.code(), reused.raw)
		assert.True(t, strings.HasPrefix(reused.header.Get("RateLimit"), `"rest";r=0;`), "a 422 counts: %s", reused.header.Get("RateLimit"))

		for _, b := range []string{create, other} {
			r := e.doWith(t, http.MethodPost, endpoints(orgA), tok, b, idem)
			assert.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
			assert.Equal(t, "rate_limited", r.code())
			assert.NotEmpty(t, r.body["error_description"])
			assert.Empty(t, r.header.Get("Idempotent-Replayed"))
			assert.NotContains(t, r.raw, first.data()["secret"].(string))
		}
		assert.Equal(t, 1, e.count(t, orgA))
	})
}

// Requests sent at once with one key write once: every answer is the
// first one.
func TestIdempotencyKeyConcurrently(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		create := body(map[string]any{"url": publicURL, "event_types": []string{"*"}})
		answers := make([]response, 6)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				answers[i] = e.doWith(t, http.MethodPost, endpoints(orgA), tok, create, map[string]string{"Idempotency-Key": "at-once"})
			})
		}
		wg.Wait()
		for _, r := range answers {
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			assert.JSONEq(t, answers[0].raw, r.raw)
		}
		assert.Equal(t, 1, e.count(t, orgA))
	})
}

// Every answer with one endpoint has a strong ETag of the endpoint as GET
// shows it; If-None-Match gets 304, and a PATCH or DELETE whose If-Match
// names another version is 412 with the endpoint as stored, and changes
// nothing.
func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		created := e.do(t, http.MethodPost, endpoints(orgA), tok, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))
		require.Equal(t, http.StatusCreated, created.status, created.raw)
		item := endpoints(orgA) + "/" + created.data()["id"].(string)
		tag := created.header.Get("ETag")
		require.Regexp(t, `^"[A-Za-z0-9_-]{22}"$`, tag)

		got := e.do(t, http.MethodGet, item, tok, "")
		assert.Equal(t, tag, got.header.Get("ETag"), "the created endpoint's tag is GET's: the secret is not part of it")
		for _, inm := range []string{tag, `W/` + tag, `"x", ` + tag, "*"} {
			r := e.doWith(t, http.MethodGet, item, tok, "", map[string]string{"If-None-Match": inm})
			assert.Equal(t, http.StatusNotModified, r.status, inm)
			assert.Equal(t, tag, r.header.Get("ETag"))
			assert.Empty(t, r.raw)
		}
		assert.Equal(t, http.StatusOK, e.doWith(t, http.MethodGet, item, tok, "", map[string]string{"If-None-Match": `"other"`}).status)

		patched := e.doWith(t, http.MethodPatch, item, tok, `{"url":"https://1.0.0.1/a"}`, map[string]string{"If-Match": tag})
		require.Equal(t, http.StatusOK, patched.status, patched.raw)
		newTag := patched.header.Get("ETag")
		assert.NotEqual(t, tag, newTag)
		assert.Equal(t, newTag, e.do(t, http.MethodGet, item, tok, "").header.Get("ETag"))

		for _, tc := range []struct{ method, body string }{{http.MethodPatch, `{"url":"https://1.0.0.1/b"}`}, {http.MethodDelete, ""}} {
			for _, im := range []string{tag, "W/" + newTag} {
				r := e.doWith(t, tc.method, item, tok, tc.body, map[string]string{"If-Match": im})
				require.Equal(t, http.StatusPreconditionFailed, r.status, "%s %s: %s", tc.method, im, r.raw)
				assert.Equal(t, "precondition_failed", r.code())
				assert.Equal(t, newTag, r.header.Get("ETag"))
				assert.Equal(t, "https://1.0.0.1/a", r.data()["url"], "data is the endpoint as stored")
				assert.Equal(t, "v1", r.body["version"])
			}
		}
		assert.Equal(t, "https://1.0.0.1/a", e.do(t, http.MethodGet, item, tok, "").data()["url"], "nothing changed")
		deleted := e.doWith(t, http.MethodDelete, item, tok, "", map[string]string{"If-Match": "*"})
		require.Equal(t, http.StatusOK, deleted.status, deleted.raw)
		assert.Equal(t, newTag, deleted.header.Get("ETag"))
		assert.Equal(t, http.StatusNotFound, e.doWith(t, http.MethodDelete, item, tok, "", map[string]string{"If-Match": "*"}).status,
			"an unknown endpoint stays 404")
	})
}
