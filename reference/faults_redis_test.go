package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/faultproxy"
	"github.com/waybillhq/waybill/internal/testdb"
)

// The traffic of the Redis fault tests.
const (
	// frQuota is the quota per minute of the limits "rest" and "token": far above the
	// traffic, so every decision Redis makes lets the request through.
	frQuota = 1_000_000
	// frFaultFor is how long the fault lasts at least.
	frFaultFor = 2 * time.Second
	// frPause is the pause of a worker between two requests, so that the traffic does
	// not take the machine's cores.
	frPause = 20 * time.Millisecond
	// frRestWorkers and frTokenWorkers are how many goroutines send requests to the
	// REST API and to the token endpoint.
	frRestWorkers, frTokenWorkers = 2, 1
	// frAfter is how many requests of each kind must pass once the limits work again.
	frAfter = 10
)

// frPhase is the state of the Redis connection when a request was sent.
type frPhase int32

const (
	frBefore    frPhase = iota // Redis answers
	frFault                    // the proxy is cut or blackholed
	frResumed                  // the proxy forwards again; the limits may not have noticed
	frRecovered                // a request of each kind was decided by Redis again
)

// frResult is the outcome of one request of the traffic.
type frResult struct {
	phase  frPhase
	kind   string // limitREST or limitToken
	status int
	// policy and state tell whether the response carried RateLimit-Policy and
	// RateLimit: the second only when Redis decided.
	policy, state bool
	took          time.Duration
	err           error
}

// frTraffic is requests sent, a short pause apart, from several goroutines.
type frTraffic struct {
	phase  atomic.Int32 // an frPhase
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	results []frResult
}

// frStartTraffic starts the workers of the traffic against the server base, as the
// tenant c with its access token. Stop ends them.
func frStartTraffic(base string, c rlTenant, token string) *frTraffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &frTraffic{cancel: cancel}
	worker := func(kind string) {
		for ctx.Err() == nil {
			phase := frPhase(tr.phase.Load())
			start := time.Now()
			res := frSend(ctx, base, kind, c, token)
			if ctx.Err() != nil && res.err != nil {
				return // stopped mid-request
			}
			res.phase, res.kind, res.took = phase, kind, time.Since(start)
			tr.mu.Lock()
			tr.results = append(tr.results, res)
			tr.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(frPause):
			}
		}
	}
	for range frRestWorkers {
		tr.wg.Go(func() { worker(limitREST) })
	}
	for range frTokenWorkers {
		tr.wg.Go(func() { worker(limitToken) })
	}
	return tr
}

// Stop ends the traffic and returns every result.
func (tr *frTraffic) Stop() []frResult {
	tr.cancel()
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.results)
}

// count returns how many results of kind sent in phase satisfy ok.
func (tr *frTraffic) count(phase frPhase, kind string, ok func(frResult) bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, r := range tr.results {
		if r.phase == phase && r.kind == kind && ok(r) {
			n++
		}
	}
	return n
}

// decided returns a condition for require.Eventually: at least n requests
// of each kind (REST and token) sent in phase were decided by the limiter
// (they answered with a RateLimit state).
func (tr *frTraffic) decided(phase frPhase, n int) func() bool {
	ok := func(r frResult) bool { return r.err == nil && r.state }
	return func() bool { return tr.count(phase, limitREST, ok) >= n && tr.count(phase, limitToken, ok) >= n }
}

// frSend sends one request of kind to base: a list of c's vehicles with token, or a
// client credentials grant of c. It must not fail the test: it runs in a worker.
func frSend(ctx context.Context, base, kind string, c rlTenant, token string) frResult {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var req *http.Request
	var err error
	if kind == limitREST {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/"+c.org+"/vehicles", nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	} else {
		form := url.Values{"grant_type": {"client_credentials"}}.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/oauth/token", strings.NewReader(form))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(c.secret))
		}
	}
	if err != nil {
		return frResult{err: err}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return frResult{err: err}
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return frResult{
		status: res.StatusCode,
		policy: res.Header.Get("RateLimit-Policy") != "",
		state:  res.Header.Get("RateLimit") != "",
		err:    err,
	}
}

// frRedisThroughProxy returns a Redis URL and key prefix of t's that lead through a
// new faultproxy.
func frRedisThroughProxy(t *testing.T) (p *faultproxy.Proxy, redisURL, prefix string) {
	t.Helper()
	direct, prefix := testdb.Redis(t)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	p = faultproxy.New(t, u.Host)
	u.Host = p.Addr()
	return p, u.String(), prefix
}

// frStats summarises the durations of results: how many, the median and the longest.
func frStats(results []frResult) string {
	if len(results) == 0 {
		return "none"
	}
	took := make([]time.Duration, len(results))
	for i, r := range results {
		took[i] = r.took
	}
	slices.Sort(took)
	return strconv.Itoa(len(took)) + " requests, median " + took[len(took)/2].Round(time.Millisecond).String() +
		", longest " + took[len(took)-1].Round(time.Millisecond).String()
}

// frRedisFault runs the built binary with its rate limits in Redis behind a proxy,
// under traffic to the REST API and the token endpoint, and puts fault on the proxy
// for frFaultFor in the middle of the traffic. It checks that every request is
// answered 200 throughout (the limits fail open), that each limiter failure is
// counted and logged, that a replica started during the fault starts and says Redis
// does not answer, and that after Resume Redis decides every request again.
func frRedisFault(t *testing.T, fault func(*faultproxy.Proxy)) {
	proxy, redisURL, prefix := frRedisThroughProxy(t)
	db := testdb.PostgresURL(t)
	a := newRLTenant(t, db, "Acme")
	vars := map[string]string{
		"WAYBILL_DATABASE_URL": db,
		"WAYBILL_ISSUER":       "https://waybill.test", // the replicas verify each other's tokens
		"WAYBILL_RATE_REST":    strconv.Itoa(frQuota),
		"WAYBILL_RATE_TOKEN":   strconv.Itoa(frQuota),
		"WAYBILL_REDIS_URL":    redisURL,
		"WAYBILL_REDIS_PREFIX": prefix,
	}
	bin := buildBinary(t)
	base, logs := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")

	// Redis decides from the start.
	res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "basic"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.NotEmpty(t, res.header.Get("RateLimit"), "Redis decides the first request")
	token := res.body["access_token"].(string)

	tr := frStartTraffic(base, a, token)
	stopped := false
	defer func() {
		if !stopped {
			tr.Stop()
		}
	}()
	require.Eventually(t, tr.decided(frBefore, 5), wait, 10*time.Millisecond, "traffic before the fault")
	metrics := scrape(t, base)
	for _, name := range []string{limitREST, limitToken} {
		assert.Zero(t, metricValue(t, metrics, "waybill_ratelimit_errors_total", map[string]string{"limit": name}), name)
	}

	// The fault, mid-traffic. A replica started meanwhile serves all the same.
	tr.phase.Store(int32(frFault))
	faultAt := time.Now()
	fault(proxy)
	lateBase, lateLogs := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")
	t.Logf("a replica started during the fault in %v", time.Since(faultAt).Round(time.Millisecond))
	lateToken := rlToken(t, lateBase, a)
	time.Sleep(frFaultFor - time.Since(faultAt))
	// The fault lasts until a request of each kind was sent and answered during it.
	answered := func(frResult) bool { return true }
	require.Eventually(t, func() bool {
		return tr.count(frFault, limitREST, answered) > 0 && tr.count(frFault, limitToken, answered) > 0
	}, wait, 10*time.Millisecond, "no answer during the fault")

	// Redis answers again: the next requests of each kind are decided by it.
	tr.phase.Store(int32(frResumed))
	proxy.Resume()
	resumedAt := time.Now()
	require.Eventually(t, tr.decided(frResumed, 1), wait, 10*time.Millisecond, "no decision by Redis after Resume")
	t.Logf("Redis decided requests of both kinds %v after Resume", time.Since(resumedAt).Round(time.Millisecond))
	tr.phase.Store(int32(frRecovered))
	require.Eventually(t, tr.decided(frRecovered, frAfter), wait, 10*time.Millisecond, "traffic after the recovery")
	results := tr.Stop()
	stopped = true

	// Every request was answered 200, with the limit's policy; each that Redis did not
	// decide was counted as one error of its limit.
	failed := map[string]int{}
	byPhase := map[frPhase][]frResult{}
	for i, r := range results {
		require.NoError(t, r.err, "request %d (%s, phase %d)", i, r.kind, r.phase)
		require.Equal(t, http.StatusOK, r.status, "request %d (%s, phase %d)", i, r.kind, r.phase)
		assert.True(t, r.policy, "request %d (%s, phase %d) without RateLimit-Policy", i, r.kind, r.phase)
		if !r.state {
			failed[r.kind]++
		}
		byPhase[r.phase] = append(byPhase[r.phase], r)
		if r.phase == frRecovered {
			assert.True(t, r.state, "request %d (%s) after the recovery was not decided by Redis", i, r.kind)
		}
	}
	metrics = scrape(t, base)
	for _, name := range []string{limitREST, limitToken} {
		assert.Positive(t, failed[name], "no %s request failed open during the fault", name)
		assert.Equal(t, float64(failed[name]), metricValue(t, metrics, "waybill_ratelimit_errors_total", map[string]string{"limit": name}),
			"%s: one error per request that Redis did not decide", name)
	}
	assert.Zero(t, metricValue(t, metrics, "waybill_ratelimit_rejected_total", map[string]string{"limit": limitREST}))
	t.Logf("requests sent before the fault: %s", frStats(byPhase[frBefore]))
	t.Logf("requests sent during the fault: %s; %d rest and %d token failed open",
		frStats(byPhase[frFault]), failed[limitREST], failed[limitToken])
	t.Logf("requests sent after Resume: %s", frStats(slices.Concat(byPhase[frResumed], byPhase[frRecovered])))

	// The first failure of each limit was logged.
	lines := logLines(t, logs.String())
	logged := map[string]bool{}
	for _, l := range lines {
		if l["msg"] == "rate limits: the limiter failed; requests pass unlimited" {
			logged[l["limit"].(string)] = true
		}
	}
	assert.Equal(t, map[string]bool{limitREST: true, limitToken: true}, logged, "logs:\n%s", logs)

	// The replica that started during the fault said so, and uses Redis now.
	assert.True(t, hasLog(logLines(t, lateLogs.String()), "rate limits: redis does not answer; requests pass unlimited until it does"),
		"logs:\n%s", lateLogs)
	res = rlVehicles(t, lateBase, a.org, lateToken)
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.NotEmpty(t, res.header.Get("RateLimit"), "the late replica's limits use Redis")
}

// A Redis cut mid-traffic (the connections closed, new ones refused) makes the
// limits fail open, counted and logged; once it is back, they hold again.
func TestRedisCutMidTraffic(t *testing.T) {
	t.Parallel()
	frRedisFault(t, (*faultproxy.Proxy).Cut)
}

// A Redis behind a network partition (nothing answers, nothing is closed) makes the
// limits fail open too, each request waiting for go-redis's timeouts; the durations
// are logged, not asserted.
func TestRedisBlackholeMidTraffic(t *testing.T) {
	t.Parallel()
	frRedisFault(t, (*faultproxy.Proxy).Blackhole)
}
