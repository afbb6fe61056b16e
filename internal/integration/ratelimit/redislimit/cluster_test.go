package redislimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/redistest"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/ratelimittest"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// On a real Redis Cluster of three masters, the limiter passes the
// conformance suite, whose several charges of one decision name keys of
// different hash slots, and a limit counted under an address and an
// account (keys of two slots) counts a refused request under neither.
func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	client := cluster.Client(t)
	var n atomic.Int64
	prefix := func() string { return "test:" + strconv.FormatInt(n.Add(1), 10) + ":" }

	t.Run("conformance", func(t *testing.T) {
		ratelimittest.TestLimiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
			return redislimit.New(client, redislimit.Options{Prefix: prefix(), Now: now})
		})
	})

	t.Run("keys of two slots", func(t *testing.T) {
		p := prefix()
		addrSlot, err := client.ClusterKeySlot(t.Context(), p+"sign-in:addr:192.0.2.3").Result()
		require.NoError(t, err)
		accountSlot, err := client.ClusterKeySlot(t.Context(), p+"sign-in:account:x").Result()
		require.NoError(t, err)
		require.NotEqual(t, addrSlot, accountSlot, "the test needs keys of two slots")

		byAddr := func(r *http.Request) (string, bool) { return "addr:" + r.Header.Get("X-Addr"), true }
		byAccount := func(r *http.Request) (string, bool) {
			a := r.Header.Get("X-Account")
			return "account:" + a, a != ""
		}
		h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
			Limiter: redislimit.New(client, redislimit.Options{Prefix: p}),
			Limit:   ratelimit.Limit{Name: "sign-in", Quota: 2, Window: time.Hour},
			Key:     byAddr,
			Keys:    []ratelimit.KeyFunc{byAccount},
			OnError: func(_ *http.Request, err error) { t.Errorf("limiter: %v", err) },
		})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		do := func(addr, account string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/auth/v1/token", nil)
			req.Header.Set("X-Addr", addr)
			if account != "" {
				req.Header.Set("X-Account", account)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		require.Equal(t, http.StatusOK, do("192.0.2.1", "x").Code)
		require.Equal(t, http.StatusOK, do("192.0.2.2", "x").Code)
		for range 5 {
			require.Equal(t, http.StatusTooManyRequests, do("192.0.2.3", "x").Code, "x is spent")
		}
		rec := do("192.0.2.3", "")
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, `"sign-in";r=1;t=1800`, rec.Header().Get("RateLimit"), "the address refused five times still had its whole quota")
		// And the other way round: a spent address spends nothing of a
		// fresh account.
		assert.Equal(t, http.StatusOK, do("192.0.2.3", "").Code)
		assert.Equal(t, http.StatusTooManyRequests, do("192.0.2.3", "y").Code)
		assert.Equal(t, http.StatusOK, do("192.0.2.4", "y").Code)
		assert.Equal(t, `"sign-in";r=1;t=1800`, do("192.0.2.5", "").Header().Get("RateLimit"))
	})
}
