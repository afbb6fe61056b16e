package redislimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// A limit counted under several keys (ratelimit.Options.Keys) on Redis: a
// request refused under one key is counted under none, so refusals for a
// spent account leave the quota of the address they come from whole, as
// with the in-process limiter.
func TestKeysRefusedChargesNone(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)

	byAccount := func(r *http.Request) (string, bool) {
		a := r.Header.Get("X-Account")
		return "account:" + a, a != ""
	}
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: redislimit.New(client, redislimit.Options{Prefix: prefix}),
		Limit:   ratelimit.Limit{Name: "sign-in", Quota: 2, Window: time.Hour},
		Keys:    []ratelimit.KeyFunc{byAccount},
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	do := func(remote, account string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/auth/v1/token", nil)
		req.RemoteAddr = remote
		if account != "" {
			req.Header.Set("X-Account", account)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	require.Equal(t, http.StatusOK, do("192.0.2.1:1", "x").Code)
	require.Equal(t, http.StatusOK, do("192.0.2.2:1", "x").Code)
	for range 5 {
		rec := do("192.0.2.3:1", "x")
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "x is spent")
		assert.Equal(t, `"sign-in";q=2;w=3600`, rec.Header().Get("RateLimit-Policy"), "the limit named once")
	}
	rec := do("192.0.2.3:1", "")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, `"sign-in";r=1;t=1800`, rec.Header().Get("RateLimit"), "the address refused five times still had its whole quota")
	assert.Equal(t, http.StatusOK, do("[2001:db8:1:2::1]:1", "y").Code)
	assert.Equal(t, http.StatusOK, do("[2001:db8:1:2::2]:1", "z").Code)
	assert.Equal(t, http.StatusTooManyRequests, do("[2001:db8:1:2::3]:1", "w").Code, "one /64 is one address")
}
