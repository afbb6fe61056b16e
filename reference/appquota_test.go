package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// The REST limit of each app within its organization, beside the
// organization's, in process and in Redis.
func TestRateLimitsPerApp(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := "sqlite://" + testdb.SQLitePath(t)
			a := newRLTenant(t, db, "Acme")
			// A second app of the same organization.
			app := adminJSON(t, "admin", "app", "create", "--org", a.org, "--name", "Acme Two", "--scopes", "svc:vehicles:read", "--database-url", db)
			a2 := rlTenant{org: a.org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}
			args := []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--rate-rest", "5", "--rate-rest-app", "3", "--rate-token", "0"}
			if backend == "redis" {
				url, prefix := testdb.Redis(t)
				args = append(args, "--redis-url", url, "--redis-prefix", prefix)
			}
			base, _, stop := startRun(t, args, env(nil))
			defer func() { require.NoError(t, stop()) }()
			token, token2 := rlToken(t, base, a), rlToken(t, base, a2)

			const both = `"rest";q=5;w=60, "rest-app";q=3;w=60`
			for i := range 3 {
				res := rlVehicles(t, base, a.org, token)
				require.Equal(t, http.StatusOK, res.status, "request %d: %v", i+1, res.body)
				assert.Equal(t, both, res.header.Get("RateLimit-Policy"))
				assertState(t, res, "rest-app", 2-i, 20*(i+1))
			}
			// The first app has spent its share: refused, and its
			// organization not charged.
			for range 2 {
				res := rlVehicles(t, base, a.org, token)
				require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
				assert.Equal(t, both, res.header.Get("RateLimit-Policy"))
				assertState(t, res, "rest-app", 0, 60)
			}
			// The second app of the organization is served, until the
			// organization's quota, which caps the sum, is spent.
			res := rlVehicles(t, base, a.org, token2)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assertState(t, res, "rest", 1, 48)
			res = rlVehicles(t, base, a.org, token2)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assertState(t, res, "rest", 0, 60)
			res = rlVehicles(t, base, a.org, token2)
			require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
			assert.Equal(t, both, res.header.Get("RateLimit-Policy"))
			assertState(t, res, "rest", 0, 60)
			retry, err := strconv.Atoi(res.header.Get("Retry-After"))
			require.NoError(t, err)
			assert.LessOrEqual(t, retry, 12)
		})
	}
}

// Per-app overrides of the "rest-app" quota, set by the admin CLI: read at
// start and again once appQuotaTTL has passed, without a query per
// request.
func TestAppQuotas(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := "sqlite://" + testdb.SQLitePath(t)
			if backend == "postgres" {
				db = testdb.PostgresURL(t)
			}
			testAppQuotas(t, db)
		})
	}
}

// testAppQuotas is TestAppQuotas on the database db.
func testAppQuotas(t *testing.T, db string) {
	a := newRLTenant(t, db, "Acme")
	app := adminJSON(t, "admin", "app", "create", "--org", a.org, "--name", "Acme Two", "--scopes", "svc:vehicles:read", "--database-url", db)
	a2 := rlTenant{org: a.org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}

	t.Run("admin", func(t *testing.T) {
		out := adminJSON(t, "admin", "app", "set-quota", "--client-id", a.clientID, "--rest-per-minute", "1", "--database-url", db)
		assert.Equal(t, map[string]any{"client_id": a.clientID, "rest_per_minute": 1.0}, out)
		out = adminJSON(t, "admin", "app", "set-quota", "--client-id", a2.clientID, "--rest-per-minute", "9", "--database-url", db)
		assert.Equal(t, 9.0, out["rest_per_minute"])
		out = adminJSON(t, "admin", "app", "set-quota", "--client-id", a2.clientID, "--default", "--database-url", db)
		assert.Equal(t, map[string]any{"client_id": a2.clientID, "rest_per_minute": nil}, out)
		for _, args := range [][]string{
			{"--client-id", a.clientID},
			{"--client-id", a.clientID, "--rest-per-minute", "1", "--default"},
			{"--rest-per-minute", "1"},
			{"--client-id", a.clientID, "--rest-per-minute", "-1"},
			{"--client-id", "nope", "--rest-per-minute", "1"},
		} {
			_, err := runCommand(t, nil, append([]string{"admin", "app", "set-quota", "--database-url", db}, args...)...)
			assert.Error(t, err, "%v", args)
		}
	})

	t.Run("served", func(t *testing.T) {
		base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
			"--rate-rest", "10", "--rate-rest-app", "3", "--rate-token", "0"}, env(nil))
		defer func() { require.NoError(t, stop()) }()
		token, token2 := rlToken(t, base, a), rlToken(t, base, a2)

		// a has an override of 1 a minute.
		res := rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"rest";q=10;w=60, "rest-app";q=1;w=60`, res.header.Get("RateLimit-Policy"))
		assertState(t, res, "rest-app", 0, 60)
		res = rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
		// a2's override was removed: it has --rate-rest-app.
		res = rlVehicles(t, base, a.org, token2)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"rest";q=10;w=60, "rest-app";q=3;w=60`, res.header.Get("RateLimit-Policy"))
	})

	// Without --rate-rest-app, apps have no quota of their own, but an
	// override still gives one app its quota.
	t.Run("served without --rate-rest-app", func(t *testing.T) {
		base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
			"--rate-rest", "10", "--rate-token", "0"}, env(nil))
		defer func() { require.NoError(t, stop()) }()
		token, token2 := rlToken(t, base, a), rlToken(t, base, a2)

		res := rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"rest";q=10;w=60, "rest-app";q=1;w=60`, res.header.Get("RateLimit-Policy"))
		assertState(t, res, "rest-app", 0, 60)
		res = rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
		assert.Equal(t, "rate_limited", res.body["error"])
		// a2 has no override: its organization's limit alone, of which a
		// spent one request.
		res = rlVehicles(t, base, a.org, token2)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"rest";q=10;w=60`, res.header.Get("RateLimit-Policy"))
		assertState(t, res, "rest", 8, 12)
	})
}

// With the default flags, an organization whose one integration is one
// app has the organization's whole quota, 1000 a minute: no per-app limit
// halves it.
func TestRateLimitsDefaultOneApp(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
	defer func() { require.NoError(t, stop()) }()
	token := rlToken(t, base, a)
	start := time.Now()
	for i := range 3 {
		res := rlVehicles(t, base, a.org, token)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `"rest";q=1000;w=60`, res.header.Get("RateLimit-Policy"))
		// 999-i left after i+1 requests, plus one regained every 60 ms
		// since the first (1000 a minute) on a slow machine; a halved
		// quota would leave 499-i.
		h := res.header.Get("RateLimit")
		rest, ok := strings.CutPrefix(h, `"rest";r=`)
		require.True(t, ok, "RateLimit %q", h)
		left, _, _ := strings.Cut(rest, ";")
		r, err := strconv.Atoi(left)
		require.NoError(t, err, "RateLimit %q", h)
		regained := int(time.Since(start) / (60 * time.Millisecond))
		assert.GreaterOrEqual(t, r, 999-i, "RateLimit %q", h)
		assert.LessOrEqual(t, r, min(999, 999-i+regained), "RateLimit %q", h)
	}
}

func TestAppQuotasCache(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, dbURL, "Acme")
	db, _, _, err := openAndMigrate(t.Context(), dbURL, 1)
	require.NoError(t, err)
	defer db.Close()

	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	q := &appQuotas{db: db, logger: newLogger(io.Discard), now: clock}
	require.NoError(t, q.load(t.Context()))
	_, ok := q.quota(a.clientID)
	assert.False(t, ok, "no override")

	_, err = db.ExecContext(t.Context(), "INSERT INTO app_quotas (client_id, rest_per_minute) VALUES ($1, 7)", a.clientID)
	require.NoError(t, err)
	mu.Lock()
	now = now.Add(appQuotaTTL - time.Second)
	mu.Unlock()
	_, ok = q.quota(a.clientID)
	assert.False(t, ok, "kept for the TTL")

	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	q.quota(a.clientID) // starts a reading in the background
	require.Eventually(t, func() bool {
		n, ok := q.quota(a.clientID)
		return ok && n == 7
	}, 5*time.Second, 10*time.Millisecond, "read again once the TTL passed")
}
