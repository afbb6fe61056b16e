package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// Every replica limits through the same Redis. The client's timeouts bound
// how long a request waits for its decision when Redis is slow or down;
// the middleware then lets the request through and reports the error.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{
		Addr:          "localhost:6379",
		DialTimeout:   250 * time.Millisecond,
		ReadTimeout:   250 * time.Millisecond,
		WriteTimeout:  250 * time.Millisecond,
		MaxRetries:    1,
		DialerRetries: 1,
	})
	defer client.Close()

	limiter := redislimit.New(client, redislimit.Options{})
	api := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: limiter,
		Limit:   ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute},
		Key: func(r *http.Request) (string, bool) {
			org := r.PathValue("scopeId")
			return org, org != ""
		},
		OnError: func(r *http.Request, err error) {
			slog.WarnContext(r.Context(), "rate limiter unavailable", "error", err)
		},
	})

	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/{scopeId}/orders", api(orders))
	_ = mux // http.ListenAndServe(":8080", mux)
}

// While Redis is down, each decision fails: the middleware reports the
// error and, failing open by default, lets the request through. Here the
// client's dialer stands for a Redis that cannot be reached.
func ExampleNew_outage() {
	errDown := errors.New("redis is down")
	client := redis.NewClient(&redis.Options{
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errDown
		},
		MaxRetries:    -1, // no retries
		DialerRetries: 1,
	})
	defer client.Close()

	api := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: redislimit.New(client, redislimit.Options{}),
		Limit:   ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute},
		Key: func(r *http.Request) (string, bool) {
			org := r.PathValue("scopeId")
			return org, org != ""
		},
		OnError: func(r *http.Request, err error) {
			fmt.Println("limiter failed:", errors.Is(err, errDown))
		},
	})
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "orders")
	})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/{scopeId}/orders", api(orders))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/org-1/orders", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// limiter failed: true
	// 200 orders
}
