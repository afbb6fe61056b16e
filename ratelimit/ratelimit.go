// Package ratelimit limits how often a key (an organization, an app, a
// remote address) may call an API, and writes the IETF RateLimit headers
// (draft-ietf-httpapi-ratelimit-headers-11) on every response of a limited
// route.
//
// # Limits
//
// A [Limit] is a quota per window, 1000 per minute say, under a name. It
// follows the generic cell rate algorithm (GCRA): a fresh key may spend its
// whole quota at once, then earns it back evenly, one request every
// Window/Quota. The arithmetic is exact, on integer nanoseconds with the
// fraction of the emission interval carried along, so 7 per minute gives the
// k-th request back at exactly k·60/7 s, rounded up to the nanosecond,
// however long a key lives. A Limit with Quota 0 limits nothing.
//
// # Limiters
//
// A [Limiter] decides. [Memory] is the in-process limiter of one replica;
// the subpackage ratelimit/redislimit holds the limits across every replica that
// shares a Redis; both are MultiLimiters; ratelimit/ratelimittest is the conformance suite that both
// pass and that any other implementation can run.
//
// # Middleware
//
// [Middleware] and [MiddlewareWithOptions] put a limit in front of any
// net/http handler. A [KeyFunc] names the key of a request; one that reads
// r.PathValue must run inside the ServeMux, on the handler of the pattern:
//
//	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{})
//	api := ratelimit.Middleware(limiter, ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute}, byOrganization)
//	mux.Handle("GET /v1/{scopeId}/orders", api(orders))
//
// Every response of the limited route carries
//
//	RateLimit-Policy: "api";q=1000;w=60
//	RateLimit: "api";r=998;t=1
//
// where r is how many requests may still pass at once and t the seconds,
// rounded up, until the whole quota is back. A request over the limit is
// answered 429 rate_limited, with Retry-After in whole seconds rounded up, in
// the JSON body of package errors.
//
// # Several policies
//
// A route may be limited under several policies at once, each with its own
// key: an organization's quota and, beside it, each app's within the
// organization ([Options.Policies]). A [MultiLimiter] decides them in one
// atomic step ([Charge], [AllowAll]), so that a request is charged once:
// it passes when every policy has room and is then counted under each; a
// request that any policy refuses is counted under none, so that an app
// spending its own share does not spend its organization's too.
// RateLimit-Policy lists every policy; RateLimit reports the tightest:
//
//	RateLimit-Policy: "rest";q=1000;w=60, "rest-app";q=500;w=60
//	RateLimit: "rest-app";r=12;t=59
//
// One limit may also count a request under several keys at once
// ([Options.Keys]), with the same all-or-nothing decision: a password
// sign-in under its remote address and under the account it names, so
// that a refusal for a spent account does not spend its address's quota.
// [KeyByRemoteAddr] keys an IPv6 address by its /64, which one host owns.
//
// A limiter that fails (Redis is down) lets the request through by default,
// so that an outage of the limiter is not an outage of the API;
// [Options.FailClosed] answers 503 temporarily_unavailable instead. Either
// way [Options.OnError] hears of every failure.
//
// # Requests that cost more
//
// A request may cost more than one: a batch write of 1,000 records, say,
// that counts as 100. A [Gate] is the middleware as a value: its Wrap
// counts each request as one when it comes in, and its ChargeMore lets the
// handler, once it knows the cost, count the rest under the same policies
// and keys, all or nothing; a cost that does not fit is 429 with nothing
// more counted, before the handler writes anything.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/ratelimit/internal/gcra"
)

// Limit is a quota per window, e.g. 1000 per minute. Quota 0 disables
// limiting.
//
// Name identifies the limit in the RateLimit headers and namespaces its keys
// inside a limiter: two limits with different names never share a bucket for
// the same key, and two limits with the same name do (so give each limit its
// own name).
type Limit struct {
	// Name names the limit, e.g. "api". It is sent as the policy name of the
	// RateLimit headers.
	Name string
	// Quota is how many requests a key may make per Window. 0 (or less)
	// disables the limit.
	Quota int
	// Window is the period over which Quota requests are allowed. It must be
	// positive when Quota is; the headers round it up to whole seconds.
	Window time.Duration
}

// Enabled reports whether l limits anything: its Quota is positive.
func (l Limit) Enabled() bool { return l.Quota > 0 }

// Validate returns an error when l has a quota but no positive window.
func (l Limit) Validate() error {
	if l.Quota > 0 && l.Window <= 0 {
		return fmt.Errorf("ratelimit: limit %q: %w", l.Name, ErrInvalidLimit)
	}
	return nil
}

// ErrInvalidLimit is wrapped by the error a limiter returns for a Limit that
// has a positive Quota and no positive Window.
var ErrInvalidLimit = errors.New("quota without a positive window")

// Decision is the answer for one request.
type Decision struct {
	// Allowed reports whether the request may pass.
	Allowed bool
	// Remaining is how many requests may still pass at once after this one
	// (the RateLimit header's r).
	Remaining int
	// Reset is the time until the full quota is back (the RateLimit header's
	// t).
	Reset time.Duration
	// RetryAfter is the time until the next request may pass; 0 when
	// Allowed.
	RetryAfter time.Duration
}

// Limiter decides whether the request of a key under a limit may pass, and
// counts it when it does. Implementations are safe for concurrent use.
//
// A Limit that is not Enabled is always allowed. An error means no decision
// could be made (a backend is down); what to do then is the caller's policy.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit) (Decision, error)
}

// decision turns the GCRA state after one request into a Decision.
func decision(r gcra.Rate, tat gcra.Instant, now int64, allowed bool) Decision {
	remaining, reset, retry := r.Outcome(tat, now, allowed)
	return Decision{Allowed: allowed, Remaining: int(remaining), Reset: time.Duration(reset), RetryAfter: time.Duration(retry)}
}

// Charge is one key under one limit: what a request is counted under when
// it is checked under several limits at once, e.g. its organization under
// "rest" and its app within the organization under "rest-app".
type Charge struct {
	// Key names the bucket within the limit, e.g. an organization id.
	Key string
	// Limit is the quota per window of the key.
	Limit Limit
}

// MultiLimiter is a Limiter that decides a request under several charges
// at once, atomically. Implementations are safe for concurrent use;
// [Memory] and the Redis limiter of ratelimit/redislimit are ones.
type MultiLimiter interface {
	Limiter
	// AllowAll decides one request under every charge and writes the
	// decision of charges[i] to ds[i]; ds must be at least as long as
	// charges. The request is charged once, all or nothing:
	//
	//   - when every charge has room, the request passes and is counted
	//     under every charge: each ds[i] is Allowed, with the figures of its
	//     key after the request, as Allow would give them;
	//   - when any charge is over its limit, the request is refused and
	//     counted under none: every ds[i] is not Allowed; a charge over its
	//     limit has the figures Allow gives a refusal (Remaining 0 and a
	//     positive RetryAfter), a charge with room keeps its key's figures
	//     as they are, uncharged (its Remaining and Reset, RetryAfter 0).
	//
	// Charges whose Limit is not Enabled take no part: they are always
	// Allowed, with zero figures, when the request passes. Two charges with
	// the same limit name and key are one bucket charged twice. An error
	// means no decision and nothing counted.
	AllowAll(ctx context.Context, charges []Charge, ds []Decision) error
}

// ErrNotMulti is returned by AllowAll for more than one charge on a
// Limiter that is not a MultiLimiter.
var ErrNotMulti = errors.New("ratelimit: the limiter cannot decide several charges at once")

// AllowAll decides one request under every charge through l, as
// MultiLimiter.AllowAll does. A Limiter that is not a MultiLimiter
// decides a single charge with Allow, and returns ErrNotMulti for more.
func AllowAll(ctx context.Context, l Limiter, charges []Charge, ds []Decision) error {
	if len(ds) < len(charges) {
		return fmt.Errorf("ratelimit: %d decisions for %d charges", len(ds), len(charges))
	}
	if m, ok := l.(MultiLimiter); ok {
		return m.AllowAll(ctx, charges, ds)
	}
	switch len(charges) {
	case 0:
		return nil
	case 1:
		d, err := l.Allow(ctx, charges[0].Key, charges[0].Limit)
		ds[0] = d
		return err
	}
	return ErrNotMulti
}

// tightest returns the index of the decision of ds that the RateLimit
// header reports: of a refused request, the charge that waits longest for
// room (the largest RetryAfter); of one that passed, the one with the
// fewest requests Remaining, the one whose Reset is furthest on a tie. ds
// is not empty.
func tightest(ds []Decision) int {
	best := 0
	for i := 1; i < len(ds); i++ {
		if tighter(ds[i], ds[best]) {
			best = i
		}
	}
	return best
}

// tighter reports whether a binds more than b.
func tighter(a, b Decision) bool {
	if a.RetryAfter != b.RetryAfter {
		return a.RetryAfter > b.RetryAfter
	}
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.Reset > b.Reset
}
