package tenancy_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/tenancy"
)

// countingBranches is a directory of branches in memory that counts the
// questions it is asked.
type countingBranches struct {
	mu     sync.Mutex
	orgs   map[string]string
	asked  atomic.Int64
	listed atomic.Int64
}

func (b *countingBranches) Organization(_ context.Context, id string) (string, error) {
	b.asked.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	org, ok := b.orgs[id]
	if !ok {
		return "", fmt.Errorf("branch %s: %w", id, tenancy.ErrNoBranch)
	}
	return org, nil
}

func (b *countingBranches) List(_ context.Context, org string) ([]string, error) {
	b.listed.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for id, o := range b.orgs {
		if o == org {
			out = append(out, id)
		}
	}
	return out, nil
}

func (b *countingBranches) add(id, org string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.orgs[id] = org
}

func TestCachedBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := &countingBranches{orgs: map[string]string{"b1": "o1", "b2": "o1", "b3": "o2"}}
	cached := tenancy.CachedBranches(dir, 2)

	for range 3 {
		org, err := cached.Organization(ctx, "b1")
		require.NoError(t, err)
		assert.Equal(t, "o1", org)
	}
	assert.EqualValues(t, 1, dir.asked.Load(), "a branch found is asked once")

	for range 2 {
		_, err := cached.Organization(ctx, "b9")
		require.ErrorIs(t, err, tenancy.ErrNoBranch)
	}
	assert.EqualValues(t, 3, dir.asked.Load(), "an unknown branch is asked every time")
	dir.add("b9", "o2")
	org, err := cached.Organization(ctx, "b9")
	require.NoError(t, err)
	assert.Equal(t, "o2", org, "a branch created later is known at once")

	// The size bounds what is kept: a third branch drops one of the two
	// others, which is asked again.
	_, err = cached.Organization(ctx, "b3")
	require.NoError(t, err)
	before := dir.asked.Load()
	_, err = cached.Organization(ctx, "b3")
	require.NoError(t, err)
	assert.Equal(t, before, dir.asked.Load(), "the branch just kept")
	for _, id := range []string{"b1", "b9"} {
		_, err := cached.Organization(ctx, id)
		require.NoError(t, err)
	}
	assert.GreaterOrEqual(t, dir.asked.Load()-before, int64(1), "at most two of the three are kept")

	// List is asked every time: an organization gains branches.
	for range 2 {
		_, err := cached.List(ctx, "o1")
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, dir.listed.Load())
}

// Concurrent lookups of many branches agree with the directory and stay
// within the bound.
func TestCachedBranchesConcurrent(t *testing.T) {
	t.Parallel()
	dir := &countingBranches{orgs: map[string]string{}}
	for i := range 50 {
		dir.add(fmt.Sprint("b", i), fmt.Sprint("o", i%7))
	}
	cached := tenancy.CachedBranches(dir, 20)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := (i*7 + w) % 50
				org, err := cached.Organization(context.Background(), fmt.Sprint("b", id))
				if err != nil || org != fmt.Sprint("o", id%7) {
					t.Errorf("b%d: %q, %v", id, org, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
