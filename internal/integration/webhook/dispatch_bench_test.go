package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/webhook/signature"
)

// newBenchEnv is newDispatchEnv with a pool that keeps its connections, as
// a server's does (database/sql keeps 2 idle by default, and every other
// query would then open a connection).
func newBenchEnv(b *testing.B, d query.Dialect) *dispatchEnv {
	e := newDispatchEnv(b, d)
	e.db.SetMaxIdleConns(8)
	return e
}

// BenchmarkDispatcherThroughput measures deliveries per second from one
// organization to a local receiver: b.N events, each of its own record,
// fanned out and delivered by one Dispatcher with 8 workers, polling every
// 5 ms as the tests do and every second as a server does (the default);
// and its floor, the least work of as many durable deliveries at once.
func BenchmarkDispatcherThroughput(b *testing.B) {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		b.Run(d.String()+"/floor", func(b *testing.B) { benchmarkThroughputFloor(b, d) })
		for _, poll := range []time.Duration{5 * time.Millisecond, time.Second} {
			b.Run(d.String()+"/poll="+poll.String(), func(b *testing.B) {
				benchmarkThroughput(b, d, poll)
			})
		}
	}
}

// benchmarkThroughput is one case of BenchmarkDispatcherThroughput.
func benchmarkThroughput(b *testing.B, d query.Dialect, poll time.Duration) {
	e := newBenchEnv(b, d)
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
	disp.PollInterval = poll
	ctx, cancel := context.WithCancel(context.Background())
	b.ReportAllocs()
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
}

// benchmarkThroughputFloor is the floor of BenchmarkDispatcherThroughput:
// with as many at once as a Dispatcher of 8 workers gives one organization
// (4), each delivery reads its event, posts it signed to the receiver and
// records the outcome in one committed UPDATE, which is the least a
// delivery that survives a restart costs.
func benchmarkThroughputFloor(b *testing.B, d query.Dialect) {
	e := newBenchEnv(b, d)
	rc := newReceiver(b, nil)
	_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
	rc.expect("a", secret)
	e.addEvents(e.org, b.N)
	read, _, err := sqlbuild.SQL(e.d, sq.Select("id", "body").From("waybill_events").Where("organization_id = ? AND seq = ?", "", 0))
	require.NoError(b, err)
	done, _, err := sqlbuild.SQL(e.d, sq.Update("waybill_events").Set("type", "delivered").Where("organization_id = ? AND seq = ?", "", 0))
	require.NoError(b, err)
	seqs := make(chan int64, b.N)
	for i := range b.N {
		seqs <- int64(i + 1)
	}
	close(seqs)
	client := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for seq := range seqs {
				var id, body string
				if err := e.db.QueryRow(read, e.org, seq).Scan(&id, &body); err != nil {
					b.Error(err)
					return
				}
				h, err := signature.Sign(secret, id, time.Now(), []byte(body))
				if err != nil {
					b.Error(err)
					return
				}
				req, _ := http.NewRequest(http.MethodPost, rc.url("a"), strings.NewReader(body))
				req.Header = h
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if _, err := e.db.Exec(done, "delivered", e.org, seq); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	require.Len(b, rc.Got(), b.N)
	rc.requireClean()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkDispatcherLatency measures the time from the commit of an event
// to its arrival at a local receiver, at 100 writes per second, with the
// writer calling Wake after each commit as a server does.
func BenchmarkDispatcherLatency(b *testing.B) {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		b.Run(d.String(), func(b *testing.B) {
			e := newBenchEnv(b, d)
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

// BenchmarkDispatcherBusyNeighbours measures how long a delivery of an
// organization takes while two others keep a Dispatcher's workers busy:
// each of them has a backlog of 100 deliveries to a receiver that never
// answers (every attempt runs into the 1 s Timeout and is retried after
// 1 s). It reports the median and the longest time from the commit of the
// third organization's event (and Wake, as a server does after a write) to
// the arrival of its webhook; one that takes over two minutes counts as
// two minutes.
func BenchmarkDispatcherBusyNeighbours(b *testing.B) {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		b.Run(d.String(), func(b *testing.B) {
			const backlog, limit = 100, 2 * time.Minute
			e := newBenchEnv(b, d)
			arrived := make(chan string, 1)
			rc := newReceiver(b, func(r *http.Request, id string, _ []byte, _ int) int {
				if r.URL.Path != "/fast" {
					<-r.Context().Done() // the dispatcher gives up after its Timeout
					return http.StatusServiceUnavailable
				}
				select {
				case arrived <- id:
				default:
				}
				return http.StatusOK
			})
			for _, name := range []string{"slow-a", "slow-b"} {
				org := uuid.NewString()
				_, secret := e.addEndpoint(endpointSpec{Org: org, URL: rc.url(name), Types: []string{"*"}})
				rc.expect(name, secret)
				for i := range backlog {
					e.addEvent(org, "quotation.created", "", "rec-"+strconv.Itoa(i), time.Now())
				}
			}
			third := uuid.NewString()
			_, secret := e.addEndpoint(endpointSpec{Org: third, URL: rc.url("fast"), Types: []string{"*"}})
			rc.expect("fast", secret)
			disp := e.dispatcher(nil)
			disp.Timeout, disp.Lease, disp.PollInterval = time.Second, 5*time.Second, time.Second
			disp.Logger = slog.New(slog.DiscardHandler) // every attempt of the slow ones fails
			ctx, cancel := context.WithCancel(context.Background())
			run := make(chan error, 1)
			go func() { run <- disp.Run(ctx) }()
			defer func() {
				cancel()
				require.NoError(b, <-run)
			}()
			// The slow organizations take the workers first.
			time.Sleep(200 * time.Millisecond)
			var lat []time.Duration
			b.ResetTimer()
			for i := range b.N {
				ev := e.addEvent(third, "quotation.created", "", "third-"+strconv.Itoa(i), time.Now())
				start := time.Now()
				disp.Wake()
				timeout := time.After(limit)
			wait:
				for {
					select {
					case id := <-arrived:
						if id == ev.ID {
							break wait
						}
					case <-timeout:
						b.Logf("the third organization's delivery did not arrive in %s", limit)
						break wait
					}
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}
