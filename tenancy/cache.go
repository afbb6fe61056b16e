package tenancy

import (
	"context"
	"sync"
)

// DefaultBranchCacheSize is how many branches CachedBranches keeps when it
// is given no size.
const DefaultBranchCacheSize = 100_000

// CachedBranches returns b with the answers of its Organization kept in
// memory, so that a request to a branch path costs no lookup once the
// branch is known: a branch belongs to one organization for as long as it
// exists (it is created in one and never moves), so a known answer never
// goes stale. Only branches found are kept: an unknown branch is asked of
// b every time, so a branch created later is known at once. At most size
// branches are kept (DefaultBranchCacheSize when size is 0); beyond it an
// arbitrary one is dropped, to be asked again. List is b's, asked every
// time: an organization gains branches.
//
// A host whose branches can move between organizations must not use it.
// The result is safe for concurrent use.
func CachedBranches(b Branches, size int) Branches {
	if size <= 0 {
		size = DefaultBranchCacheSize
	}
	return &cachedBranches{Branches: b, size: size, orgs: map[string]string{}}
}

type cachedBranches struct {
	Branches
	size int

	mu   sync.RWMutex
	orgs map[string]string // the organization of each branch found
}

// Organization returns the organization of the branch, from memory when it
// was found before.
func (c *cachedBranches) Organization(ctx context.Context, branchID string) (string, error) {
	c.mu.RLock()
	org, ok := c.orgs[branchID]
	c.mu.RUnlock()
	if ok {
		return org, nil
	}
	org, err := c.Branches.Organization(ctx, branchID)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.orgs[branchID]; !ok && len(c.orgs) >= c.size {
		for k := range c.orgs { // an arbitrary one: map order
			delete(c.orgs, k)
			break
		}
	}
	c.orgs[branchID] = org
	return org, nil
}
