// Package ratelimittest is the conformance suite of [ratelimit.Limiter]: an
// implementation proves that it decides exactly as the GCRA of package
// ratelimit prescribes by calling [TestLimiter] from its own tests, as
// testing/slogtest does for slog handlers.
package ratelimittest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
)

// base is the instant a Clock starts at: fixed, UTC, with nanosecond digits.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// Clock is a fake clock for tests, safe for concurrent use. Its zero value
// reads 2026-03-14T15:09:26.535897932Z, its base, and stays there until it
// is moved.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the clock's base plus its offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return base.Add(c.offset)
}

// Set moves the clock to its base plus offset.
func (c *Clock) Set(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// NewLimiter returns a new limiter, with no keys, whose clock is now. The
// limiter must read the time from now and nothing else.
type NewLimiter func(t *testing.T, now func() time.Time) ratelimit.Limiter

// Concurrency of the race test: how many goroutines ask for one key at once,
// and how many times each asks.
const (
	racers     = 32
	raceAsks   = 8
	raceQuota  = 100
	raceRounds = 3
)

// The limits of the suite. Their windows are minutes and hours, so that a
// backend whose keys expire on a real clock keeps them for the whole test.
var (
	perMinute10 = ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute}
	perMinute7  = ratelimit.Limit{Name: "api", Quota: 7, Window: time.Minute}
	token10     = ratelimit.Limit{Name: "token", Quota: 10, Window: time.Minute}
	disabled    = ratelimit.Limit{Name: "off", Quota: 0, Window: time.Minute}
	perDay3     = ratelimit.Limit{Name: "daily", Quota: 3, Window: 24 * time.Hour}
)

// step is one request of a scenario: at offset from base, key under limit,
// and the decision it must get.
type step struct {
	at    time.Duration
	key   string
	limit ratelimit.Limit
	want  ratelimit.Decision
}

// scenario is a sequence of requests to one new limiter.
type scenario struct {
	name  string
	steps []step
}

// TestLimiter runs the conformance suite against the limiters newLimiter
// returns; each subtest gets a new one.
//
// The suite requires exact GCRA: a fresh key may spend its whole quota at
// once; then the k-th request after the burst passes at exactly
// k·Window/Quota, rounded up to the nanosecond, and not a nanosecond
// sooner; Remaining, Reset and RetryAfter are exact to the nanosecond; keys
// and limit names never share a bucket; a Limit with Quota 0 always passes;
// a Limit with a Quota and no Window is an error; and concurrent requests of
// one key admit exactly the quota.
func TestLimiter(t *testing.T, newLimiter NewLimiter) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var clock Clock
			l := newLimiter(t, clock.Now)
			for i, s := range sc.steps {
				clock.Set(s.at)
				got, err := l.Allow(t.Context(), s.key, s.limit)
				require.NoError(t, err, "step %d", i)
				require.Equal(t, s.want, got, "step %d: %q under %q at %v", i, s.key, s.limit.Name, s.at)
			}
		})
	}
	t.Run("invalid limit", func(t *testing.T) {
		t.Parallel()
		var clock Clock
		l := newLimiter(t, clock.Now)
		for _, w := range []time.Duration{0, -time.Second} {
			_, err := l.Allow(t.Context(), "k", ratelimit.Limit{Name: "bad", Quota: 5, Window: w})
			require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, "window %v", w)
		}
	})
	t.Run("concurrent requests of one key", func(t *testing.T) {
		t.Parallel()
		var clock Clock
		l := newLimiter(t, clock.Now)
		limit := ratelimit.Limit{Name: "race", Quota: raceQuota, Window: time.Hour}
		for round := range raceRounds {
			key := fmt.Sprintf("key-%d", round)
			var allowed, refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range racers {
				wg.Go(func() {
					<-start
					for range raceAsks {
						d, err := l.Allow(t.Context(), key, limit)
						if !assert.NoError(t, err) {
							return
						}
						if d.Allowed {
							allowed.Add(1)
						} else {
							refused.Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, int64(raceQuota), allowed.Load(), "round %d: allowed", round)
			assert.Equal(t, int64(racers*raceAsks-raceQuota), refused.Load(), "round %d: refused", round)
		}
	})
	if _, ok := newLimiter(t, (&Clock{}).Now).(ratelimit.MultiLimiter); ok {
		t.Run("several charges", func(t *testing.T) { testMulti(t, newLimiter) })
	}
}

// TestMultiLimiter runs the part of the suite that a MultiLimiter must
// pass besides TestLimiter's (which runs it too for a limiter that is
// one): a request under several charges at once is counted under every
// charge when each has room and under none when any refuses; the
// figures of each charge are exact; concurrent requests admit exactly the
// quota of the tightest charge.
func TestMultiLimiter(t *testing.T, newLimiter NewLimiter) {
	testMulti(t, newLimiter)
}

// The limits of the multi-charge scenarios: an organization's and, within
// it, each app's.
var (
	org10 = ratelimit.Limit{Name: "rest", Quota: 10, Window: time.Minute}
	app5  = ratelimit.Limit{Name: "rest-app", Quota: 5, Window: time.Minute}
)

// mstep is one request of a multi-charge scenario: at offset from base,
// under charges, and the decisions it must get.
type mstep struct {
	at      time.Duration
	charges []ratelimit.Charge
	want    []ratelimit.Decision
}

// orgApp returns the charges of a request of app within org-1.
func orgApp(app string) []ratelimit.Charge {
	return []ratelimit.Charge{{Key: "{org-1}", Limit: org10}, {Key: "{org-1}:" + app, Limit: app5}}
}

// appBurst returns the steps of app spending its whole quota at once, the
// organization having spent spent requests before.
func appBurst(app string, spent int) []mstep {
	steps := make([]mstep, app5.Quota)
	for i := range steps {
		k := i + 1
		steps[i] = mstep{0, orgApp(app), []ratelimit.Decision{
			allowed(org10.Quota-spent-k, time.Duration(spent+k)*6*time.Second),
			allowed(app5.Quota-k, time.Duration(k)*12*time.Second),
		}}
	}
	return steps
}

// multiScenarios returns the exact multi-charge scenarios of the suite.
func multiScenarios() [][]mstep {
	uncharged := func(remaining int, reset time.Duration) ratelimit.Decision {
		return ratelimit.Decision{Remaining: remaining, Reset: reset}
	}
	apps := append(appBurst("a", 0),
		// a is over its share: refused, and the organization not charged.
		mstep{0, orgApp("a"), []ratelimit.Decision{uncharged(5, 30*time.Second), refused(time.Minute, 12*time.Second)}},
		mstep{0, orgApp("a"), []ratelimit.Decision{uncharged(5, 30*time.Second), refused(time.Minute, 12*time.Second)}},
	)
	// b, of the same organization, is served: its share is whole.
	apps = append(apps, appBurst("b", 5)...)
	apps = append(apps,
		// The organization's quota caps the sum: both refuse.
		mstep{0, orgApp("b"), []ratelimit.Decision{refused(time.Minute, 6*time.Second), refused(time.Minute, 12*time.Second)}},
		// c has its whole share, but the organization has none left.
		mstep{0, orgApp("c"), []ratelimit.Decision{refused(time.Minute, 6*time.Second), uncharged(5, 0)}},
		// One request of the organization's comes back after 6 s.
		mstep{6 * time.Second, orgApp("c"), []ratelimit.Decision{allowed(0, time.Minute), allowed(4, 12*time.Second)}},
		mstep{6 * time.Second, orgApp("c"), []ratelimit.Decision{refused(time.Minute, 6*time.Second), uncharged(4, 12*time.Second)}},
	)
	off := ratelimit.Charge{Key: "k", Limit: disabled}
	return [][]mstep{
		apps,
		{ // a disabled charge takes no part
			{0, []ratelimit.Charge{off, {Key: "k", Limit: perDay3}}, []ratelimit.Decision{{Allowed: true}, allowed(2, 8*time.Hour)}},
			{0, []ratelimit.Charge{off}, []ratelimit.Decision{{Allowed: true}}},
			{0, []ratelimit.Charge{}, []ratelimit.Decision{}},
		},
		{ // one bucket named twice is charged twice
			{0, []ratelimit.Charge{{Key: "k", Limit: perDay3}, {Key: "k", Limit: perDay3}}, []ratelimit.Decision{allowed(2, 8*time.Hour), allowed(1, 16*time.Hour)}},
			{0, []ratelimit.Charge{{Key: "k", Limit: perDay3}, {Key: "k", Limit: perDay3}}, []ratelimit.Decision{uncharged(1, 16*time.Hour), refused(24*time.Hour, 8*time.Hour)}},
			{0, []ratelimit.Charge{{Key: "k", Limit: perDay3}}, []ratelimit.Decision{allowed(0, 24*time.Hour)}},
		},
	}
}

// testMulti runs the multi-charge part of the suite.
func testMulti(t *testing.T, newLimiter NewLimiter) {
	for i, sc := range multiScenarios() {
		t.Run(fmt.Sprint("scenario ", i), func(t *testing.T) {
			t.Parallel()
			var clock Clock
			l, ok := newLimiter(t, clock.Now).(ratelimit.MultiLimiter)
			require.True(t, ok, "not a ratelimit.MultiLimiter")
			for j, s := range sc {
				clock.Set(s.at)
				got := make([]ratelimit.Decision, len(s.charges))
				require.NoError(t, l.AllowAll(t.Context(), s.charges, got), "step %d", j)
				require.Equal(t, s.want, got, "step %d at %v", j, s.at)
			}
		})
	}
	t.Run("invalid limit", func(t *testing.T) {
		t.Parallel()
		var clock Clock
		l := newLimiter(t, clock.Now).(ratelimit.MultiLimiter)
		bad := []ratelimit.Charge{{Key: "k", Limit: perMinute10}, {Key: "k", Limit: ratelimit.Limit{Name: "bad", Quota: 5}}}
		require.ErrorIs(t, l.AllowAll(t.Context(), bad, make([]ratelimit.Decision, 2)), ratelimit.ErrInvalidLimit)
		// Nothing was counted.
		got := make([]ratelimit.Decision, 1)
		require.NoError(t, l.AllowAll(t.Context(), bad[:1], got))
		require.Equal(t, allowed(9, 6*time.Second), got[0])
	})
	t.Run("concurrent requests of many apps", func(t *testing.T) {
		t.Parallel()
		var clock Clock
		l := newLimiter(t, clock.Now).(ratelimit.MultiLimiter)
		org := ratelimit.Limit{Name: "org", Quota: raceQuota, Window: time.Hour}
		app := ratelimit.Limit{Name: "app", Quota: raceQuota / 4, Window: time.Hour}
		var allowed, refused atomic.Int64
		perApp := make([]atomic.Int64, 8)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range racers {
			wg.Go(func() {
				<-start
				a := g % len(perApp)
				charges := []ratelimit.Charge{{Key: "{o}", Limit: org}, {Key: fmt.Sprintf("{o}:%d", a), Limit: app}}
				ds := make([]ratelimit.Decision, 2)
				for range raceAsks * 2 {
					if !assert.NoError(t, l.AllowAll(t.Context(), charges, ds)) {
						return
					}
					if ds[0].Allowed {
						allowed.Add(1)
						perApp[a].Add(1)
					} else {
						refused.Add(1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		// 8 apps of 25 could take 200: the organization's 100 caps them.
		assert.Equal(t, int64(raceQuota), allowed.Load(), "allowed")
		assert.Equal(t, int64(racers*raceAsks*2-raceQuota), refused.Load(), "refused")
		for a := range perApp {
			assert.LessOrEqual(t, perApp[a].Load(), int64(app.Quota), "app %d", a)
		}
	})
}

// scenarios returns the exact scenarios of the suite.
func scenarios() []scenario {
	return []scenario{
		{"idle key has its whole quota again", append(append(burst(0, "k", perMinute10),
			step{time.Minute, "k", perMinute10, allowed(9, 6*time.Second)}),
			burst(3*time.Minute, "k", perMinute10)...,
		)},
		{"burst is the quota", append(burst(0, "k", perMinute10),
			step{0, "k", perMinute10, refused(time.Minute, 6*time.Second)},
			step{0, "k", perMinute10, refused(time.Minute, 6*time.Second)},
		)},
		{"capacity returns every window/quota", refill(perMinute10, 25)},
		{"capacity returns every window/quota, fractional", refill(perMinute7, 30)},
		{"partial refill", append(burst(0, "k", perMinute7),
			// 30 s earn 3.5 requests: this one passes and two more may.
			// The TAT is 60 s + 60/7 s from 0, so 38.571428571428... s from now.
			step{30 * time.Second, "k", perMinute7, allowed(2, 38571428572)},
			step{30 * time.Second, "k", perMinute7, allowed(1, 47142857143)},
			step{30 * time.Second, "k", perMinute7, allowed(0, 55714285715)},
			// The next is earned at 60 s + 4·60/7 s - 60 s = 34.285714285... s.
			step{30 * time.Second, "k", perMinute7, refused(55714285715, 4285714286)},
		)},
		{"earned requests add up", append(append(burst(0, "k", perMinute10),
			step{59 * time.Second, "k", perMinute10, allowed(8, 7*time.Second)},
			step{59*time.Second + 1, "k", perMinute10, allowed(7, 13*time.Second-1)}),
			burst(3*time.Minute, "k", perMinute10)...,
		)},
		{"keys never interfere", append(append(burst(0, "a", perMinute10),
			step{0, "a", perMinute10, refused(time.Minute, 6*time.Second)}),
			append(burst(0, "b", perMinute10),
				step{0, "b", perMinute10, refused(time.Minute, 6*time.Second)},
				step{time.Second, "a", perMinute10, refused(59*time.Second, 5*time.Second)},
			)...,
		)},
		{"limit names never interfere", append(append(burst(0, "k", perMinute10),
			step{0, "k", perMinute10, refused(time.Minute, 6*time.Second)}),
			append(burst(0, "k", token10),
				step{0, "k", token10, refused(time.Minute, 6*time.Second)},
			)...,
		)},
		{"quota 0 disables", repeat(50, step{0, "k", disabled, ratelimit.Decision{Allowed: true}})},
		{"long window", append(burst(0, "k", perDay3),
			step{time.Hour, "k", perDay3, refused(23*time.Hour, 7*time.Hour)},
			step{8 * time.Hour, "k", perDay3, allowed(0, 24*time.Hour)},
		)},
	}
}

// burst returns the steps of a fresh key spending its whole quota at once.
func burst(at time.Duration, key string, l ratelimit.Limit) []step {
	steps := make([]step, l.Quota)
	for i := range steps {
		// After i+1 requests the TAT is (i+1)·Window/Quota ahead.
		steps[i] = step{at, key, l, allowed(l.Quota-1-i, time.Duration(ceilDiv(int64(i+1)*int64(l.Window), int64(l.Quota))))}
	}
	return steps
}

// refill returns a burst followed by n requests, each at the instant its
// capacity returns and each preceded by one a nanosecond too soon.
func refill(l ratelimit.Limit, n int) []step {
	steps := burst(0, "k", l)
	w, q := int64(l.Window), int64(l.Quota)
	for k := int64(1); k <= int64(n); k++ {
		at := time.Duration(ceilDiv(k*w, q)) // k·Window/Quota, rounded up
		tat := ceilDiv((q+k-1)*w, q)         // of the quota and k-1 earned requests
		steps = append(steps,
			step{at - 1, "k", l, refused(time.Duration(tat)-(at-1), 1)},
			step{at, "k", l, allowed(0, time.Duration(ceilDiv((q+k)*w, q))-at)},
		)
	}
	return steps
}

// repeat returns n copies of s.
func repeat(n int, s step) []step {
	steps := make([]step, n)
	for i := range steps {
		steps[i] = s
	}
	return steps
}

func allowed(remaining int, reset time.Duration) ratelimit.Decision {
	return ratelimit.Decision{Allowed: true, Remaining: remaining, Reset: reset}
}

func refused(reset, retryAfter time.Duration) ratelimit.Decision {
	return ratelimit.Decision{Reset: reset, RetryAfter: retryAfter}
}

// ceilDiv returns a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
