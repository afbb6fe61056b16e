package ratelimittest_test

import (
	"testing"
	"time"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/ratelimittest"
)

// A limiter proves itself from its own tests: a test function hands
// TestLimiter a constructor that returns a new limiter, reading the suite's
// clock, for every subtest. Here the limiter is the in-process Memory.
func ExampleTestLimiter() {
	testMemory := func(t *testing.T) { // func TestMemory(t *testing.T) in a _test.go file
		ratelimittest.TestLimiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
			return ratelimit.NewMemory(ratelimit.MemoryOptions{Now: now})
		})
	}
	_ = testMemory
}
