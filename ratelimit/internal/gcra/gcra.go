// Package gcra is the exact arithmetic of the generic cell rate algorithm
// shared by the in-process and the Redis limiters of package ratelimit.
//
// A rate of Quota requests per Window has an emission interval of
// Window/Quota nanoseconds, which is rarely a whole number (60 s / 7). So that
// no rounding accumulates, instants carry a fraction: an [Instant] is
// Ns + Frac/Quota nanoseconds. Every operation is integer arithmetic; the one
// product that can exceed 64 bits is done in 128.
//
// The burst tolerance is the whole window: a key whose theoretical arrival
// time (TAT) is in the past may spend Quota requests at once, and then earns
// one back every emission interval.
package gcra

import (
	"math"
	"math/bits"
)

// Never is the TAT of a key with no history: before any instant.
const Never = math.MinInt64

// Rate is Quota requests per Window nanoseconds, with its emission interval
// split into whole nanoseconds and a remainder.
type Rate struct {
	Quota  int64 // requests per window, > 0
	Window int64 // nanoseconds, > 0
	Step   int64 // Window / Quota
	Rem    int64 // Window % Quota: the interval is Step + Rem/Quota ns
}

// NewRate returns the rate of quota requests per window nanoseconds. Both
// must be positive.
func NewRate(quota, window int64) Rate {
	return Rate{Quota: quota, Window: window, Step: window / quota, Rem: window % quota}
}

// Instant is Ns + Frac/Quota nanoseconds, 0 <= Frac < Quota, on the clock of
// the caller (any origin).
type Instant struct {
	Ns   int64
	Frac int64
}

// Idle reports whether t is not after now: a key whose TAT is idle has its
// whole quota and holds no information.
func (t Instant) Idle(now int64) bool {
	return t.Ns < now || t.Ns == now && t.Frac == 0
}

// Take decides one request at now for a key whose TAT is tat (any instant
// before now, such as [Never], for a key with no history). It
// returns the key's TAT after the decision and whether the request conforms;
// a request that does not conform leaves the TAT as it was.
func (r Rate) Take(tat Instant, now int64) (Instant, bool) {
	// Ns < now is the same as Ns + Frac/Quota < now, as Frac/Quota < 1.
	start := tat
	if start.Ns < now {
		start = Instant{Ns: now}
	}
	next := Instant{Ns: start.Ns + r.Step, Frac: start.Frac + r.Rem}
	if next.Frac >= r.Quota {
		next.Frac -= r.Quota
		next.Ns++
	}
	// Conform when next - now <= Window.
	if d := next.Ns - now; d < r.Window || d == r.Window && next.Frac == 0 {
		return next, true
	}
	return tat, false
}

// Remaining returns how many more requests would conform at now, one after
// the other, for a key whose TAT is tat.
func (r Rate) Remaining(tat Instant, now int64) int64 {
	if tat.Ns < now {
		return r.Quota
	}
	slack := now + r.Window - tat.Ns // whole ns of tolerance left
	if slack <= 0 {
		return 0
	}
	// floor((slack*Quota - Frac) / Window): requests of Window/Quota ns each.
	hi, lo := bits.Mul64(uint64(slack), uint64(r.Quota))
	lo, borrow := bits.Sub64(lo, uint64(tat.Frac), 0)
	hi -= borrow
	// The quotient is at most Quota, so hi < Window and Div64 cannot panic.
	q, _ := bits.Div64(hi, lo, uint64(r.Window))
	return int64(q)
}

// Reset returns the nanoseconds, rounded up, from now until a key whose TAT
// is tat has its whole quota back.
func (r Rate) Reset(tat Instant, now int64) int64 {
	return ceilSince(tat, now)
}

// RetryAfter returns the nanoseconds, rounded up, from now until the next
// request of a key whose TAT is tat conforms; 0 when it conforms at now.
func (r Rate) RetryAfter(tat Instant, now int64) int64 {
	if tat.Ns < now {
		return 0
	}
	// The next request conforms once tat + interval - Window <= now.
	next := Instant{Ns: tat.Ns + r.Step - r.Window, Frac: tat.Frac + r.Rem}
	if next.Frac >= r.Quota {
		next.Frac -= r.Quota
		next.Ns++
	}
	return ceilSince(next, now)
}

// Outcome returns the figures of a decision: after Take returned tat and
// allowed at now, how many more requests may pass at once, the nanoseconds
// until the whole quota is back, and those until the next request may pass
// (0 when allowed).
func (r Rate) Outcome(tat Instant, now int64, allowed bool) (remaining, reset, retryAfter int64) {
	reset = r.Reset(tat, now)
	if allowed {
		return r.Remaining(tat, now), reset, 0
	}
	return 0, reset, r.RetryAfter(tat, now)
}

// Rescale returns tat, counted in fractions of quota, as an instant in
// fractions of another quota, rounded up to the next whole nanosecond when
// the fraction cannot be carried over. It keeps a key's history when its
// limit changes.
func Rescale(tat Instant, from, to int64) Instant {
	if from == to || tat.Frac == 0 {
		return tat
	}
	return Instant{Ns: tat.Ns + 1}
}

// ceilSince returns t - now in nanoseconds rounded up, and 0 when t is not
// after now.
func ceilSince(t Instant, now int64) int64 {
	d := t.Ns - now
	if t.Frac > 0 {
		d++
	}
	return max(d, 0)
}
