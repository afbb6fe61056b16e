package main

// Load and fault tests of the built binary on PostgreSQL: the pool is
// bounded and kept, overload and outages are answered 503
// temporarily_unavailable, SIGTERM drains requests in flight, and a request
// the client abandoned is no server error. Each test has a database of its
// own, so that the connections counted in pg_stat_activity are the server's,
// and reaches it through a TCP proxy that it can cut, blackhole and slow.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/faultproxy"
	"github.com/waybillhq/waybill/internal/testdb"
)

// ftAppName is the application_name of the server's PostgreSQL
// connections, by which the tests tell them from their own.
const ftAppName = "waybill-under-test"

// ftHangBound is how long a test waits for one answer before it calls the
// server hung. The server's own bounds are seconds; this is far above them
// so that a slow machine never fails a test, and far below the 30 s hangs
// the bounds exist to prevent.
const ftHangBound = 15 * time.Second

// ftSetup is a database of a test's own, an organization with an app in it,
// and a proxy in front of the database.
type ftSetup struct {
	dbURL    string // direct, for the test's own queries and admin commands
	proxy    *faultproxy.Proxy
	proxyURL string // through the proxy, with ftAppName, for the server
	tenant   rlTenant
}

func ftNew(t *testing.T) ftSetup {
	t.Helper()
	dbURL := testdb.PostgresDatabaseURL(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("application_name", ftAppName)
	u.RawQuery = q.Encode()
	return ftSetup{dbURL: dbURL, proxy: proxy, proxyURL: u.String(), tenant: newRLTenant(t, dbURL, "Acme")}
}

// ftClient is an HTTP client for many concurrent requests to one server:
// it keeps a connection per client goroutine.
func ftClient(clients int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = clients
	tr.MaxIdleConnsPerHost = clients
	return &http.Client{Transport: tr, Timeout: ftHangBound}
}

// ftAnswer is what a test keeps of a response.
type ftAnswer struct {
	status     int
	errorCode  string // "error" of the body, if any
	retryAfter string
	took       time.Duration
	err        error // transport error: no answer
}

// ftDo sends req with client and reads the whole answer.
func ftDo(client *http.Client, req *http.Request) ftAnswer {
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return ftAnswer{err: err, took: time.Since(start)}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	a := ftAnswer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), took: time.Since(start), err: err}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		a.errorCode = e.Error
	}
	return a
}

// ftList returns a request for the vehicles of the tenant, with the total.
func ftList(ctx context.Context, base string, s ftSetup, token string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/"+s.tenant.org+"/vehicles?limit=10", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// ftToken returns a client-credentials token request of the tenant's app.
func ftToken(ctx context.Context, base string, s ftSetup) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/oauth/token",
		strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(s.tenant.clientID, s.tenant.secret)
	return req
}

// ftLoad runs clients goroutines, each sending one request after another
// from next until ctx is done, and returns every answer.
func ftLoad(ctx context.Context, clients int, next func(ctx context.Context, client, i int) *http.Request) []ftAnswer {
	client := ftClient(clients)
	defer client.CloseIdleConnections()
	var (
		mu  sync.Mutex
		all []ftAnswer
		wg  sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			var mine []ftAnswer
			for i := 0; ctx.Err() == nil; i++ {
				// The request's own context is not ctx: a request under way
				// when the load ends is answered, not abandoned.
				a := ftDo(client, next(context.Background(), c, i))
				mine = append(mine, a)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all
}

// ftBackends watches the PostgreSQL sessions of the server (by its
// application_name) in the test's database.
type ftBackends struct {
	db *sql.DB
}

func ftWatch(t *testing.T, dbURL string) ftBackends {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.PingContext(t.Context()))
	return ftBackends{db: db}
}

// pids returns the backend process ids of the server's sessions now.
func (b ftBackends) pids(t *testing.T) []int {
	t.Helper()
	rows, err := b.db.QueryContext(t.Context(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, ftAppName)
	require.NoError(t, err)
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		require.NoError(t, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(t, rows.Err())
	return pids
}

// sessions returns how many sessions the database has had since the
// server started (pg_stat_database.sessions, PostgreSQL 14 and later).
func (b ftBackends) sessions(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.db.QueryRowContext(t.Context(),
		`SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n))
	return n
}

// sample records the server's backends every 50 ms until ctx is done, and
// returns the most seen at once and every pid seen.
func (b ftBackends) sample(ctx context.Context, t *testing.T) (most int, seen map[int]bool) {
	seen = map[int]bool{}
	for ctx.Err() == nil {
		pids := b.pids(t)
		most = max(most, len(pids))
		for _, p := range pids {
			seen[p] = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return most, seen
}

// ftCount tallies answers by status and error code.
func ftCount(answers []ftAnswer) map[string]int {
	c := map[string]int{}
	for _, a := range answers {
		key := fmt.Sprint(a.status)
		if a.err != nil {
			key = "transport error: " + a.err.Error()
		} else if a.errorCode != "" {
			key += " " + a.errorCode
		}
		c[key]++
	}
	return c
}

// 16 clients for 8 s keep at most --db-max-conns backends, and the server
// opens no session per request: at most that many in all.
func TestPoolBoundedUnderLoad(t *testing.T) {
	t.Parallel()
	const maxConns, clients = 4, 16
	s := ftNew(t)
	bin := buildBinary(t)
	p := startProc(t, bin, nil, serveArgs("--database-url", s.proxyURL, "--db-max-conns", fmt.Sprint(maxConns))...)
	backends := ftWatch(t, s.dbURL)
	token := rlToken(t, p.url, s.tenant)
	before := backends.sessions(t)

	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	type sampled struct {
		most int
		seen map[int]bool
	}
	samples := make(chan sampled, 1)
	go func() {
		most, seen := backends.sample(ctx, t)
		samples <- sampled{most, seen}
	}()
	answers := ftLoad(ctx, clients, func(ctx context.Context, c, i int) *http.Request {
		if c%4 == 0 {
			return ftToken(ctx, p.url, s)
		}
		return ftList(ctx, p.url, s, token)
	})
	got := <-samples
	opened := backends.sessions(t) - before

	t.Logf("%d requests, %v; backends at most %d at once, %d seen, %d sessions opened",
		len(answers), ftCount(answers), got.most, len(got.seen), opened)
	assert.Equal(t, map[string]int{"200": len(answers)}, ftCount(answers), "every request succeeds")
	assert.Greater(t, len(answers), clients, "the load ran")
	assert.LessOrEqual(t, got.most, maxConns, "backends at once")
	assert.LessOrEqual(t, len(got.seen), maxConns, "distinct backends during the load")
	assert.LessOrEqual(t, opened, int64(maxConns), "sessions opened during the load")
	assert.Empty(t, p.errorLines(t))
	require.NoError(t, p.stop(t))
}

// 300 clients on a slow database with 2 connections get only 200 or 503
// temporarily_unavailable with Retry-After, and no other 5xx.
func TestOverloadIsAnswered503(t *testing.T) {
	t.Parallel()
	const maxConns, clients = 2, 300
	s := ftNew(t)
	bin := buildBinary(t)
	p := startProc(t, bin, nil, serveArgs("--database-url", s.proxyURL, "--db-max-conns", fmt.Sprint(maxConns), "--db-timeout", "500ms")...)
	backends := ftWatch(t, s.dbURL)
	token := rlToken(t, p.url, s.tenant)
	// Every statement takes at least 40 ms: two connections serve at most
	// 25 statements a second, far below what 300 clients ask.
	s.proxy.SetDelay(20 * time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	defer cancel()
	answers := ftLoad(ctx, clients, func(ctx context.Context, c, i int) *http.Request {
		if c%3 == 0 {
			return ftToken(ctx, p.url, s)
		}
		return ftList(ctx, p.url, s, token)
	})
	t.Logf("%d requests: %v", len(answers), ftCount(answers))

	var unavailable int
	var slowest time.Duration
	for _, a := range answers {
		require.NoError(t, a.err, "every request is answered")
		slowest = max(slowest, a.took)
		switch a.status {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			unavailable++
			assert.Equal(t, "temporarily_unavailable", a.errorCode)
			assert.NotEmpty(t, a.retryAfter, "Retry-After")
		default:
			t.Fatalf("status %d %s", a.status, a.errorCode)
		}
	}
	t.Logf("slowest answer %v", slowest)
	assert.Positive(t, unavailable, "the overload was answered 503")
	assert.LessOrEqual(t, len(backends.pids(t)), maxConns)
	assert.Empty(t, p.errorLines(t), "503s are warnings, not errors")

	// Once the load is gone, requests succeed again.
	s.proxy.SetDelay(0)
	a := ftDo(ftClient(1), ftList(t.Context(), p.url, s, token))
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusOK, a.status)
	require.NoError(t, p.stop(t))
}

// While PostgreSQL cannot be reached (its connections cut, or a partition
// that drops every packet), API and token calls answer 503
// temporarily_unavailable within the server's bound, /readyz is 503 and
// /healthz 200; when it is back, calls succeed again without a restart.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	s := ftNew(t)
	bin := buildBinary(t)
	p := startProc(t, bin, nil, serveArgs("--database-url", s.proxyURL, "--db-max-conns", "4")...) // --db-timeout: the default, 2 s
	token := rlToken(t, p.url, s.tenant)
	client := ftClient(4)
	probe := func(path string) ftAnswer {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.url+path, nil)
		return ftDo(client, req)
	}
	require.Equal(t, http.StatusOK, ftDo(client, ftList(t.Context(), p.url, s, token)).status)

	for _, outage := range []struct {
		name  string
		start func()
	}{
		{"cut", s.proxy.Cut},
		{"partition", s.proxy.Blackhole},
	} {
		t.Run(outage.name, func(t *testing.T) {
			outage.start()
			for _, req := range []func() *http.Request{
				func() *http.Request { return ftList(t.Context(), p.url, s, token) },
				func() *http.Request { return ftToken(t.Context(), p.url, s) },
			} {
				for range 3 {
					a := ftDo(client, req())
					require.NoError(t, a.err, "answered, not hung")
					t.Logf("%s %s: %d %s in %v", req().Method, req().URL.Path, a.status, a.errorCode, a.took)
					assert.Equal(t, http.StatusServiceUnavailable, a.status)
					assert.Equal(t, "temporarily_unavailable", a.errorCode)
					assert.NotEmpty(t, a.retryAfter)
				}
			}
			ready := probe("/readyz")
			assert.Equal(t, http.StatusServiceUnavailable, ready.status, "readyz")
			assert.Equal(t, http.StatusOK, probe("/healthz").status, "healthz")

			s.proxy.Resume()
			start := time.Now()
			var last ftAnswer
			for time.Since(start) < wait {
				if last = ftDo(client, ftList(t.Context(), p.url, s, token)); last.status == http.StatusOK {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			require.Equal(t, http.StatusOK, last.status, "recovered without a restart: %+v", last)
			t.Logf("recovered %v after the database came back", time.Since(start).Round(time.Millisecond))
			assert.Equal(t, http.StatusOK, ftDo(client, ftToken(t.Context(), p.url, s)).status)
			assert.Equal(t, http.StatusOK, probe("/readyz").status)
		})
	}
	assert.Empty(t, p.errorLines(t), "an outage is logged as warnings")
	require.NoError(t, p.stop(t))
}

// SIGTERM lets every request in flight finish, also on a slow database,
// and the process exits 0.
func TestShutdownDrainsRequests(t *testing.T) {
	t.Parallel()
	const inFlight = 8
	s := ftNew(t)
	bin := buildBinary(t)
	p := startProc(t, bin, nil, serveArgs("--database-url", s.proxyURL, "--db-max-conns", "4", "--db-timeout", "20s")...)
	token := rlToken(t, p.url, s.tenant)
	// Each statement now takes at least 400 ms.
	s.proxy.SetDelay(200 * time.Millisecond)

	client := ftClient(inFlight)
	answers := make(chan ftAnswer, inFlight)
	for range inFlight {
		go func() { answers <- ftDo(client, ftList(context.Background(), p.url, s, token)) }()
	}
	// Wait until the server handles all of them (the metrics request
	// itself is one more), then ask it to stop.
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		v := metricValue(t, scrape(t, p.url), "http_requests_in_flight", nil)
		if v >= inFlight+1 {
			break
		}
		require.Less(t, time.Since(start), wait, "requests in flight: %v", v)
	}
	require.NoError(t, p.stop(t), "exit 0 after SIGTERM; logs:\n%s", p.logs)
	for range inFlight {
		a := <-answers
		require.NoError(t, a.err)
		assert.Equal(t, http.StatusOK, a.status, "a request in flight is served")
	}
	_, err := client.Get(p.url + "/healthz")
	assert.Error(t, err, "nothing listens after the shutdown")
	assert.True(t, hasLog(logLines(t, p.logs.String()), "stopped"), "logs:\n%s", p.logs)
}

// A request whose client gives up is no server error: it is logged at info
// with status 499, and no 5xx is counted.
func TestAbandonedRequest(t *testing.T) {
	t.Parallel()
	s := ftNew(t)
	bin := buildBinary(t)
	p := startProc(t, bin, nil, serveArgs("--database-url", s.proxyURL, "--db-max-conns", "4")...)
	token := rlToken(t, p.url, s.tenant)
	// The database answers nothing while the clients wait: each request is
	// still at its first statement when its client gives up. (On a merely
	// slow database a request may still complete after its client left,
	// answered to nobody: no failure, and nothing to log.)
	s.proxy.Blackhole()

	for _, req := range []func(context.Context) *http.Request{
		func(ctx context.Context) *http.Request { return ftList(ctx, p.url, s, token) },
		func(ctx context.Context) *http.Request { return ftToken(ctx, p.url, s) },
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		a := ftDo(ftClient(1), req(ctx))
		cancel()
		require.ErrorIs(t, a.err, context.DeadlineExceeded, "the client gave up")
	}
	abandoned := func() int {
		n := 0
		for _, l := range logLines(t, p.logs.String()) {
			if l["msg"] == "request abandoned by the client" {
				assert.Equal(t, "INFO", l["level"])
				assert.EqualValues(t, 499, l["status"])
				n++
			}
		}
		return n
	}
	for start := time.Now(); abandoned() < 2; time.Sleep(50 * time.Millisecond) {
		require.Less(t, time.Since(start), wait, "no abandoned requests logged:\n%s", p.logs)
	}
	s.proxy.Resume()
	metrics := scrape(t, p.url)
	assert.Equal(t, 1.0, metricValue(t, metrics, "http_requests_total",
		map[string]string{"route": "/v1/{scopeId}/vehicles", "method": "GET", "code": "499"}))
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "http_requests_total{") {
			assert.NotRegexp(t, `code="5\d\d"`, line)
		}
	}
	assert.Empty(t, p.errorLines(t))
	require.NoError(t, p.stop(t))
}
