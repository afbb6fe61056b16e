package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook"
)

// Two replicas on one database deliver every event once, in order per
// record, while events keep coming.
func TestTwoDispatchersDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		const events, records = 200, 20
		rc := newReceiver(t, nil)
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var (
			wg          sync.WaitGroup
			dispatchers []*webhook.Dispatcher
			observed    [2]outcomes
		)
		seqOf := map[string]int64{}
		recordOf := map[string]string{}
		add := func(i int) {
			rec := "r" + strconv.Itoa(i%records)
			ev := e.addEvent(e.org, "quotation.updated", "", rec, time.Now())
			seqOf[ev.ID], recordOf[ev.ID] = ev.Seq, rec
		}
		// Half of the events wait for the replicas, which then compete
		// for them; the other half come while they run.
		for i := range events / 2 {
			add(i)
		}
		for i := range 2 {
			d := e.dispatcher(nil)
			d.Workers = 4
			d.PollInterval = 20 * time.Millisecond
			d.Observe = observed[i].Observe
			dispatchers = append(dispatchers, d)
			wg.Go(func() { assert.NoError(t, d.Run(ctx)) })
		}
		for i := events / 2; i < events; i++ {
			add(i)
			dispatchers[i%2].Wake()
		}
		require.Eventually(t, func() bool {
			return len(rc.Got()) >= events
		}, 60*time.Second, 20*time.Millisecond)
		require.Eventually(t, func() bool {
			for _, dl := range e.deliveries(ep) {
				if dl.Status != "delivered" {
					return false
				}
			}
			return true
		}, 10*time.Second, 20*time.Millisecond)
		cancel()
		wg.Wait()
		rc.requireClean()

		got := rc.Got()
		assert.Len(t, got, events, "each event once")
		last := map[string]int64{}
		seen := map[string]bool{}
		for _, id := range got {
			require.Contains(t, seqOf, id)
			assert.False(t, seen[id], "delivered twice: %s", id)
			seen[id] = true
			rec := recordOf[id]
			assert.Greater(t, seqOf[id], last[rec], "order of record %s", rec)
			last[rec] = seqOf[id]
		}
		assert.Len(t, e.deliveries(ep), events)
		for i := range observed {
			assert.NotZero(t, count(observed[i].Get(), webhook.Delivered), "replica %d delivered some", i)
			assert.Equal(t, len(observed[i].Get()), count(observed[i].Get(), webhook.Delivered))
		}
	})
}

// A replica whose context ends in the middle of a delivery finishes the
// attempt and records it before Run returns.
func TestDispatcherRunFinishesAttemptsInFlight(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		arrived := make(chan struct{})
		rc := newReceiver(t, func(*http.Request, string, []byte, int) int {
			close(arrived)
			time.Sleep(200 * time.Millisecond)
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", time.Now())
		d := e.dispatcher(nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		select {
		case <-arrived:
		case <-time.After(5 * time.Second):
			t.Fatal("no delivery arrived")
		}
		cancel()
		require.NoError(t, <-done)
		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "delivered", dl.Status, "recorded before Run returned")
		assert.Equal(t, []attempt{{N: 1, Code: 200}}, e.attempts(dl.ID))
		rc.requireClean()
	})
}

// holdTransport posts through http.DefaultTransport without the request's
// context: a replica that hangs past its Timeout.
type holdTransport struct{}

func (holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return http.DefaultTransport.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
}

// A replica that hangs in the middle of a delivery loses it, after its
// lease, to another, which delivers it; the hung replica then records
// nothing over the other's work.
func TestDispatcherTakesOverFromAHungReplica(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		rc := newReceiver(t, func(_ *http.Request, _ string, _ []byte, try int) int {
			if try == 1 {
				<-release
			}
			return http.StatusOK
		})
		ep, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", time.Now())

		hung := e.dispatcher(nil)
		hung.Timeout, hung.Lease = 100*time.Millisecond, 300*time.Millisecond
		hung.Client = &http.Client{Transport: holdTransport{}}
		type result struct {
			n   int
			err error
		}
		hungDone := make(chan result, 1)
		go func() {
			n, err := hung.RunOnce(context.Background())
			hungDone <- result{n, err}
		}()
		require.Eventually(t, func() bool { return len(rc.Got()) == 1 }, 5*time.Second, 5*time.Millisecond)

		other := e.dispatcher(nil)
		other.Timeout, other.Lease = 100*time.Millisecond, 300*time.Millisecond
		ctx, cancel := context.WithCancel(t.Context())
		runDone := make(chan error, 1)
		go func() { runDone <- other.Run(ctx) }()
		require.Eventually(t, func() bool {
			return e.deliveryOf(ep, ev.ID).Status == "delivered"
		}, 10*time.Second, 10*time.Millisecond)
		cancel()
		require.NoError(t, <-runDone)

		once.Do(func() { close(release) })
		r := <-hungDone
		require.NoError(t, r.err)
		assert.Zero(t, r.n, "the hung replica lost its lease")
		rc.requireClean()
		assert.Equal(t, []string{ev.ID, ev.ID}, rc.Got())
		dl := e.deliveryOf(ep, ev.ID)
		assert.Equal(t, "delivered", dl.Status)
		assert.Equal(t, 1, dl.Attempts)
		assert.Equal(t, []attempt{{N: 1, Code: 200}}, e.attempts(dl.ID))
	})
}

// Wake starts a pass at once: the webhook leaves long before the
// PollInterval.
func TestDispatcherWake(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		d := e.dispatcher(nil)
		d.PollInterval = time.Hour
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		// Wait for the first pass: it fans out another organization.
		other := uuid.NewString()
		e.addEvent(other, "quotation.created", "", "x", time.Now())
		d.Wake()
		require.Eventually(t, func() bool {
			var n int
			e.queryRow(`SELECT count(*) FROM waybill_webhook_fanout WHERE organization_id = ?`, []any{other}, &n)
			return n == 1
		}, 5*time.Second, 5*time.Millisecond)

		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", time.Now())
		d.Wake()
		require.Eventually(t, func() bool { return slices.Contains(rc.Got(), ev.ID) }, 5*time.Second, 5*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
		rc.requireClean()
	})
}

// An organization whose endpoint hangs until the timeout takes at most half
// of a replica's workers: another organization's delivery still leaves at
// once.
func TestDispatcherKeepsAHangingTenantToItsShare(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		release := make(chan struct{})
		var mu sync.Mutex
		hanging := 0
		rc := newReceiver(t, func(r *http.Request, _ string, _ []byte, _ int) int {
			if r.URL.Path == "/slow" {
				mu.Lock()
				hanging++
				mu.Unlock()
				<-release
			}
			return http.StatusOK
		})
		_, slowSecret := e.addEndpoint(endpointSpec{URL: rc.url("slow"), Types: []string{"*"}})
		rc.expect("slow", slowSecret)
		for i := range 20 {
			e.addEvent(e.org, "quotation.created", "", fmt.Sprintf("rec-%d", i), time.Now())
		}
		other := uuid.NewString()
		_, fastSecret := e.addEndpoint(endpointSpec{Org: other, URL: rc.url("fast"), Types: []string{"*"}})
		rc.expect("fast", fastSecret)
		d := e.dispatcher(nil)
		d.Workers, d.Timeout, d.Lease = 4, 10*time.Second, 20*time.Second
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		defer func() {
			close(release)
			cancel()
			require.NoError(t, <-done)
		}()
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return hanging == 2 }, 5*time.Second, 5*time.Millisecond,
			"the hanging organization gets half of the 4 workers")
		ev := e.addEvent(other, "quotation.created", "", "rec-other", time.Now())
		d.Wake()
		require.Eventually(t, func() bool { return slices.Contains(rc.Got(), ev.ID) }, 5*time.Second, 5*time.Millisecond,
			"another organization's delivery leaves while the first one's hang")
		mu.Lock()
		assert.Equal(t, 2, hanging, "and the hanging one never got more")
		mu.Unlock()
	})
}
