package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waybillhq/waybill/ratelimit"
)

// Password sign-ins counted under their remote address and under the
// account they name, in one decision: neither one address trying many
// accounts nor many addresses trying one account gets past the quota, and
// a refusal spends nothing. An IPv6 address counts as its /64.
func ExampleOptions_keys() {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	byAccount := func(r *http.Request) (string, bool) {
		a := r.Header.Get("X-Account") // a sign-in's email, say
		return "account:" + a, a != ""
	}
	signIn := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }}),
		Limit:   ratelimit.Limit{Name: "sign-in", Quota: 2, Window: time.Minute},
		Key:     ratelimit.KeyByRemoteAddr,
		Keys:    []ratelimit.KeyFunc{byAccount},
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	for _, try := range []struct{ addr, account string }{
		{"[2001:db8:1:2::1]:5000", "ann@example.com"},
		{"[2001:db8:1:2::2]:5000", "bob@example.com"}, // the same /64
		{"[2001:db8:1:2::3]:5000", "cid@example.com"}, // the /64 is spent
		{"192.0.2.7:5000", "ann@example.com"},
		{"198.51.100.1:5000", "ann@example.com"}, // ann is spent
	} {
		req := httptest.NewRequest(http.MethodPost, "/auth/v1/token", nil)
		req.RemoteAddr = try.addr
		req.Header.Set("X-Account", try.account)
		rec := httptest.NewRecorder()
		signIn.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "sign-in";q=2;w=60 "sign-in";r=1;t=30
	// 200 "sign-in";q=2;w=60 "sign-in";r=0;t=60
	// 429 "sign-in";q=2;w=60 "sign-in";r=0;t=60
	// 200 "sign-in";q=2;w=60 "sign-in";r=0;t=60
	// 429 "sign-in";q=2;w=60 "sign-in";r=0;t=60
}

// KeyByRemoteAddr keys an IPv6 address by its /64, which one host owns.
func ExampleKeyByRemoteAddr() {
	for _, addr := range []string{"192.0.2.7:443", "[2001:db8:1:2:a:b:c:d]:443", "[::ffff:192.0.2.7]:443"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = addr
		key, _ := ratelimit.KeyByRemoteAddr(req)
		fmt.Println(key)
	}
	// Output:
	// 192.0.2.7
	// 2001:db8:1:2::/64
	// 192.0.2.7
}
