package webhook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// share divides the free workers: at most half of them, and workers/busy,
// to each organization, the fewest in flight first, the longest waiting
// first among equals, and the last free worker only to an organization
// with nothing in flight.
func TestShare(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	orgs := func(ids ...string) []dueOrg {
		var out []dueOrg
		for i, id := range ids {
			out = append(out, dueOrg{id: id, due: at.Add(time.Duration(i) * time.Second)})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		workers, free int
		orgs          []dueOrg
		running       map[string]int
		want          map[string]int
	}{
		{"one organization takes half", 4, 4, orgs("a"), nil, map[string]int{"a": 2}},
		{"half of 8", 8, 8, orgs("a"), nil, map[string]int{"a": 4}},
		{"two keep one free", 8, 8, orgs("a", "b"), nil, map[string]int{"a": 4, "b": 3}},
		{"the last worker goes to a newcomer", 8, 1, orgs("a", "b", "c"), map[string]int{"a": 4, "b": 3}, map[string]int{"c": 1}},
		{"not to one in flight", 8, 1, orgs("a", "b"), map[string]int{"a": 4, "b": 3}, map[string]int{}},
		{"four share eight", 8, 8, orgs("a", "b", "c", "d"), nil, map[string]int{"a": 2, "b": 2, "c": 2, "d": 1}},
		{"more than the workers", 4, 4, orgs("a", "b", "c", "d", "e"), nil, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}},
		{"the fewest in flight first", 8, 7, orgs("a", "b"), map[string]int{"a": 1}, map[string]int{"a": 3, "b": 3}},
		{"those in flight count as busy", 4, 1, orgs("a"), map[string]int{"x": 3}, map[string]int{"a": 1}},
		{"up to the last free worker", 8, 2, orgs("a", "b"), map[string]int{"a": 4, "b": 2}, map[string]int{"b": 1}},
		{"one worker", 1, 1, orgs("a", "b"), nil, map[string]int{"a": 1}},
		{"nothing due", 8, 8, nil, map[string]int{"a": 2}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, share(tc.workers, tc.free, tc.orgs, tc.running))
		})
	}
}
