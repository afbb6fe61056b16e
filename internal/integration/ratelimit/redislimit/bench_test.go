package redislimit_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// BenchmarkRedis compares a decision with its floor, a bare PING round trip
// to the same Redis on the same client.
func BenchmarkRedis(b *testing.B) {
	client, prefix := newClient(b)
	ctx := context.Background()
	l := redislimit.New(client, redislimit.Options{Prefix: prefix})
	limit := ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute}
	if err := client.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	if _, err := l.Allow(ctx, "warm-up", limit); err != nil { // loads the script
		b.Fatal(err)
	}

	b.Run("ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("allow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Allow(ctx, "org-1", limit); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Both, one after the other, so that a load that comes and goes on the
	// machine weighs on both alike: the metric x-ping is the ratio.
	b.Run("allow vs ping", func(b *testing.B) {
		var ping, allow time.Duration
		for b.Loop() {
			start := time.Now()
			if err := client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if _, err := l.Allow(ctx, "org-2", limit); err != nil {
				b.Fatal(err)
			}
			ping, allow = ping+mid.Sub(start), allow+time.Since(mid)
		}
		b.ReportMetric(float64(ping.Nanoseconds())/float64(b.N), "ping-ns/op")
		b.ReportMetric(float64(allow.Nanoseconds())/float64(b.N), "allow-ns/op")
		b.ReportMetric(float64(allow)/float64(ping), "x-ping")
	})
	// An organization's limit and its app's, in one script.
	b.Run("allow all, two charges", func(b *testing.B) {
		app := ratelimit.Limit{Name: "api-app", Quota: 500, Window: time.Minute}
		charges := []ratelimit.Charge{{Key: "{org-3}", Limit: limit}, {Key: "{org-3}:app-1", Limit: app}}
		ds := make([]ratelimit.Decision, 2)
		b.ReportAllocs()
		for b.Loop() {
			if err := l.AllowAll(ctx, charges, ds); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel ping", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := client.Ping(ctx).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("parallel allow", func(b *testing.B) {
		var worker atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := "org-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				if _, err := l.Allow(ctx, key, limit); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
