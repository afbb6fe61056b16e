package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waybillhq/waybill/ratelimit"
)

// benchKeys is how many keys the many-key benchmarks cycle through.
const benchKeys = 10_000

// benchLimit is the SPEC's REST API limit.
var benchLimit = ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute}

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("4f1c2a7e-5b0d-4e8f-9a3c-%012d", i) // organization ids
	}
	return ks
}

// floorLimiter is the floor of the in-process limiter's benchmarks: the
// least a limiter must do, one map lookup and store of a key's next
// allowed time under a mutex, with nothing of GCRA's arithmetic, expiry or
// shards, nor a clock of its own (the benchmarks pass a counter).
type floorLimiter struct {
	mu  sync.Mutex
	tat map[string]int64
}

// allow charges key at the time now and reports whether it had room.
func (f *floorLimiter) allow(key string, now int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := max(f.tat[key], now)
	f.tat[key] = t + 1
	return t-now < 1000
}

// BenchmarkMemoryAllow measures the in-process limiter beside its floor
// (floorLimiter) in the same run, on one key and on many, serial and
// parallel.
func BenchmarkMemoryAllow(b *testing.B) {
	ctx := context.Background()
	b.Run("floor one key", func(b *testing.B) {
		f := &floorLimiter{tat: map[string]int64{}}
		b.ReportAllocs()
		var now int64
		for b.Loop() {
			now++
			_ = f.allow("org-1", now)
		}
	})
	b.Run("floor many keys", func(b *testing.B) {
		f := &floorLimiter{tat: map[string]int64{}}
		ks := keys(benchKeys)
		b.ReportAllocs()
		i, now := 0, int64(0)
		for b.Loop() {
			now++
			_ = f.allow(ks[i], now)
			if i++; i == len(ks) {
				i = 0
			}
		}
	})
	b.Run("floor parallel one key", func(b *testing.B) {
		f := &floorLimiter{tat: map[string]int64{}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var now int64
			for pb.Next() {
				now++
				_ = f.allow("org-1", now)
			}
		})
	})
	b.Run("one key", func(b *testing.B) {
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		b.ReportAllocs()
		for b.Loop() {
			_, _ = m.Allow(ctx, "org-1", benchLimit)
		}
	})
	b.Run("many keys", func(b *testing.B) {
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		ks := keys(benchKeys)
		for _, k := range ks {
			_, _ = m.Allow(ctx, k, benchLimit)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, _ = m.Allow(ctx, ks[i], benchLimit)
			if i++; i == len(ks) {
				i = 0
			}
		}
	})
	b.Run("parallel one key", func(b *testing.B) {
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = m.Allow(ctx, "org-1", benchLimit)
			}
		})
	})
	b.Run("parallel many keys", func(b *testing.B) {
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		ks := keys(benchKeys)
		for _, k := range ks {
			_, _ = m.Allow(ctx, k, benchLimit)
		}
		var worker atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(worker.Add(1)) * 7919 % len(ks)
			for pb.Next() {
				_, _ = m.Allow(ctx, ks[i], benchLimit)
				if i++; i == len(ks) {
					i = 0
				}
			}
		})
	})
}

// BenchmarkMiddlewarePolicies measures the REST middleware over the
// in-process limiter with the organization's limit only and with the
// app's beside it.
func BenchmarkMiddlewarePolicies(b *testing.B) {
	org := func(*http.Request) (string, bool) { return "4f1c2a7e-5b0d-4e8f-9a3c-000000000001", true }
	app := func(*http.Request) (string, bool) { return "4f1c2a7e-5b0d-4e8f-9a3c-000000000001:app-1", true }
	huge := ratelimit.Limit{Name: "rest", Quota: 1 << 40, Window: time.Minute}
	appLimit := ratelimit.Limit{Name: "rest-app", Quota: 1 << 39, Window: time.Minute}
	b.Run("floor: the handler alone", func(b *testing.B) {
		h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		req := httptest.NewRequest(http.MethodGet, "/v1/org/orders", nil)
		w := discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, req)
		}
	})
	for _, tc := range []struct {
		name     string
		policies []ratelimit.Policy
	}{
		{"one policy", nil},
		{"two policies", []ratelimit.Policy{{Limit: appLimit, Key: app}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
				Limiter:  ratelimit.NewMemory(ratelimit.MemoryOptions{}),
				Limit:    huge,
				Key:      org,
				Policies: tc.policies,
			})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			req := httptest.NewRequest(http.MethodGet, "/v1/org/orders", nil)
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps one header map.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w discardWriter) WriteHeader(int)             {}
