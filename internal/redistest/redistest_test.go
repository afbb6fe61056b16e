package redistest_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/redistest"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redistest.StartCluster(t, 3, 0)
	t.Logf("cluster ready in %v", time.Since(start))
	require.Len(t, c.Masters, 3)
	assert.Empty(t, c.Replicas)
	client := c.Client(t)
	ctx := t.Context()
	// Keys spread over the three masters.
	for i := range 30 {
		require.NoError(t, client.Set(ctx, "k"+strconv.Itoa(i), i, time.Minute).Err())
	}
	var seen atomic.Int32
	require.NoError(t, client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if n > 0 {
			seen.Add(1)
		}
		return err
	}))
	assert.Equal(t, int32(3), seen.Load())
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := redistest.StartSentinel(t)
	t.Logf("sentinel ready in %v", time.Since(start))
	addr, err := s.MasterAddr(t.Context())
	require.NoError(t, err)
	assert.Equal(t, s.Master.Addr, addr)

	s.Master.Kill()
	start = time.Now()
	require.NoError(t, redistest.WaitFor(30*time.Second, func(ctx context.Context) (bool, error) {
		addr, err := s.MasterAddr(ctx)
		return err == nil && addr == s.Replica.Addr, nil
	}))
	t.Logf("failed over in %v", time.Since(start))
}
