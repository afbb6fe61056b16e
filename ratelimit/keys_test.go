package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
)

// byAccount keys a request by its X-Account header, the stand-in of a
// sign-in's email in these tests.
func byAccount(r *http.Request) (string, bool) {
	a := r.Header.Get("X-Account")
	return "account:" + a, a != ""
}

// keysHandler limits under one limit by remote address and account, on
// a limiter with a fixed clock.
func keysHandler(t *testing.T, quota int) http.Handler {
	t.Helper()
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }})
	return ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: limiter,
		Limit:   ratelimit.Limit{Name: "token", Quota: quota, Window: time.Minute},
		Keys:    []ratelimit.KeyFunc{byAccount},
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

func keysDo(h http.Handler, remote, account string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/auth/v1/token", nil)
	req.RemoteAddr = remote
	if account != "" {
		req.Header.Set("X-Account", account)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A request is counted under each of its keys, and refused when any is
// over the quota: one account from many addresses, or many accounts from
// one address.
func TestKeysEachLimits(t *testing.T) {
	t.Parallel()
	h := keysHandler(t, 2)
	assert.Equal(t, http.StatusOK, keysDo(h, "192.0.2.1:1", "x").Code)
	assert.Equal(t, http.StatusOK, keysDo(h, "192.0.2.2:1", "x").Code)
	assert.Equal(t, http.StatusTooManyRequests, keysDo(h, "192.0.2.3:1", "x").Code, "the account is spent, from whatever address")

	assert.Equal(t, http.StatusOK, keysDo(h, "192.0.2.9:1", "a").Code)
	assert.Equal(t, http.StatusOK, keysDo(h, "192.0.2.9:1", "b").Code)
	assert.Equal(t, http.StatusTooManyRequests, keysDo(h, "192.0.2.9:1", "c").Code, "the address is spent, whatever the account")
}

// A request refused under one key is counted under none: refusals for a
// spent account do not spend the quota of the address they come from.
func TestKeysRefusedChargesNone(t *testing.T) {
	t.Parallel()
	h := keysHandler(t, 2)
	require.Equal(t, http.StatusOK, keysDo(h, "192.0.2.1:1", "x").Code)
	require.Equal(t, http.StatusOK, keysDo(h, "192.0.2.2:1", "x").Code)
	for range 5 {
		require.Equal(t, http.StatusTooManyRequests, keysDo(h, "192.0.2.3:1", "x").Code)
	}
	// 192.0.2.3 was refused five times for the account, and still has its
	// whole quota.
	rec := keysDo(h, "192.0.2.3:1", "")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, `"token";r=1;t=30`, rec.Header().Get("RateLimit"))
	assert.Equal(t, http.StatusOK, keysDo(h, "192.0.2.3:1", "y").Code)
}

// RateLimit-Policy names the limit once, whichever of its keys a request
// has; RateLimit reports the tightest key; a refusal's Retry-After is the
// longest wait.
func TestKeysHeaders(t *testing.T) {
	t.Parallel()
	h := keysHandler(t, 3)
	const policy = `"token";q=3;w=60`
	rec := keysDo(h, "192.0.2.1:1", "x")
	assert.Equal(t, policy, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"token";r=2;t=20`, rec.Header().Get("RateLimit"))
	rec = keysDo(h, "192.0.2.1:1", "y") // the address's second, y's first
	assert.Equal(t, policy, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"token";r=1;t=40`, rec.Header().Get("RateLimit"), "the address is the tighter")
	rec = keysDo(h, "192.0.2.2:1", "x") // x's second, the address's first
	assert.Equal(t, `"token";r=1;t=40`, rec.Header().Get("RateLimit"), "the account is the tighter")
	rec = keysDo(h, "", "x") // no address: the account alone
	assert.Equal(t, policy, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"token";r=0;t=60`, rec.Header().Get("RateLimit"))
	rec = keysDo(h, "192.0.2.1:1", "x")
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, policy, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, "20", rec.Header().Get("Retry-After"), "x waits 20 s for room")

	// Beside a policy of another limit, each is named once.
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	h = ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter:  limiter,
		Limit:    ratelimit.Limit{Name: "token", Quota: 3, Window: time.Minute},
		Keys:     []ratelimit.KeyFunc{byAccount},
		Policies: []ratelimit.Policy{{Limit: ratelimit.Limit{Name: "all", Quota: 10, Window: time.Minute}, Key: func(*http.Request) (string, bool) { return "all", true }}},
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, account := range []string{"x", ""} {
		rec = keysDo(h, "192.0.2.1:1", account)
		assert.Equal(t, `"token";q=3;w=60, "all";q=10;w=60`, rec.Header().Get("RateLimit-Policy"), "account %q", account)
	}
	rec = keysDo(h, "", "x")
	assert.Equal(t, `"token";q=3;w=60, "all";q=10;w=60`, rec.Header().Get("RateLimit-Policy"), "the account alone")
}

// Keys need a MultiLimiter, as several policies do, and no nil KeyFunc.
func TestKeysPanics(t *testing.T) {
	t.Parallel()
	limit := ratelimit.Limit{Name: "token", Quota: 1, Window: time.Minute}
	assert.PanicsWithValue(t, ratelimit.ErrNotMulti, func() {
		ratelimit.MiddlewareWithOptions(ratelimit.Options{Limiter: singleLimiter{}, Limit: limit, Keys: []ratelimit.KeyFunc{byAccount}})
	})
	assert.Panics(t, func() {
		ratelimit.MiddlewareWithOptions(ratelimit.Options{Limit: limit, Keys: []ratelimit.KeyFunc{nil}})
	})
	// A disabled limit has no keys to count.
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{Limiter: singleLimiter{}, Limit: ratelimit.Limit{Name: "token"}, Keys: []ratelimit.KeyFunc{byAccount}})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	rec := keysDo(h, "192.0.2.1:1", "x")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Header().Get("RateLimit-Policy"))
}

// singleLimiter is a Limiter that is no MultiLimiter.
type singleLimiter struct{}

func (singleLimiter) Allow(_ context.Context, _ string, _ ratelimit.Limit) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true}, nil
}
