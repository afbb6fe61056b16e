package redislimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/ratelimittest"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// newClient returns a client on the test Redis and a key prefix of t's own.
func newClient(t testing.TB) (*redis.Client, string) {
	t.Helper()
	url, prefix := testdb.Redis(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client, prefix
}

func TestConformance(t *testing.T) {
	t.Parallel()
	ratelimittest.TestLimiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
		client, prefix := newClient(t)
		return redislimit.New(client, redislimit.Options{Prefix: prefix, Now: now})
	})
}

func TestServerTime(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	l := redislimit.New(client, redislimit.Options{Prefix: prefix})
	limit := ratelimit.Limit{Name: "api", Quota: 3, Window: time.Minute}
	for i := range 3 {
		d, err := l.Allow(t.Context(), "org-1", limit)
		require.NoError(t, err)
		require.True(t, d.Allowed, "request %d", i)
		require.Equal(t, 2-i, d.Remaining)
	}
	d, err := l.Allow(t.Context(), "org-1", limit)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	// The clock of the server moves between the requests, a little.
	assert.InDelta(t, float64(time.Minute), float64(d.Reset), float64(time.Second))
	assert.InDelta(t, float64(20*time.Second), float64(d.RetryAfter), float64(time.Second))

	// The key lives until its TAT, a minute ahead.
	ttl, err := client.PTTL(t.Context(), prefix+"api:org-1").Result()
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Minute), float64(ttl), float64(time.Second))
}

func TestIdleKeysExpire(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	l := redislimit.New(client, redislimit.Options{Prefix: prefix})
	limit := ratelimit.Limit{Name: "api", Quota: 2, Window: 200 * time.Millisecond}
	for range 2 {
		_, err := l.Allow(t.Context(), "k", limit)
		require.NoError(t, err)
	}
	key := prefix + "api:k"
	require.Equal(t, int64(1), client.Exists(t.Context(), key).Val())
	require.Eventually(t, func() bool {
		return client.Exists(t.Context(), key).Val() == 0
	}, 5*time.Second, 20*time.Millisecond, "the key vanishes when its quota is whole again")
	d, err := l.Allow(t.Context(), "k", limit)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Remaining, "the whole quota is back")
}

func TestKeys(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	var clock ratelimittest.Clock
	l := redislimit.New(client, redislimit.Options{Prefix: prefix, Now: clock.Now})
	// Names and keys that would run together without escaping.
	requests := []struct {
		name, key, redisKey string
	}{
		{"a:b", "c", "a%3Ab:c"},
		{"a", "b:c", "a:b:c"},
		{"a%3Ab", "c", "a%253Ab:c"},
		{"api", "2001:db8::1", "api:2001:db8::1"},
	}
	for _, r := range requests {
		d, err := l.Allow(t.Context(), r.key, ratelimit.Limit{Name: r.name, Quota: 2, Window: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, 1, d.Remaining, "%q under %q has a bucket of its own", r.key, r.name)
		assert.Equal(t, int64(1), client.Exists(t.Context(), prefix+r.redisKey).Val(), r.redisKey)
	}
}

func TestDefaultPrefix(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	l := redislimit.New(client, redislimit.Options{})
	// The key is outside the test's prefix: delete it here.
	key := prefix + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { client.Del(context.Background(), redislimit.DefaultPrefix+"api:"+key) })
	_, err := l.Allow(t.Context(), key, ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, int64(1), client.Exists(t.Context(), redislimit.DefaultPrefix+"api:"+key).Val())
}

func TestLimits(t *testing.T) {
	t.Parallel()
	// Nothing answers on this client: a decision that needs Redis fails.
	client := redis.NewClient(&redis.Options{Addr: closedAddr(t), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	l := redislimit.New(client, redislimit.Options{})
	tests := []struct {
		name  string
		limit ratelimit.Limit
		want  ratelimit.Decision
		check func(t *testing.T, err error)
	}{
		{"quota 0 needs no Redis", ratelimit.Limit{Name: "off"}, ratelimit.Decision{Allowed: true}, nil},
		{"no window", ratelimit.Limit{Name: "bad", Quota: 1}, ratelimit.Decision{}, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, ratelimit.ErrInvalidLimit)
		}},
		{"window too long", ratelimit.Limit{Name: "bad", Quota: 1, Window: redislimit.MaxWindow + 1}, ratelimit.Decision{}, func(t *testing.T, err error) {
			assert.ErrorContains(t, err, `redislimit: limit "bad": a window over`)
		}},
		{"quota too large", ratelimit.Limit{Name: "bad", Quota: redislimit.MaxQuota + 1, Window: time.Minute}, ratelimit.Decision{}, func(t *testing.T, err error) {
			assert.ErrorContains(t, err, `redislimit: limit "bad": a window over`)
		}},
		{"Redis down", ratelimit.Limit{Name: "api", Quota: 1, Window: time.Minute}, ratelimit.Decision{}, func(t *testing.T, err error) {
			assert.ErrorContains(t, err, "redislimit: ")
			var opErr *net.OpError
			assert.ErrorAs(t, err, &opErr, "the cause is kept")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := l.Allow(t.Context(), "k", tc.limit)
			assert.Equal(t, tc.want, d)
			if tc.check == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			tc.check(t, err)
		})
	}
}

// closedAddr returns a local address where nothing listens.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// server is a redis-server process of the test's own, which the test may
// stop and start again on the same port.
type server struct {
	t    *testing.T
	path string
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	output bytes.Buffer
}

// startServer starts redis-server on a free port, without persistence. It
// skips the test when redis-server is not installed, or fails it when the
// environment variable CI is set.
func startServer(t *testing.T) *server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is not on PATH, so the Redis outage test cannot stop and restart a server of its own; install it (apt-get install redis-server) to run it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &server{t: t, path: path, addr: closedAddr(t)}
	t.Cleanup(s.stop)
	s.start()
	return s
}

// start starts the server and waits, at most 10 s, until it answers.
func (s *server) start() {
	s.t.Helper()
	_, port, err := net.SplitHostPort(s.addr)
	require.NoError(s.t, err)
	s.mu.Lock()
	s.cmd = exec.Command(s.path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning")
	s.cmd.Stdout, s.cmd.Stderr = &s.output, &s.output
	err = s.cmd.Start()
	s.mu.Unlock()
	require.NoError(s.t, err)

	probe := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer probe.Close()
	ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
	defer cancel()
	for probe.Ping(ctx).Err() != nil {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			s.t.Fatalf("redis-server on %s did not answer within 10 s: %s", s.addr, s.output.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop kills the server and waits for it to exit.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// TestOutage sends traffic through the middleware while the Redis behind
// the limiter goes away and comes back: fail open lets requests through,
// fail closed refuses them, OnError hears of every failure, and the same
// client and limiter work again once Redis is back.
func TestOutage(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	client := redis.NewClient(&redis.Options{
		Addr:          srv.addr,
		DialTimeout:   500 * time.Millisecond,
		ReadTimeout:   500 * time.Millisecond,
		WriteTimeout:  500 * time.Millisecond,
		MaxRetries:    -1, // every failure reaches the middleware
		DialerRetries: 1,  // and fast
	})
	t.Cleanup(func() { _ = client.Close() })
	limiter := redislimit.New(client, redislimit.Options{})
	limit := ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute}

	var openErrors, closedErrors atomic.Int64
	handler := func(key string, failClosed bool, errs *atomic.Int64) http.Handler {
		return ratelimit.MiddlewareWithOptions(ratelimit.Options{
			Limiter:    limiter,
			Limit:      limit,
			Key:        func(*http.Request) (string, bool) { return key, true },
			FailClosed: failClosed,
			OnError:    func(*http.Request, error) { errs.Add(1) },
		})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	}
	open := handler("org-open", false, &openErrors)
	closed := handler("org-closed", true, &closedErrors)
	get := func(h http.Handler) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/org/orders", nil))
		return rec
	}

	// Redis is up: both limit.
	for i := range 3 {
		for _, h := range []http.Handler{open, closed} {
			rec := get(h)
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, fmt.Sprintf(`"api";r=%d;t=1`, 999-i), rec.Header().Get("RateLimit"))
		}
	}
	// A flushed script cache costs one EVAL, not a failure.
	require.NoError(t, client.ScriptFlush(t.Context()).Err())
	require.Equal(t, `"api";r=996;t=1`, get(open).Header().Get("RateLimit"))
	require.Zero(t, openErrors.Load()+closedErrors.Load())

	// Redis goes away.
	srv.stop()
	for i := range 3 {
		rec := get(open)
		assert.Equal(t, http.StatusOK, rec.Code, "fail open lets the request through")
		assert.Equal(t, "ok", rec.Body.String())
		assert.Equal(t, `"api";q=1000;w=60`, rec.Header().Get("RateLimit-Policy"))
		assert.Empty(t, rec.Header().Get("RateLimit"), "no decision, no state")
		assert.Equal(t, int64(i+1), openErrors.Load(), "OnError hears of every failure")

		rec = get(closed)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "fail closed refuses the request")
		var body struct{ Error string }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		assert.Equal(t, "temporarily_unavailable", body.Error)
		assert.Equal(t, int64(i+1), closedErrors.Load())
	}

	// Redis comes back, empty, on the same port: the same client and limiter
	// decide again once go-redis has reconnected.
	srv.start()
	deadline := time.Now().Add(10 * time.Second)
	for get(closed).Code != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "no decision within 10 s of Redis coming back")
		time.Sleep(20 * time.Millisecond)
	}
	before := openErrors.Load()
	for i := range 3 {
		rec := get(open)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, fmt.Sprintf(`"api";r=%d;t=1`, 999-i), rec.Header().Get("RateLimit"), "a fresh Redis, a fresh bucket")
	}
	assert.Equal(t, before, openErrors.Load())
	d, err := limiter.Allow(t.Context(), "org-new", limit)
	require.NoError(t, err)
	assert.Equal(t, 999, d.Remaining)
}

// TestMatchesMemory runs one random sequence of requests through the Redis
// limiter and through ratelimit.Memory, on the same fake clock, and wants
// the same decisions from both: the script is the twin of the Go GCRA.
func TestMatchesMemory(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	var clock ratelimittest.Clock
	r := redislimit.New(client, redislimit.Options{Prefix: prefix, Now: clock.Now})
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
	// The clock moves in whole seconds and every emission interval is at
	// least 1/13 s off a whole second, so no key is ever within a few
	// milliseconds of its TAT, which would let Redis expire it on its own
	// clock while the fake one stands still.
	limits := []ratelimit.Limit{
		{Name: "one", Quota: 1, Window: time.Minute},
		{Name: "three", Quota: 3, Window: time.Minute},
		{Name: "seven", Quota: 7, Window: time.Minute},
		{Name: "thirteen", Quota: 13, Window: 2 * time.Minute},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	decided := map[bool]int{}
	for step := range 2000 {
		if rng.IntN(3) == 0 {
			clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
		}
		l := limits[rng.IntN(len(limits))]
		key := []string{"a", "b", "c"}[rng.IntN(3)]
		want, err := m.Allow(t.Context(), key, l)
		require.NoError(t, err)
		got, err := r.Allow(t.Context(), key, l)
		require.NoError(t, err)
		require.Equal(t, want, got, "step %d: %q under %q", step, key, l.Name)
		decided[got.Allowed]++
	}
	assert.Greater(t, decided[true], 200, "allowed")
	assert.Greater(t, decided[false], 200, "refused")
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }

// countingHook counts the commands and pipelines a client sends: each is
// one round trip.
type countingHook struct{ trips atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		return next(ctx, cmds)
	}
}

// TestPoliciesOneRoundTrip runs the middleware with an organization's
// limit and an app's beside it over Redis: one app spending its share
// leaves another served, the organization's quota caps the sum, both
// policies are in the headers, and each request is one round trip.
func TestPoliciesOneRoundTrip(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	hook := &countingHook{}
	client.AddHook(hook)
	limiter := redislimit.New(client, redislimit.Options{Prefix: prefix})
	// The script is loaded once (EVALSHA, NOSCRIPT, EVAL); then every
	// decision is one EVALSHA.
	require.NoError(t, limiter.AllowAll(t.Context(), []ratelimit.Charge{{Key: "warm", Limit: ratelimit.Limit{Name: "w", Quota: 1, Window: time.Minute}}, {Key: "warm", Limit: ratelimit.Limit{Name: "w2", Quota: 1, Window: time.Minute}}}, make([]ratelimit.Decision, 2)))

	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: limiter,
		Limit:   ratelimit.Limit{Name: "rest", Quota: 5, Window: time.Hour},
		Key:     func(r *http.Request) (string, bool) { return "{org}", true },
		Policies: []ratelimit.Policy{{
			Limit: ratelimit.Limit{Name: "rest-app", Quota: 3, Window: time.Hour},
			Key: func(r *http.Request) (string, bool) {
				return "{org}:" + r.Header.Get("X-App"), true
			},
		}},
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	const both = `"rest";q=5;w=3600, "rest-app";q=3;w=3600`
	steps := []struct {
		app    string
		status int
		name   string // of the policy in RateLimit
	}{
		{"a", 200, "rest-app"}, {"a", 200, "rest-app"}, {"a", 200, "rest-app"},
		{"a", 429, "rest-app"}, // a has spent its share
		{"b", 200, "rest"},     // b is served; the organization has one left
		{"b", 200, "rest"},     // the organization has spent 5
		{"b", 429, "rest"},     // and caps the sum
		{"c", 429, "rest"},
	}
	for i, s := range steps {
		before := hook.trips.Load()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-App", s.app)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, s.status, rec.Code, "step %d", i)
		assert.Equal(t, both, rec.Header().Get("RateLimit-Policy"), "step %d", i)
		assert.Contains(t, rec.Header().Get("RateLimit"), `"`+s.name+`";`, "step %d", i)
		assert.Equal(t, int64(1), hook.trips.Load()-before, "step %d: round trips", i)
	}
}
