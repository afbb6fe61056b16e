package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/ratelimittest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	ratelimittest.TestLimiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
		return ratelimit.NewMemory(ratelimit.MemoryOptions{Now: now})
	})
}

func TestMemoryMaxKeys(t *testing.T) {
	t.Parallel()
	limit := ratelimit.Limit{Name: "api", Quota: 5, Window: time.Hour}
	for _, maxKeys := range []int{1, 3, 10, 64, 100, 1000} {
		t.Run(fmt.Sprint(maxKeys), func(t *testing.T) {
			t.Parallel()
			var clock ratelimittest.Clock
			m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now, MaxKeys: maxKeys})
			// Every key stays active: the clock does not move.
			for i := range 20 * maxKeys {
				d, err := m.Allow(t.Context(), fmt.Sprintf("key-%d", i), limit)
				require.NoError(t, err)
				require.True(t, d.Allowed, "a new key passes")
				require.LessOrEqual(t, m.Len(), maxKeys, "after %d keys", i+1)
			}
			assert.Positive(t, m.Len())
		})
	}
}

func TestMemoryDefaultMaxKeys(t *testing.T) {
	t.Parallel()
	var clock ratelimittest.Clock
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
	limit := ratelimit.Limit{Name: "api", Quota: 1, Window: time.Hour}
	for i := range ratelimit.DefaultMaxKeys + 5000 {
		_, err := m.Allow(t.Context(), fmt.Sprint(i), limit)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, m.Len(), ratelimit.DefaultMaxKeys)
	assert.Greater(t, m.Len(), ratelimit.DefaultMaxKeys*9/10, "shards fill evenly")
}

func TestMemoryEvictsIdleKeys(t *testing.T) {
	t.Parallel()
	const oldKeys, newKeys = 1000, 3000
	limit := ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute}
	var clock ratelimittest.Clock
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
	for i := range oldKeys {
		_, err := m.Allow(t.Context(), fmt.Sprintf("old-%d", i), limit)
		require.NoError(t, err)
	}
	require.Equal(t, oldKeys, m.Len())

	// Six seconds later every old key has its whole quota back: it holds no
	// information, and new keys sweep it away as they come.
	clock.Advance(6 * time.Second)
	for i := range newKeys {
		d, err := m.Allow(t.Context(), fmt.Sprintf("new-%d", i), limit)
		require.NoError(t, err)
		require.Equal(t, limit.Quota-1, d.Remaining)
	}
	assert.Equal(t, newKeys, m.Len(), "only the new keys are left")

	// A dropped key is as fresh as it would have been.
	d, err := m.Allow(t.Context(), "old-0", limit)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Decision{Allowed: true, Remaining: 9, Reset: 6 * time.Second}, d)
}

func TestMemoryEvictsTheIdleKeyFirst(t *testing.T) {
	t.Parallel()
	limit := ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute}
	var clock ratelimittest.Clock
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now, MaxKeys: 1})
	for range 2 {
		_, err := m.Allow(t.Context(), "a", limit)
		require.NoError(t, err)
	}
	d, err := m.Allow(t.Context(), "a", limit)
	require.NoError(t, err)
	require.False(t, d.Allowed)

	// With room for one key, b makes the limiter forget a, which can only
	// let a through sooner.
	_, err = m.Allow(t.Context(), "b", limit)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Len())
	d, err = m.Allow(t.Context(), "a", limit)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

func TestMemoryClock(t *testing.T) {
	t.Parallel()
	limit := ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute}
	t.Run("before the limiter was made", func(t *testing.T) {
		t.Parallel()
		var clock ratelimittest.Clock
		clock.Set(time.Hour)
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
		clock.Set(0) // an hour earlier than the limiter's origin
		for i := range 2 {
			d, err := m.Allow(t.Context(), "k", limit)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "request %d", i)
		}
		d, err := m.Allow(t.Context(), "k", limit)
		require.NoError(t, err)
		assert.Equal(t, ratelimit.Decision{Reset: time.Minute, RetryAfter: 30 * time.Second}, d)
	})
	t.Run("the real clock", func(t *testing.T) {
		t.Parallel()
		m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
		d, err := m.Allow(t.Context(), "k", limit)
		require.NoError(t, err)
		assert.Equal(t, ratelimit.Decision{Allowed: true, Remaining: 1, Reset: 30 * time.Second}, d)
	})
}

func TestMemoryQuotaChange(t *testing.T) {
	t.Parallel()
	var clock ratelimittest.Clock
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
	seven := ratelimit.Limit{Name: "api", Quota: 7, Window: time.Minute}
	_, err := m.Allow(t.Context(), "k", seven)
	require.NoError(t, err)
	// The key's TAT, 60/7 s = 8.571428571428... s ahead, is kept, rounded
	// up to the nanosecond, when the limit is reconfigured to 10 per minute.
	ten := ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute}
	d, err := m.Allow(t.Context(), "k", ten)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Decision{Allowed: true, Remaining: 7, Reset: 14571428572}, d)
}
