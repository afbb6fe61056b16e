package webhook_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
)

// BenchmarkDispatcherThroughput measures deliveries per second to a local
// receiver: b.N events, each of its own record, fanned out and delivered
// by one Dispatcher with 8 workers.
func BenchmarkDispatcherThroughput(b *testing.B) {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		b.Run(d.String(), func(b *testing.B) {
			e := newDispatchEnv(b, d)
			var (
				mu   sync.Mutex
				got  int
				done = make(chan struct{})
			)
			rc := newReceiver(b, func(*http.Request, string, []byte, int) int {
				mu.Lock()
				defer mu.Unlock()
				if got++; got == b.N {
					close(done)
				}
				return http.StatusOK
			})
			_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
			rc.expect("a", secret)
			now := time.Now()
			for i := range b.N {
				e.addEvent(e.org, "quotation.created", "", "rec-"+strconv.Itoa(i), now)
			}
			disp := e.dispatcher(nil)
			ctx, cancel := context.WithCancel(context.Background())
			b.ResetTimer()
			start := time.Now()
			run := make(chan error, 1)
			go func() { run <- disp.Run(ctx) }()
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatal("not every event was delivered")
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			require.NoError(b, <-run)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkDispatcherLatency measures the time from the commit of an event
// to its arrival at a local receiver, at 100 writes per second, with the
// writer calling Wake after each commit as a server does.
func BenchmarkDispatcherLatency(b *testing.B) {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		b.Run(d.String(), func(b *testing.B) {
			e := newDispatchEnv(b, d)
			var (
				mu      sync.Mutex
				arrived = map[string]time.Time{}
			)
			rc := newReceiver(b, func(_ *http.Request, id string, _ []byte, _ int) int {
				mu.Lock()
				defer mu.Unlock()
				arrived[id] = time.Now()
				return http.StatusOK
			})
			_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
			rc.expect("a", secret)
			disp := e.dispatcher(nil)
			disp.PollInterval = time.Second
			ctx, cancel := context.WithCancel(context.Background())
			run := make(chan error, 1)
			go func() { run <- disp.Run(ctx) }()
			committed := map[string]time.Time{}
			tick := time.NewTicker(10 * time.Millisecond)
			b.ResetTimer()
			for i := range b.N {
				<-tick.C
				ev := e.addEvent(e.org, "quotation.updated", "", "rec-"+strconv.Itoa(i%50), time.Now())
				committed[ev.ID] = time.Now()
				disp.Wake()
			}
			tick.Stop()
			require.Eventually(b, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(arrived) == b.N
			}, time.Minute, 10*time.Millisecond)
			b.StopTimer()
			cancel()
			require.NoError(b, <-run)
			var lat []time.Duration
			for id, at := range committed {
				lat = append(lat, arrived[id].Sub(at))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
