package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/tenancy"
)

// rlTenant is an organization with an app that may read its vehicles (an
// organization-scoped resource).
type rlTenant struct {
	org, clientID, secret string
}

// newRLTenant creates an organization and its app in the database dbURL.
func newRLTenant(t *testing.T, dbURL, name string) rlTenant {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", name, "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", name+" Sync", "--scopes", "svc:vehicles:read", "--database-url", dbURL)
	return rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}
}

// rlResponse is a response with its body read.
type rlResponse struct {
	status int
	header http.Header
	body   map[string]any
}

// rlDo sends req and reads its response.
func rlDo(t testing.TB, req *http.Request) rlResponse {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return rlResponse{status: res.StatusCode, header: res.Header, body: m}
}

// rlTokenRequest returns a client credentials request to base+path, the
// client authenticating in the style given: "basic", "form" or "json".
func rlTokenRequest(t testing.TB, base, path string, c rlTenant, style string) *http.Request {
	t.Helper()
	var body, ct string
	switch style {
	case "basic", "form":
		form := url.Values{"grant_type": {"client_credentials"}}
		if style == "form" {
			form.Set("client_id", c.clientID)
			form.Set("client_secret", c.secret)
		}
		body, ct = form.Encode(), "application/x-www-form-urlencoded"
	case "json":
		b, err := json.Marshal(map[string]string{"grant_type": "client_credentials", "client_id": c.clientID, "client_secret": c.secret})
		require.NoError(t, err)
		body, ct = string(b), "application/json"
	default:
		t.Fatalf("unknown style %q", style)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	if style == "basic" {
		req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(c.secret))
	}
	return req
}

// rlToken gets an access token of c from base through /v1/oauth/token.
func rlToken(t testing.TB, base string, c rlTenant) string {
	t.Helper()
	res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", c, "basic"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	return res.body["access_token"].(string)
}

// rlVehicles lists the vehicles of org on base with token.
func rlVehicles(t *testing.T, base, org, token string) rlResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/"+org+"/vehicles", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return rlDo(t, req)
}

// assertLimited checks that res was refused by the limit name: 429
// rate_limited, Retry-After in whole seconds between 1 and maxRetry, and
// the RateLimit headers with nothing remaining.
func assertLimited(t *testing.T, res rlResponse, name string, quota, maxRetry int) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
	assert.Equal(t, "rate_limited", res.body["error"])
	retry, err := strconv.Atoi(res.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", res.header.Get("Retry-After"))
	assert.GreaterOrEqual(t, retry, 1)
	assert.LessOrEqual(t, retry, maxRetry)
	assert.Equal(t, `"`+name+`";q=`+strconv.Itoa(quota)+`;w=60`, res.header.Get("RateLimit-Policy"))
	assert.True(t, strings.HasPrefix(res.header.Get("RateLimit"), `"`+name+`";r=0;t=`), "RateLimit %q", res.header.Get("RateLimit"))
}

// assertState checks the RateLimit header of res under the limit name: r
// exactly, and t, the seconds until the whole quota is back, at most tMax
// and not far below it (the clock moves a little between requests).
func assertState(t *testing.T, res rlResponse, name string, r, tMax int) {
	t.Helper()
	h := res.header.Get("RateLimit")
	prefix := `"` + name + `";r=` + strconv.Itoa(r) + ";t="
	require.True(t, strings.HasPrefix(h, prefix), "RateLimit %q, want %s…", h, prefix)
	secs, err := strconv.Atoi(strings.TrimPrefix(h, prefix))
	require.NoError(t, err, "RateLimit %q", h)
	assert.LessOrEqual(t, secs, tMax, "RateLimit %q", h)
	assert.Greater(t, secs, tMax-5, "RateLimit %q", h)
}

// The three limits of a server with small quotas, in process, on SQLite.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	b := newRLTenant(t, db, "Bolt")
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--rate-rest", "5", "--rate-rest-app", "0", "--rate-edge", "2"}, env(map[string]string{"WAYBILL_RATE_TOKEN": "3"}))
	defer func() { require.NoError(t, stop()) }()

	// The token limit: 3 a minute per client. The first request of A
	// leaves 2, and the whole quota is back 20 s later.
	res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "basic"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Equal(t, `"token";q=3;w=60`, res.header.Get("RateLimit-Policy"))
	assertState(t, res, "token", 2, 20)
	tokenA := res.body["access_token"].(string)
	tokenB := rlToken(t, base, b)

	t.Run("rest per organization", func(t *testing.T) {
		for i := range 5 {
			res := rlVehicles(t, base, a.org, tokenA)
			require.Equal(t, http.StatusOK, res.status, "request %d: %v", i+1, res.body)
			assert.Equal(t, `"rest";q=5;w=60`, res.header.Get("RateLimit-Policy"))
			assertState(t, res, "rest", 4-i, 12*(i+1))
		}
		assertLimited(t, rlVehicles(t, base, a.org, tokenA), "rest", 5, 12)

		// The other organization has its own quota.
		res := rlVehicles(t, base, b.org, tokenB)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assertState(t, res, "rest", 4, 12)

		// Requests that tenancy refuses are not counted: their organization
		// is not known before the token is checked.
		for _, token := range []string{"", "not-a-token"} {
			res := rlVehicles(t, base, b.org, token)
			assert.Equal(t, http.StatusUnauthorized, res.status)
			assert.Empty(t, res.header.Get("RateLimit"))
			assert.Empty(t, res.header.Get("RateLimit-Policy"))
		}
		res = rlVehicles(t, base, b.org, tokenB)
		assertState(t, res, "rest", 3, 24)

		// Routes outside the limits carry no RateLimit header.
		res = rlDo(t, mustRequest(t, http.MethodGet, base+"/healthz"))
		assert.Equal(t, http.StatusOK, res.status)
		assert.Empty(t, res.header.Get("RateLimit-Policy"))
	})

	t.Run("token per client", func(t *testing.T) {
		// A has spent one request on its token: two more pass, in either
		// style of client authentication, and the handler reads the body
		// whole after the limit read the client_id in it.
		for _, style := range []string{"form", "json"} {
			res := rlDo(t, rlTokenRequest(t, base, "/auth/v1/oauth/token", a, style))
			require.Equal(t, http.StatusOK, res.status, "%s: %v", style, res.body)
			assert.NotEmpty(t, res.body["access_token"])
		}
		assertLimited(t, rlDo(t, rlTokenRequest(t, base, "/auth/v1/oauth/token", a, "basic")), "token", 3, 20)
		// Introspection and revocation share the client's quota.
		assertLimited(t, rlDo(t, rlTokenRequest(t, base, "/auth/v1/oauth/introspect", a, "basic")), "token", 3, 20)

		// B has its own.
		res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", b, "form"))
		require.Equal(t, http.StatusOK, res.status, res.body)
		assertState(t, res, "token", 1, 40)
	})

	t.Run("edge per app", func(t *testing.T) {
		// /functions/v1/oauth-token counts against "edge" only: A's token
		// quota is spent, its edge quota is not.
		for i := range 2 {
			res := rlDo(t, rlTokenRequest(t, base, "/functions/v1/oauth-token", a, "basic"))
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.Equal(t, `"edge";q=2;w=60`, res.header.Get("RateLimit-Policy"))
			assertState(t, res, "edge", 1-i, 30*(i+1))
		}
		assertLimited(t, rlDo(t, rlTokenRequest(t, base, "/functions/v1/oauth-token", a, "json")), "edge", 2, 30)
		res := rlDo(t, rlTokenRequest(t, base, "/functions/v1/oauth-token", b, "json"))
		require.Equal(t, http.StatusOK, res.status, res.body)
		// B's token quota is as it was.
		res = rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", b, "basic"))
		require.Equal(t, http.StatusOK, res.status, res.body)
		assertState(t, res, "token", 0, 60)
	})

	t.Run("password sign-in per address", func(t *testing.T) {
		// Keyed by the remote address, whatever client_id the body names:
		// a new name at each guess does not reset the count.
		for i := range 3 {
			res := rlPost(t, base+"/auth/v1/token?grant_type=password", "application/json",
				`{"email":"nobody@example.test","password":"wrong","client_id":"guess-`+strconv.Itoa(i)+`"}`)
			require.NotEqual(t, http.StatusTooManyRequests, res.status, "attempt %d", i+1)
			assertState(t, res, "token", 2-i, 20*(i+1))
		}
		res := rlPost(t, base+"/auth/v1/token?grant_type=password", "application/json", `{"email":"nobody@example.test","password":"wrong","client_id":"guess-9"}`)
		assertLimited(t, res, "token", 3, 20)
		// The login form too, from the same address.
		assertLimited(t, rlPost(t, base+"/auth/v1/login", "application/x-www-form-urlencoded", "email=a&password=b"), "token", 3, 20)
		// A token request that names no client is counted by address too.
		assertLimited(t, rlPost(t, base+"/auth/v1/oauth/token", "application/x-www-form-urlencoded", "grant_type=refresh_token&refresh_token=x"), "token", 3, 20)
		// The login page itself (GET) is not limited.
		res = rlDo(t, mustRequest(t, http.MethodGet, base+"/auth/v1/login"))
		assert.Equal(t, http.StatusOK, res.status)
		assert.Empty(t, res.header.Get("RateLimit"))
	})
}

// rlPost posts body of type ct to target.
func rlPost(t *testing.T, target, ct, body string) rlResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	return rlDo(t, req)
}

// A quota of 0 disables its limit: no refusal, no RateLimit header.
func TestRateLimitsDisabled(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--rate-rest", "0", "--rate-token", "0", "--rate-edge", "1"}, env(nil))
	defer func() { require.NoError(t, stop()) }()

	var token string
	for range 3 {
		res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "basic"))
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Empty(t, res.header.Get("RateLimit-Policy"))
		assert.Empty(t, res.header.Get("RateLimit"))
		token = res.body["access_token"].(string)
	}
	for range 3 {
		res := rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Empty(t, res.header.Get("RateLimit-Policy"))
		assert.Empty(t, res.header.Get("RateLimit"))
	}
	// The edge limit stays on.
	res := rlDo(t, rlTokenRequest(t, base, "/functions/v1/oauth-token", a, "basic"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	assertState(t, res, "edge", 0, 60)
	assertLimited(t, rlDo(t, rlTokenRequest(t, base, "/functions/v1/oauth-token", a, "basic")), "edge", 1, 60)
}

// Two replicas on one database and one Redis hold one limit per
// organization between them.
func TestRateLimitsRedisReplicas(t *testing.T) {
	t.Parallel()
	redisURL, prefix := testdb.Redis(t)
	db := testdb.PostgresURL(t)
	a := newRLTenant(t, db, "Acme")
	b := newRLTenant(t, db, "Bolt")
	vars := map[string]string{
		"WAYBILL_DATABASE_URL":  db,
		"WAYBILL_ISSUER":        "https://waybill.test", // the replicas verify each other's tokens
		"WAYBILL_RATE_REST":     "100",
		"WAYBILL_RATE_REST_APP": "0",
		"WAYBILL_REDIS_URL":     redisURL,
		"WAYBILL_REDIS_PREFIX":  prefix,
	}
	// Two processes of the built binary: they share nothing but the
	// database and Redis.
	bin := buildBinary(t)
	base1, logs1 := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")
	base2, _ := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")
	assert.Contains(t, logs1.String(), `"backend":"redis"`)

	tokenA := rlToken(t, base1, a)
	tokenB := rlToken(t, base2, b)

	// 150 requests of A, alternately to each replica. GCRA lets 100 pass at
	// once and then one every 600 ms: however slow the run, at most one
	// more per 600 ms that passed between the first decision and the last.
	const quota, requests = 100, 150
	step := time.Minute / quota
	start := time.Now()
	passed, refused := 0, 0
	for i := range requests {
		res := rlVehicles(t, []string{base1, base2}[i%2], a.org, tokenA)
		switch res.status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			refused++
			assert.Equal(t, "rate_limited", res.body["error"])
			assert.NotEmpty(t, res.header.Get("Retry-After"))
		default:
			t.Fatalf("request %d: status %d: %v", i+1, res.status, res.body)
		}
	}
	allowance := int(time.Since(start) / step)
	t.Logf("%d passed, %d refused; %d more may have been earned back", passed, refused, allowance)
	assert.GreaterOrEqual(t, passed, quota, "the whole quota passes at once")
	assert.LessOrEqual(t, passed, quota+allowance, "one limit shared by both replicas")
	assert.Equal(t, requests, passed+refused)

	// B, on the same replicas, is untouched.
	for i := range 4 {
		res := rlVehicles(t, []string{base1, base2}[i%2], b.org, tokenB)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assertState(t, res, "rest", quota-1-i, int((time.Duration(i+1)*step+time.Second-1)/time.Second))
	}
}

// A Redis that does not answer lets requests through, and each failure is
// counted in the metrics and logged, at most once per interval.
func TestRateLimitsRedisDownFailsOpen(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	base, logs, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--rate-rest", "2", "--rate-rest-app", "0", "--rate-token", "1", "--redis-url", "redis://" + closed + "/0"}, env(nil))
	defer func() { require.NoError(t, stop()) }()

	var token string
	for range 3 {
		res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "basic"))
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"token";q=1;w=60`, res.header.Get("RateLimit-Policy"))
		assert.Empty(t, res.header.Get("RateLimit"), "no decision, no state")
		token = res.body["access_token"].(string)
	}
	for range 5 {
		res := rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusOK, res.status, res.body)
	}

	metrics := scrape(t, base)
	assert.Equal(t, 5.0, metricValue(t, metrics, "waybill_ratelimit_errors_total", map[string]string{"limit": "rest"}))
	assert.Equal(t, 3.0, metricValue(t, metrics, "waybill_ratelimit_errors_total", map[string]string{"limit": "token"}))
	assert.Equal(t, 0.0, metricValue(t, metrics, "waybill_ratelimit_rejected_total", map[string]string{"limit": "rest"}))

	lines := logLines(t, logs.String())
	assert.True(t, hasLog(lines, "rate limits: redis does not answer; requests pass unlimited until it does"), "logs:\n%s", logs)
	perLimit := map[string]int{}
	for _, l := range lines {
		if l["msg"] == "rate limits: the limiter failed; requests pass unlimited" {
			perLimit[l["limit"].(string)]++
		}
	}
	// The first failure of each limit is logged; the next ones, within
	// errorLogInterval, only counted (a slow run may cross an interval).
	assert.Len(t, perLimit, 2, "logs:\n%s", logs)
	assert.GreaterOrEqual(t, perLimit["rest"], 1)
	assert.Less(t, perLimit["rest"], 5)
	assert.GreaterOrEqual(t, perLimit["token"], 1)
	assert.Less(t, perLimit["token"], 3)
}

// rpClients authenticates the client "app-1" with the secret "s".
type rpClients struct{}

// AuthenticateClient accepts app-1 with s, and nothing else.
func (rpClients) AuthenticateClient(_ context.Context, id, secret, _ string) (*oauth.App, error) {
	if id == "app-1" && secret == "s" {
		return &oauth.App{ClientID: id}, nil
	}
	return nil, apierrors.InvalidClient("", "client authentication failed")
}

func TestKeyByClient(t *testing.T) {
	t.Parallel()
	// The key as the limit sees it: behind oauth.IdentifyClient.
	key := func(r *http.Request) (got string, ok bool) {
		oauth.IdentifyClient(rpClients{})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got, ok = keyByClient(r)
		})).ServeHTTP(httptest.NewRecorder(), r)
		return got, ok
	}
	tests := []struct {
		name, body, remote, want string
	}{
		{"authenticated", "client_id=app-1&client_secret=s", "192.0.2.7:5000", "client:app-1"},
		{"wrong secret: the address", "client_id=app-1&client_secret=x", "192.0.2.7:5000", "addr:192.0.2.7"},
		{"no secret: the address", "client_id=app-1", "192.0.2.7:5000", "addr:192.0.2.7"},
		{"no client: the address", "grant_type=refresh_token", "192.0.2.7:5000", "addr:192.0.2.7"},
		{"IPv6: its /64", "client_id=app-1&client_secret=x", "[2001:db8:1:2:3:4:5:6]:5000", "addr:2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/v1/oauth/token", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.RemoteAddr = tt.remote
			got, ok := key(req)
			assert.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Wrap picks the limit by method and path; everything else passes as it
// is.
func TestRateLimitsWrapRoutes(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	l, err := newRateLimits(t.Context(), limitsConfig{REST: 1, Edge: 1, Token: 1}, nil, newLogger(&logs))
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), rpClients{})
	tests := []struct {
		method, path, limit string
	}{
		{http.MethodPost, "/auth/v1/oauth/token", "token"},
		{http.MethodPost, "/v1/oauth/token", "token"},
		{http.MethodPost, "/auth/v1/oauth/revoke", "token"},
		{http.MethodPost, "/auth/v1/oauth/introspect", "token"},
		{http.MethodPost, "/auth/v1/token", "token"},
		{http.MethodPost, "/auth/v1/login", "token"},
		{http.MethodPost, "/functions/v1/oauth-token", "edge"},
		{http.MethodGet, "/functions/v1/anything", "edge"},
		{http.MethodGet, "/auth/v1/oauth/token", ""},
		{http.MethodGet, "/auth/v1/login", ""},
		{http.MethodPost, "/auth/v1/oauth/apps", ""},
		{http.MethodPost, "/auth/v1/oauth/consent", ""},
		{http.MethodGet, "/v1/org/vehicles", ""}, // the registry's Middleware limits the API
		{http.MethodGet, "/healthz", ""},
		{http.MethodGet, "/metrics", ""},
	}
	for i, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		req.RemoteAddr = "192.0.2." + strconv.Itoa(i+1) + ":1" // a whole quota for each request
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := ""
		if tt.limit != "" {
			want = `"` + tt.limit + `";q=1;w=60`
		}
		assert.Equal(t, want, rec.Header().Get("RateLimit-Policy"), "%s %s", tt.method, tt.path)
		assert.Equal(t, http.StatusOK, rec.Code, "%s %s", tt.method, tt.path)
	}
}

// countingClients is rpClients counting its authentications.
type countingClients struct {
	rpClients
	n *atomic.Int64
}

func (c countingClients) AuthenticateClient(ctx context.Context, id, secret, scheme string) (*oauth.App, error) {
	c.n.Add(1)
	return c.rpClients.AuthenticateClient(ctx, id, secret, scheme)
}

// A limit keyed by client authenticates the client in front of the
// endpoint, for its key; one that is off does not, and hands the request
// on as it came (the endpoint authenticates it, once).
func TestRateLimitsWrapIdentifiesOnlyForALimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  limitsConfig
		want int64
	}{
		{"limits on", limitsConfig{Edge: 100, Token: 100}, 1},
		{"limits off", limitsConfig{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := newRateLimits(t.Context(), tt.cfg, nil, newLogger(io.Discard))
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()
			for _, path := range []string{"/auth/v1/oauth/token", "/functions/v1/oauth-token"} {
				var n atomic.Int64
				var identified bool
				h := l.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					_, identified = oauth.AuthenticatedApp(r.Context())
				}), countingClients{n: &n})
				req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("client_id=app-1&client_secret=s"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				h.ServeHTTP(httptest.NewRecorder(), req)
				assert.Equal(t, tt.want, n.Load(), path)
				assert.Equal(t, tt.want == 1, identified, path)
			}
		})
	}
}

func TestQuotaFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags([]string{"--rate-rest", "0", "--rate-edge", "7"}, env(map[string]string{"WAYBILL_RATE_TOKEN": "9", "WAYBILL_REDIS_URL": "redis://r:6379/1"}), io.Discard)
	require.NoError(t, err)
	c := cfg.Limits
	assert.Equal(t, 0, c.REST)
	assert.Equal(t, 7, c.Edge)
	assert.Equal(t, 9, c.Token)
	assert.Equal(t, "redis://r:6379/1", c.RedisURL)

	cfg, err = parseServeFlags(nil, env(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, limitsConfig{REST: 1000, Edge: 100, Token: 30}, cfg.Limits, "the defaults of SPEC section 6")

	// --rate-rest-app is unset by default: apps have no quota of their
	// own, whatever --rate-rest is.
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{nil, nil, 0},
		{[]string{"--rate-rest", "300"}, nil, 0},
		{[]string{"--rate-rest", "0"}, nil, 0},
		{[]string{"--rate-rest-app", "42"}, nil, 42},
		{[]string{"--rate-rest-app", "0"}, nil, 0},
		{nil, map[string]string{"WAYBILL_RATE_REST_APP": "7"}, 7},
	} {
		cfg, err := parseServeFlags(tc.args, env(tc.env), io.Discard)
		require.NoError(t, err)
		l, err := newRateLimits(t.Context(), cfg.Limits, nil, newLogger(io.Discard))
		require.NoError(t, err)
		assert.Equal(t, ratelimit.Limit{Name: "rest-app", Quota: tc.want, Window: time.Minute}, l.restApp, "%v %v", tc.args, tc.env)
	}
	assert.Equal(t, ratelimit.Limit{Name: "rest", Quota: 1000, Window: time.Minute}, limit(limitREST, cfg.Limits.REST))

	for _, bad := range []string{"-1", "x", "1.5"} {
		_, err := parseServeFlags([]string{"--rate-token", bad}, env(nil), io.Discard)
		assert.ErrorContains(t, err, "rate-token", "value %q", bad)
	}
	_, err = parseServeFlags(nil, env(map[string]string{"WAYBILL_RATE_REST": "lots"}), io.Discard)
	assert.ErrorContains(t, err, "WAYBILL_RATE_REST")

	_, err = runCommand(t, nil, "serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://"+testdb.SQLitePath(t), "--redis-url", "http://user:hunter2@r/0")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestNewRedisClient(t *testing.T) {
	t.Parallel()
	c, err := newRedisClient("redis://:pw@127.0.0.1:6379/2")
	require.NoError(t, err)
	defer c.Close()
	client := c.(*redis.Client)
	opts := client.Options()
	assert.Equal(t, 2, opts.DB)
	assert.Equal(t, redisDialTimeout, opts.DialTimeout)
	assert.Equal(t, redisIOTimeout, opts.ReadTimeout)
	assert.Equal(t, redisIOTimeout, opts.WriteTimeout)
	assert.Equal(t, redisMaxRetries, opts.MaxRetries)
	assert.Equal(t, redisDialerRetries, opts.DialerRetries)

	// The URL may set them itself.
	c, err = newRedisClient("redis://127.0.0.1:6379/0?dial_timeout=3s&read_timeout=2s&max_retries=4")
	require.NoError(t, err)
	defer c.Close()
	client = c.(*redis.Client)
	assert.Equal(t, 3*time.Second, client.Options().DialTimeout)
	assert.Equal(t, 2*time.Second, client.Options().ReadTimeout)
	assert.Equal(t, 4, client.Options().MaxRetries)

	for _, bad := range []string{"http://u:hunter2@r/0", "redis://u:hunter2@r:x/0", "redis://u:hunter2@r/notadb"} {
		_, err := newRedisClient(bad)
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "hunter2")
		assert.Contains(t, err.Error(), "--redis-url")
	}
}

// buildBinary builds the waybill binary into a directory of t's.
func buildBinary(t testing.TB) string {
	t.Helper()
	return buildPackage(t, t.TempDir(), "waybill", ".")
}

// buildPackage builds the package pkg into dir/name, with the build flags
// given (-overlay, say).
func buildPackage(t testing.TB, dir, name, pkg string, flags ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "building %s needs the go command on PATH", pkg)
	bin := filepath.Join(dir, name)
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	out, err := exec.CommandContext(t.Context(), goTool, args...).CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, out)
	return bin
}

// The two keys a REST request is counted under share one Redis hash tag,
// the organization, so that the one script that decides both runs on a
// Redis Cluster (whose scripts take keys of one slot only).
func TestRESTKeysShareAHashTag(t *testing.T) {
	t.Parallel()
	const org = "01a20ba7-77f2-7369-9e75-d8cc38a61727"
	r := httptest.NewRequest(http.MethodGet, "/v1/x/accounts", nil)
	r = r.WithContext(tenancy.NewContext(r.Context(), tenancy.Tenant{OrganizationID: org,
		Claims: &bearer.Claims{OrganizationID: org, ClientID: "client-1"}}))
	tag := func(key string) string {
		// Redis Cluster hashes the part between the first { and the next }.
		open := strings.IndexByte(key, '{')
		require.GreaterOrEqual(t, open, 0, key)
		end := strings.IndexByte(key[open+1:], '}')
		require.Positive(t, end, key)
		return key[open+1 : open+1+end]
	}
	orgKey, ok := keyByOrganization(r)
	require.True(t, ok)
	appKey, ok := keyByOrganizationApp(r)
	require.True(t, ok)
	assert.NotEqual(t, orgKey, appKey)
	assert.Equal(t, org, tag("waybill:rl:rest:"+orgKey))
	assert.Equal(t, org, tag("waybill:rl:rest-app:"+appKey))
}
