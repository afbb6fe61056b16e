package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/redistest"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// Two replicas on one Redis Cluster of three masters share the limits: the
// sixth request of an organization with a quota of 5, whichever replica it
// reaches, is refused; organizations whose keys live on other masters keep
// their own quotas.
func TestRateLimitsRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	db := testdb.PostgresURL(t)
	tenants := []rlTenant{newRLTenant(t, db, "Acme"), newRLTenant(t, db, "Bolt"), newRLTenant(t, db, "Crane")}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--issuer", "https://waybill.test",
		"--rate-rest", "5", "--rate-rest-app", "5", "--redis-url", cluster.URL()}
	base1, logs1, stop1 := startRun(t, args, env(nil))
	defer func() { require.NoError(t, stop1()) }()
	base2, _, stop2 := startRun(t, args, env(nil))
	defer func() { require.NoError(t, stop2()) }()
	assert.Contains(t, logs1.String(), `"backend":"redis"`)
	assert.Contains(t, logs1.String(), `"redis_url":"redis+cluster://`)

	bases := []string{base1, base2}
	for _, c := range tenants {
		token := rlToken(t, bases[0], c)
		for i := range 5 {
			res := rlVehicles(t, bases[i%2], c.org, token)
			require.Equal(t, http.StatusOK, res.status, "%s request %d: %v", c.org, i+1, res.body)
			assert.NotEmpty(t, res.header.Get("RateLimit"), "decided by the cluster")
		}
		for _, base := range bases {
			res := rlVehicles(t, base, c.org, token)
			require.Equal(t, http.StatusTooManyRequests, res.status, res.body)
			assert.Equal(t, "rate_limited", res.body["error"])
			assert.Equal(t, `"rest";q=5;w=60, "rest-app";q=5;w=60`, res.header.Get("RateLimit-Policy"))
			assert.NotEmpty(t, res.header.Get("Retry-After"))
		}
	}

	// The keys are spread over the masters (three organizations: each
	// master holds some with good odds, not surely), and none is left
	// without its expiry.
	holding := 0
	for _, m := range cluster.Masters {
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		keys, err := c.Keys(t.Context(), redislimit.DefaultPrefix+"*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			ttl, err := c.PTTL(t.Context(), k).Result()
			require.NoError(t, err)
			assert.Positive(t, ttl, k)
		}
		if len(keys) > 0 {
			holding++
		}
		require.NoError(t, c.Close())
	}
	t.Logf("%d of 3 masters hold keys of the limits", holding)
	assert.Positive(t, holding)
}

// A Sentinel's master killed during traffic: the requests that reach the
// limiter while no master answers pass (the limits fail open, each failure
// counted), none is answered 5xx, and once the Sentinels have promoted the
// replica the limiter decides every request again.
func TestRateLimitsRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	haFailover(t, s.URL(), nil, s.Master.Kill, func(ctx context.Context) bool {
		addr, err := s.MasterAddr(ctx)
		return err == nil && addr == s.Replica.Addr
	})
}

// A Redis Cluster's master killed during traffic, the one that holds the
// organization's key: as with Sentinel, requests pass while its slots have
// no master, none is answered 5xx, and once the cluster has promoted its
// replica the limiter decides every request again.
func TestRateLimitsRedisClusterFailover(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 1)
	var victim, heir *redistest.Node
	pick := func(a rlTenant) {
		// The master of the slot of the organization's "rest" key.
		client := cluster.Client(t)
		key := redislimit.DefaultPrefix + limitREST + ":{" + a.org + "}"
		slot, err := client.ClusterKeySlot(t.Context(), key).Result()
		require.NoError(t, err)
		shards, err := client.ClusterShards(t.Context()).Result()
		require.NoError(t, err)
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start <= slot && slot <= r.End {
					for _, n := range sh.Nodes {
						for i, m := range cluster.Masters {
							if n.Role == "master" && m.Addr == n.IP+":"+strconv.FormatInt(n.Port, 10) {
								victim, heir = m, cluster.Replicas[i]
							}
						}
					}
				}
			}
		}
		require.NotNil(t, victim, "the master of slot %d", slot)
	}
	haFailover(t, cluster.URL(), pick, func() { victim.Kill() }, func(ctx context.Context) bool {
		c := redis.NewClient(&redis.Options{Addr: heir.Addr, MaxRetries: -1})
		defer c.Close()
		role, err := c.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	})
}

// haFailover runs a server whose limits are in the Redis of redisURL under
// traffic, calls kill mid-traffic and waits until promoted reports the
// failover done. It checks that every request was answered 200, those that
// Redis did not decide counted as errors, and that the requests after the
// failover were decided by Redis again. before, when not nil, is called
// with the tenant before the traffic starts.
func haFailover(t *testing.T, redisURL string, before func(rlTenant), kill func(), promoted func(context.Context) bool) {
	t.Helper()
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	if before != nil {
		before(a)
	}
	base, logs, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--rate-rest", strconv.Itoa(frQuota), "--rate-token", strconv.Itoa(frQuota), "--rate-rest-app", "0",
		"--redis-url", redisURL}, env(nil))
	defer func() { require.NoError(t, stop()) }()

	res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "basic"))
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.NotEmpty(t, res.header.Get("RateLimit"), "the master decides the first request")
	token := res.body["access_token"].(string)

	tr := frStartTraffic(base, a, token)
	stopped := false
	defer func() {
		if !stopped {
			tr.Stop()
		}
	}()
	require.Eventually(t, tr.decided(frBefore, 5), wait, 10*time.Millisecond, "traffic before the failover")

	tr.phase.Store(int32(frFault))
	killedAt := time.Now()
	kill()
	require.NoError(t, redistest.WaitFor(30*time.Second, func(ctx context.Context) (bool, error) {
		return promoted(ctx), nil
	}), "the replica is promoted")
	promotedAfter := time.Since(killedAt)

	tr.phase.Store(int32(frResumed))
	require.Eventually(t, tr.decided(frResumed, 1), wait, 10*time.Millisecond, "no decision by the new master")
	recovered := time.Since(killedAt)
	tr.phase.Store(int32(frRecovered))
	require.Eventually(t, tr.decided(frRecovered, frAfter), wait, 10*time.Millisecond, "traffic after the failover")
	results := tr.Stop()
	stopped = true

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
			assert.True(t, r.state, "request %d (%s) after the failover was not decided by Redis", i, r.kind)
		}
	}
	metrics := scrape(t, base)
	for _, name := range []string{limitREST, limitToken} {
		assert.Equal(t, float64(failed[name]), metricValue(t, metrics, "waybill_ratelimit_errors_total", map[string]string{"limit": name}),
			"%s: one error per request that Redis did not decide", name)
	}
	assert.Positive(t, failed[limitREST], "the requests whose key the dead master held failed open")
	t.Logf("the replica was promoted %v after the kill; Redis decided both kinds again %v after it",
		promotedAfter.Round(time.Millisecond), recovered.Round(time.Millisecond))
	t.Logf("requests before the kill: %s", frStats(byPhase[frBefore]))
	t.Logf("requests until the promotion: %s; %d rest and %d token failed open in all",
		frStats(byPhase[frFault]), failed[limitREST], failed[limitToken])
	t.Logf("requests after it: %s", frStats(slices.Concat(byPhase[frResumed], byPhase[frRecovered])))
	assert.True(t, hasLog(logLines(t, logs.String()), "rate limits: the limiter failed; requests pass unlimited"), "logs:\n%s", logs)
}
