package webhook_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
	"github.com/waybillhq/waybill/webhook/signature"
)

func TestDispatcherDelivers(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, nil)
		sealer := newSealer(t)
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"quotation.*"}, Sealer: sealer})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		var seen outcomes
		d := e.dispatcher(c)
		d.Sealer, d.Observe = sealer, seen.Observe

		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rc.requireClean()
		require.Equal(t, []string{ev.ID}, rc.Got())
		got := rc.got[0]
		var body string
		e.queryRow(`SELECT body FROM waybill_events WHERE id = ?`, []any{ev.ID}, &body)
		assert.Equal(t, body, string(got.Body), "the body is the stored CloudEvent")
		assert.Equal(t, ev.ID, got.Header.Get("webhook-id"))
		assert.Equal(t, strconv.FormatInt(c.Now().Unix(), 10), got.Timestamp)
		assert.Equal(t, "application/cloudevents+json", got.Header.Get("Content-Type"), "CloudEvents structured mode")
		assert.Equal(t, "Waybill-Webhooks/1", got.Header.Get("User-Agent"))
		require.NoError(t, signature.Verify(secret, got.Header, got.Body), "package webhook's Verify agrees")

		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "delivered", dl.Status)
		assert.Equal(t, 1, dl.Attempts)
		assert.Equal(t, []attempt{{N: 1, Code: 200}}, e.attempts(dl.ID))
		assert.Equal(t, []webhook.Outcome{webhook.Delivered}, seen.Get())

		// Nothing is delivered twice.
		n, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Len(t, rc.Got(), 1)
	})
}

func TestDispatcherRetriesAfterServerErrors(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(_ *http.Request, _ string, _ []byte, try int) int {
			if try < 3 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		var (
			seen    outcomes
			mu      sync.Mutex
			backoff []int
		)
		d := e.dispatcher(c)
		d.Observe = seen.Observe
		d.Backoff = func(attempt int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			backoff = append(backoff, attempt)
			return time.Duration(attempt) * time.Minute
		}

		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
		dl := e.deliveryOf(ep, ev.ID)
		require.Equal(t, "pending", dl.Status)
		require.Equal(t, 1, dl.Attempts)

		// Not due before its backoff.
		c.Advance(59 * time.Second)
		n, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
		require.Len(t, rc.Got(), 1)

		c.Advance(time.Second)
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Len(t, rc.Got(), 2)
		require.Equal(t, 2, e.deliveryOf(ep, ev.ID).Attempts)

		c.Advance(2 * time.Minute)
		n, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rc.requireClean()
		assert.Equal(t, []string{ev.ID, ev.ID, ev.ID}, rc.Got(), "every try carries the event id")
		dl = e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "delivered", dl.Status)
		assert.Equal(t, 3, dl.Attempts)
		assert.Equal(t, []attempt{
			{N: 1, Code: 500, Error: "HTTP 500: boom bad"},
			{N: 2, Code: 500, Error: "HTTP 500: boom bad"},
			{N: 3, Code: 204},
		}, e.attempts(dl.ID))
		assert.Equal(t, []int{1, 2}, backoff)
		assert.Equal(t, []webhook.Outcome{webhook.Retried, webhook.Retried, webhook.Delivered}, seen.Get())
	})
}

func TestDispatcherRetriesAfterTimeouts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(r *http.Request, _ string, _ []byte, try int) int {
			if try == 1 {
				select { // past the Dispatcher's Timeout
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			}
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		d := e.dispatcher(c)
		d.Timeout = 200 * time.Millisecond

		start := time.Now()
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
		require.Less(t, time.Since(start), 3*time.Second, "the attempt was cut at the Timeout")
		dl := e.deliveryOf(ep, ev.ID)
		require.Equal(t, "pending", dl.Status)
		at := e.attempts(dl.ID)
		require.Len(t, at, 1)
		assert.Zero(t, at[0].Code, "no HTTP status")
		assert.Equal(t, "no answer within 200ms", at[0].Error)

		c.Advance(time.Second)
		n, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rc.requireClean()
		assert.Equal(t, "delivered", e.deliveryOf(ep, ev.ID).Status)
		assert.Equal(t, []attempt{{N: 1, Error: "no answer within 200ms"}, {N: 2, Code: 200}}, e.attempts(dl.ID))
	})
}

func TestDispatcherKeepsTheOrderOfARecord(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		var a1, c1 string
		var mu sync.Mutex
		rc := newReceiver(t, func(_ *http.Request, id string, _ []byte, try int) int {
			mu.Lock()
			defer mu.Unlock()
			if (id == a1 && try < 3) || id == c1 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		mu.Lock()
		evA1 := e.addEvent(e.org, "quotation.created", "", "A", c.Now())
		evB1 := e.addEvent(e.org, "quotation.created", "", "B", c.Now())
		evC1 := e.addEvent(e.org, "quotation.created", "", "C", c.Now())
		evA2 := e.addEvent(e.org, "quotation.updated", "", "A", c.Now())
		evB2 := e.addEvent(e.org, "quotation.updated", "", "B", c.Now())
		evC2 := e.addEvent(e.org, "quotation.updated", "", "C", c.Now())
		a1, c1 = evA1.ID, evC1.ID
		mu.Unlock()
		d := e.dispatcher(c)
		d.MaxAttempts = 3

		// Pass 1: the first event of each record; A1 and C1 fail.
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.ElementsMatch(t, []string{evA1.ID, evB1.ID, evC1.ID}, rc.Got())
		// Pass 2: B2 goes on while A and C wait for their first events.
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, evB2.ID, rc.Got()[3])
		require.Len(t, rc.Got(), 4)
		for range 2 {
			c.Advance(time.Second)
			_, err = d.RunOnce(t.Context())
			require.NoError(t, err)
		}
		// A1 went through at its third try, C1 failed for good: both stop
		// blocking their records.
		assert.Equal(t, "delivered", e.deliveryOf(ep, evA1.ID).Status)
		assert.Equal(t, "failed", e.deliveryOf(ep, evC1.ID).Status)
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		rc.requireClean()

		var ofA, ofC []string
		for _, id := range rc.Got() {
			switch id {
			case evA1.ID, evA2.ID:
				ofA = append(ofA, id)
			case evC1.ID, evC2.ID:
				ofC = append(ofC, id)
			}
		}
		assert.Equal(t, []string{evA1.ID, evA1.ID, evA1.ID, evA2.ID}, ofA)
		assert.Equal(t, []string{evC1.ID, evC1.ID, evC1.ID, evC2.ID}, ofC)
		for _, ev := range []event{evA2, evB1, evB2, evC2} {
			assert.Equal(t, "delivered", e.deliveryOf(ep, ev.ID).Status)
		}
		status, _ := e.endpointStatus(ep)
		assert.Equal(t, "enabled", status, "other deliveries succeeded meanwhile")
	})
}

func TestDispatcherDisablesAFailingEndpoint(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(*http.Request, string, []byte, int) int { return http.StatusInternalServerError })
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev1 := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		ev2 := e.addEvent(e.org, "quotation.created", "", "rec-2", c.Now())
		var seen outcomes
		d := e.dispatcher(c)
		d.MaxAttempts, d.Observe = 3, seen.Observe
		first := c.Now()
		for range 3 {
			_, err := d.RunOnce(t.Context())
			require.NoError(t, err)
			c.Advance(time.Second)
		}
		rc.requireClean()
		for _, ev := range []event{ev1, ev2} {
			dl := e.deliveryOf(ep, ev.ID)
			assert.Equal(t, "failed", dl.Status)
			assert.Equal(t, 3, dl.Attempts)
			assert.Len(t, e.attempts(dl.ID), 3)
		}
		status, reason := e.endpointStatus(ep)
		assert.Equal(t, "disabled", status)
		assert.Contains(t, reason, "every attempt of delivery ")
		assert.Contains(t, reason, " failed from "+first.Format(time.RFC3339)+" to "+first.Add(2*time.Second).Format(time.RFC3339))
		assert.Contains(t, reason, "; the last: HTTP 500: boom bad")
		got := seen.Get()
		assert.Equal(t, 4, count(got, webhook.Retried))
		assert.Equal(t, 2, count(got, webhook.Failed))
		assert.Equal(t, 1, count(got, webhook.Disabled), "disabled once")

		// A disabled endpoint gets no new deliveries.
		e.addEvent(e.org, "quotation.created", "", "rec-3", c.Now())
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Len(t, e.deliveries(ep), 2)
		assert.Len(t, rc.Got(), 6)
	})
}

func count(list []webhook.Outcome, o webhook.Outcome) int {
	n := 0
	for _, x := range list {
		if x == o {
			n++
		}
	}
	return n
}

func TestDispatcherDoesNotDisableWhenAnotherDeliverySucceeded(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(_ *http.Request, _ string, body []byte, _ int) int {
			var ce struct{ Subject string }
			_ = json.Unmarshal(body, &ce)
			if ce.Subject == "X" {
				return http.StatusBadGateway
			}
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		x := e.addEvent(e.org, "quotation.created", "", "X", c.Now())
		var seen outcomes
		d := e.dispatcher(c)
		d.MaxAttempts, d.Observe = 3, seen.Observe
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		c.Advance(time.Second)
		// Y is delivered after the first attempt of X and before its last.
		y := e.addEvent(e.org, "quotation.created", "", "Y", c.Now())
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		c.Advance(time.Second)
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		rc.requireClean()
		assert.Equal(t, "failed", e.deliveryOf(ep, x.ID).Status)
		assert.Equal(t, "delivered", e.deliveryOf(ep, y.ID).Status)
		status, reason := e.endpointStatus(ep)
		assert.Equal(t, "enabled", status)
		assert.Empty(t, reason)
		assert.Zero(t, count(seen.Get(), webhook.Disabled))
		assert.Equal(t, 1, count(seen.Get(), webhook.Failed))
	})
}

func TestDispatcherFanOutFilters(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		b1, b2 := uuid.NewString(), uuid.NewString()
		specs := map[string]endpointSpec{
			"all":           {Types: []string{"*"}},
			"created":       {Types: []string{"quotation.created"}},
			"quotes":        {Types: []string{"quotation.*"}},
			"several":       {Types: []string{"quotation.updated", "account.*"}},
			"branch1":       {Types: []string{"*"}, Branches: []string{b1}},
			"noBranch":      {Types: []string{"*"}, Branches: []string{}},
			"grantQuotes":   {Types: []string{"*"}, GrantResources: []string{"quotations"}},
			"grantB2":       {Types: []string{"*"}, GrantBranches: []string{b2}},
			"branch1Grant2": {Types: []string{"*"}, Branches: []string{b1}, GrantBranches: []string{b2}},
			"after2":        {Types: []string{"*"}, AfterSeq: 2},
			"disabled":      {Types: []string{"*"}, Disabled: true},
			"otherOrg":      {Types: []string{"*"}, Org: uuid.NewString()},
		}
		ids := map[string]string{}
		for name, s := range specs {
			s.URL = rc.url(name)
			id, secret := e.addEndpoint(s)
			rc.expect(name, secret)
			ids[name] = id
		}
		now := time.Now()
		e.addEvent(e.org, "quotation.created", "", "q1", now) // 1
		e.addEvent(e.org, "quotation.updated", b1, "q2", now) // 2
		e.addEvent(e.org, "account.created", b2, "a1", now)   // 3
		e.addEvent(e.org, "quotation.created", b2, "q3", now) // 4
		d := e.dispatcher(nil)
		d.Workers = 50
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		// A second batch: the fan-out goes on where it stopped.
		e.addEvent(e.org, "account.updated", "", "a2", now)   // 5
		e.addEvent(e.org, "quotation.deleted", b1, "q2", now) // 6
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)

		want := map[string][]int64{
			"all":           {1, 2, 3, 4, 5, 6},
			"created":       {1, 4},
			"quotes":        {1, 2, 4, 6},
			"several":       {2, 3, 5},
			"branch1":       {1, 2, 5, 6},
			"noBranch":      {1, 5},
			"grantQuotes":   {1, 2, 4, 6},
			"grantB2":       {1, 3, 4, 5},
			"branch1Grant2": {1, 5},
			"after2":        {3, 4, 5, 6},
			"disabled":      {},
			"otherOrg":      {},
		}
		for name, seqs := range want {
			assert.Equal(t, seqs, e.seqs(ids[name]), name)
		}
		var fanned int64
		e.queryRow(`SELECT seq FROM waybill_webhook_fanout WHERE organization_id = ?`, []any{e.org}, &fanned)
		assert.Equal(t, int64(6), fanned)
		total := 0
		for _, seqs := range want {
			total += len(seqs)
		}
		require.Eventually(t, func() bool {
			_, err := d.RunOnce(t.Context())
			return err == nil && len(rc.Got()) == total
		}, 10*time.Second, 10*time.Millisecond)
		rc.requireClean()
	})
}

func TestDispatcherFanOutOfAnOrganizationWithoutEndpoints(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		for range 3 {
			e.addEvent(e.org, "quotation.created", "", uuid.NewString(), time.Now())
		}
		d := e.dispatcher(nil)
		// No enabled endpoint anywhere: the fan-out does nothing at all.
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		var rows int
		e.queryRow(`SELECT count(*) FROM waybill_webhook_fanout`, nil, &rows)
		assert.Zero(t, rows)
		// An endpoint of another organization: this one's cursor moves
		// past its events, which go nowhere.
		e.addEndpoint(endpointSpec{Org: uuid.NewString(), URL: "http://127.0.0.1:9/", Types: []string{"*"}})
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		var fanned int64
		e.queryRow(`SELECT seq FROM waybill_webhook_fanout WHERE organization_id = ?`, []any{e.org}, &fanned)
		assert.Equal(t, int64(3), fanned)
		st, err := d.Stats(t.Context())
		require.NoError(t, err)
		assert.Equal(t, webhook.Stats{}, st)
	})
}

func TestDispatcherStats(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(*http.Request, string, []byte, int) int { return http.StatusInternalServerError })
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		d := e.dispatcher(c)
		d.MaxAttempts = 2

		st, err := d.Stats(t.Context())
		require.NoError(t, err)
		assert.Equal(t, webhook.Stats{}, st)

		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		c.Advance(5 * time.Minute)
		st, err = d.Stats(t.Context())
		require.NoError(t, err)
		assert.Equal(t, webhook.Stats{FeedLag: 5 * time.Minute}, st)

		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		c.Advance(time.Minute)
		st, err = d.Stats(t.Context())
		require.NoError(t, err)
		assert.Equal(t, webhook.Stats{Pending: 1, OldestPending: time.Minute}, st)

		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, "failed", e.deliveryOf(ep, ev.ID).Status)
		st, err = d.Stats(t.Context())
		require.NoError(t, err)
		assert.Equal(t, webhook.Stats{Failed: 1}, st)
	})
}

// A delivery set back to pending, as the endpoints API's redeliver does,
// goes again, with the same webhook-id, and its attempts go on counting.
func TestDispatcherRedelivers(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(_ *http.Request, _ string, _ []byte, try int) int {
			if try == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		d := e.dispatcher(c)
		d.MaxAttempts = 1
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		dl := e.deliveryOf(ep, ev.ID)
		require.Equal(t, "failed", dl.Status)
		status, _ := e.endpointStatus(ep)
		require.Equal(t, "disabled", status)

		c.Advance(time.Hour)
		e.exec(`UPDATE waybill_webhook_endpoints SET status = 'enabled', disabled_reason = '' WHERE id = ?`, ep)
		e.exec(`UPDATE waybill_webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, lease_until = NULL WHERE id = ?`,
			e.d.Timestamp(c.Now()), dl.ID)
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rc.requireClean()
		assert.Equal(t, []string{ev.ID, ev.ID}, rc.Got())
		dl = e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "delivered", dl.Status)
		assert.Equal(t, 1, dl.Attempts, "a new round")
		assert.Equal(t, []attempt{{N: 1, Code: 500, Error: "HTTP 500: boom bad"}, {N: 2, Code: 200}}, e.attempts(dl.ID))
	})
}

// An event removed by retention before its delivery fails the delivery at
// once, without holding up the endpoint.
func TestDispatcherEventRemovedByRetention(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, func(*http.Request, string, []byte, int) int { return http.StatusInternalServerError })
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		var seen outcomes
		d := e.dispatcher(c)
		d.Observe = seen.Observe
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		e.exec(`DELETE FROM waybill_events WHERE id = ?`, ev.ID)
		c.Advance(time.Second)
		_, err = d.RunOnce(t.Context())
		require.NoError(t, err)
		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "failed", dl.Status)
		assert.Equal(t, attempt{N: 2, Error: "the event was removed by retention"}, e.attempts(dl.ID)[1])
		status, _ := e.endpointStatus(ep)
		assert.Equal(t, "enabled", status)
		assert.Equal(t, []webhook.Outcome{webhook.Retried, webhook.Failed}, seen.Get())
		assert.Len(t, rc.Got(), 1)
	})
}

// Without Guard.AllowPrivate the default client refuses the receiver on
// loopback, and the attempt says why.
func TestDispatcherRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, nil)
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		d := e.dispatcher(c)
		d.Guard.AllowPrivate = false
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Empty(t, rc.Got())
		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "pending", dl.Status)
		at := e.attempts(dl.ID)
		require.Len(t, at, 1)
		assert.Zero(t, at[0].Code)
		assert.Contains(t, at[0].Error, "refused to connect to a loopback address")
		assert.NotContains(t, at[0].Error, "127.0.0.1", "the attempt does not tell what the name resolved to")
	})
}

// A secret the Dispatcher cannot open costs the delivery no attempt: it
// waits, and nothing is sent unsigned.
func TestDispatcherWithoutTheSealerOfASecret(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		c := newFakeClock()
		rc := newReceiver(t, nil)
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}, Sealer: newSealer(t)})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", c.Now())
		d := e.dispatcher(c)
		d.Sealer = newSealer(t) // another key: Open fails
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Empty(t, rc.Got())
		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "pending", dl.Status)
		assert.Zero(t, dl.Attempts)
		assert.Empty(t, e.attempts(dl.ID))
		var leased int
		e.queryRow(`SELECT count(*) FROM waybill_webhook_deliveries WHERE id = ? AND lease_until IS NULL AND next_attempt_at > ?`,
			[]any{dl.ID, e.d.Timestamp(c.Now())}, &leased)
		assert.Equal(t, 1, leased, "released, to be tried later")
	})
}

func TestDispatcherSettings(t *testing.T) {
	t.Parallel()
	d := &webhook.Dispatcher{DB: newDispatchEnv(t, query.SQLite).db, Dialect: query.SQLite, Timeout: time.Minute, Lease: time.Minute}
	_, err := d.RunOnce(t.Context())
	require.ErrorContains(t, err, "Lease")
	require.ErrorContains(t, d.Run(t.Context()), "Lease")
	_, err = (&webhook.Dispatcher{Timeout: time.Second}).RunOnce(t.Context())
	require.Error(t, err)
}

// PurgeDeliveries deletes the deliveries that ended before the cutoff, with
// their attempts, and keeps pending ones whatever their age.
func TestPurgeDeliveries(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		done := e.addEvent(e.org, "quotation.created", "", "rec-1", time.Now())
		pending := e.addEvent(e.org, "quotation.created", "", "rec-2", time.Now())
		d := e.dispatcher(nil)
		_, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, "delivered", e.deliveryOf(ep, done.ID).Status)
		require.Equal(t, "delivered", e.deliveryOf(ep, pending.ID).Status)
		e.exec("UPDATE waybill_webhook_deliveries SET status = 'pending', attempts = 1 WHERE event_id = ?", pending.ID)

		api := &webhook.API{Registry: &resource.Registry{DB: e.db, Dialect: e.d}}
		n, err := api.Purge(t.Context(), time.Now().Add(-time.Hour))
		require.NoError(t, err)
		assert.Zero(t, n, "nothing ended before the cutoff")
		n, err = api.Purge(t.Context(), time.Now().Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		left := e.deliveries(ep)
		require.Len(t, left, 1, "the pending delivery stays")
		assert.Equal(t, pending.ID, left[0].EventID)
		var attempts int
		e.queryRow("SELECT count(*) FROM waybill_webhook_attempts WHERE delivery_id NOT IN (SELECT id FROM waybill_webhook_deliveries)", nil, &attempts)
		assert.Zero(t, attempts, "the attempts of a purged delivery go with it")
	})
}
