package redistest_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waybillhq/waybill/internal/redistest"
)

// A test that needs a Redis Cluster starts one of its own, three masters
// without replicas here, and hands its URL to the code under test; it is
// stopped when the test ends.
func ExampleStartCluster() {
	_ = func(t *testing.T) {
		t.Parallel()
		cluster := redistest.StartCluster(t, 3, 0)
		_ = cluster.URL() // redis+cluster://127.0.0.1:port,...
		client := cluster.Client(t)
		if err := client.Set(t.Context(), "k", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A test of a failover kills the Sentinels' master and waits until they
// name the replica instead.
func ExampleStartSentinel() {
	_ = func(t *testing.T) {
		s := redistest.StartSentinel(t)
		client := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.MasterName, SentinelAddrs: []string{s.Sentinels[0].Addr}})
		defer client.Close()
		s.Master.Kill()
		// ... redistest.WaitFor(timeout, func(ctx) { addr, err := s.MasterAddr(ctx); ... })
	}
}
