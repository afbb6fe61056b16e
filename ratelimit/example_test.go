package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/ratelimit"
)

// A fresh key may spend its whole quota at once, then earns it back, one
// request every Window/Quota.
func ExampleMemory() {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{
		Now: func() time.Time { return now }, // a fixed clock, for the example
	})
	limit := ratelimit.Limit{Name: "api", Quota: 3, Window: time.Minute}

	for range 4 {
		d, _ := limiter.Allow(context.Background(), "org-1", limit)
		fmt.Printf("allowed=%v remaining=%d reset=%v retry-after=%v\n", d.Allowed, d.Remaining, d.Reset, d.RetryAfter)
	}
	now = now.Add(20 * time.Second) // one request earned back
	d, _ := limiter.Allow(context.Background(), "org-1", limit)
	fmt.Printf("allowed=%v remaining=%d reset=%v\n", d.Allowed, d.Remaining, d.Reset)
	// Output:
	// allowed=true remaining=2 reset=20s retry-after=0s
	// allowed=true remaining=1 reset=40s retry-after=0s
	// allowed=true remaining=0 reset=1m0s retry-after=0s
	// allowed=false remaining=0 reset=1m0s retry-after=20s
	// allowed=true remaining=0 reset=1m0s
}

// The middleware counts each request under its key and sets the RateLimit
// headers on every response; over the limit it answers 429.
func ExampleMiddleware() {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }})
	byOrganization := func(r *http.Request) (string, bool) {
		id := r.PathValue("scopeId")
		return id, id != ""
	}
	limit := ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute}

	limited := ratelimit.Middleware(limiter, limit, byOrganization)
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"data":[]}`)
	})

	// Inside the mux, so that the KeyFunc can read r.PathValue.
	mux := http.NewServeMux()
	mux.Handle("GET /v1/{scopeId}/orders", limited(orders))
	server := httptest.NewServer(mux)
	defer server.Close()

	for range 3 {
		resp, err := http.Get(server.URL + "/v1/org-1/orders")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%d RateLimit-Policy: %s RateLimit: %s Retry-After: %q\n", resp.StatusCode,
			resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=1;t=30 Retry-After: ""
	// 200 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=0;t=60 Retry-After: ""
	// 429 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=0;t=60 Retry-After: "30"
}

// A KeyFunc names the key of a request; ok false leaves it unlimited. Here
// it reads a header, and requests without one are not limited.
func ExampleKeyFunc() {
	byApp := ratelimit.KeyFunc(func(r *http.Request) (string, bool) {
		app := r.Header.Get("X-App-Id")
		return app, app != ""
	})
	h := ratelimit.Middleware(ratelimit.NewMemory(ratelimit.MemoryOptions{}),
		ratelimit.Limit{Name: "functions", Quota: 1, Window: time.Minute}, byApp,
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, app := range []string{"app-1", "app-1", "", ""} {
		req := httptest.NewRequest(http.MethodPost, "/functions/v1/oauth-token", nil)
		req.Header.Set("X-App-Id", app)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%q %d\n", app, rec.Code)
	}
	// Output:
	// "app-1" 200
	// "app-1" 429
	// "" 200
	// "" 200
}

// A limiter that fails (a Redis that is down) lets requests through by
// default; FailClosed refuses them with 503 instead.
func ExampleMiddlewareWithOptions() {
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter:    failing{},
		Limit:      ratelimit.Limit{Name: "token", Quota: 30, Window: time.Minute},
		FailClosed: true,
		OnError: func(r *http.Request, err error) {
			fmt.Println("limiter error:", err) // log it, count it
		},
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/auth/v1/oauth/token", nil))
	fmt.Println(rec.Code)
	fmt.Print(rec.Body.String())
	// Output:
	// limiter error: redis is down
	// 503
	// {"error":"temporarily_unavailable","error_description":"the rate limit could not be checked; retry later"}
}

// failing is a Limiter whose backend is down.
type failing struct{}

func (failing) Allow(context.Context, string, ratelimit.Limit) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, fmt.Errorf("redis is down")
}

// An organization's quota and, beside it, each app's within the
// organization: one app spending its share leaves the others served, and
// a refused request is counted under neither policy.
func ExampleOptions_policies() {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	org := func(r *http.Request) (string, bool) { return r.PathValue("org"), true }
	app := func(r *http.Request) (string, bool) {
		return r.PathValue("org") + ":" + r.Header.Get("X-App"), r.Header.Get("X-App") != ""
	}
	mw := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter:  ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }}),
		Limit:    ratelimit.Limit{Name: "rest", Quota: 4, Window: time.Minute},
		Key:      org,
		Policies: []ratelimit.Policy{{Limit: ratelimit.Limit{Name: "rest-app", Quota: 2, Window: time.Minute}, Key: app}},
	})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/{org}/orders", mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))

	for i, a := range []string{"a", "a", "a", "b"} {
		req := httptest.NewRequest(http.MethodGet, "/v1/org-1/orders", nil)
		req.Header.Set("X-App", a)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if i == 0 {
			fmt.Println("RateLimit-Policy:", rec.Header().Get("RateLimit-Policy"))
		}
		fmt.Println(a, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// RateLimit-Policy: "rest";q=4;w=60, "rest-app";q=2;w=60
	// a 200 "rest-app";r=1;t=30
	// a 200 "rest-app";r=0;t=60
	// a 429 "rest-app";r=0;t=60
	// b 200 "rest";r=1;t=45
}

// A batch write of n records counts as ceil(n/10) requests: the gate
// counted the request as one when it came in, and the handler, once it
// knows n, charges the rest before it writes anything.
func ExampleGate_ChargeMore() {
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) // a stopped clock, for the output
	gate := ratelimit.NewGate(ratelimit.Options{
		Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return clock }}),
		Limit:   ratelimit.Limit{Name: "api", Quota: 100, Window: time.Minute},
		Key:     func(*http.Request) (string, bool) { return "org-1", true },
	})
	batch := func(records int) http.Handler {
		return gate.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := gate.ChargeMore(w, r, (records+9)/10-1); err != nil {
				apierrors.Write(w, r, err) // 429: nothing more counted, nothing written
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
	}
	for _, records := range []int{500, 400, 200} {
		rec := httptest.NewRecorder()
		batch(records).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/orders", nil))
		fmt.Println(records, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 500 201 "api";r=50;t=30
	// 400 201 "api";r=10;t=54
	// 200 429 "api";r=9;t=55
}
