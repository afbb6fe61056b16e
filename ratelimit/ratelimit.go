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
// shares a Redis; ratelimit/ratelimittest is the conformance suite that both
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
// A limiter that fails (Redis is down) lets the request through by default,
// so that an outage of the limiter is not an outage of the API;
// [Options.FailClosed] answers 503 temporarily_unavailable instead. Either
// way [Options.OnError] hears of every failure.
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
