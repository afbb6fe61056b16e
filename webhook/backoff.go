package webhook

import (
	"math/rand/v2"
	"time"
)

// The schedule of DefaultBackoff.
const (
	backoffBase   = 5 * time.Second
	backoffFactor = 4
	backoffCap    = 10 * time.Hour
)

// DefaultBackoff returns the delay after the attempt-th failed attempt of a
// delivery (attempt counts from 1): 5 s × 4^(attempt-1), at most 10 h, times
// a random jitter in [0.8, 1.2) so that the retries of many deliveries that
// failed together spread out. Without jitter the delays are 5 s, 20 s,
// 80 s, 5 min 20 s, 21 min 20 s, 1 h 25 min, 5 h 41 min, then 10 h; the
// nine delays between ten attempts add up to about 27 hours, so a
// delivery is tried for about a day before it fails for good.
func DefaultBackoff(attempt int) time.Duration { return ExponentialBackoff(backoffBase)(attempt) }

// DefaultRetryDelay is the delay before the first retry of DefaultBackoff.
const DefaultRetryDelay = backoffBase

// MaxRetryDelay caps every delay of ExponentialBackoff (before jitter).
const MaxRetryDelay = backoffCap

// ExponentialBackoff returns the schedule whose first retry comes first
// after the first failed attempt and each next one 4 times later, capped
// at MaxRetryDelay, each times a random jitter in [0.8, 1.2):
// ExponentialBackoff(DefaultRetryDelay) is DefaultBackoff. A first that is
// not positive is DefaultRetryDelay.
func ExponentialBackoff(first time.Duration) func(attempt int) time.Duration {
	if first <= 0 {
		first = DefaultRetryDelay
	}
	return func(attempt int) time.Duration {
		delay := min(first, backoffCap)
		for i := 1; i < attempt && delay < backoffCap; i++ {
			delay *= backoffFactor
		}
		delay = min(delay, backoffCap)
		return time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
	}
}
