package gcra_test

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit/internal/gcra"
)

// model is GCRA in exact rationals, the reference the integer arithmetic
// must match.
type model struct {
	quota, window *big.Rat
	interval      *big.Rat // window / quota
	tat           *big.Rat // nil: no history
}

func newModel(quota, window int64) *model {
	q, w := big.NewRat(quota, 1), big.NewRat(window, 1)
	return &model{quota: q, window: w, interval: new(big.Rat).Quo(w, q)}
}

// take returns allowed, remaining, reset and retry after, as gcra does.
func (m *model) take(now int64) (bool, int64, int64, int64) {
	n := big.NewRat(now, 1)
	start := n
	if m.tat != nil && m.tat.Cmp(n) > 0 {
		start = m.tat
	}
	next := new(big.Rat).Add(start, m.interval)
	if new(big.Rat).Sub(next, n).Cmp(m.window) <= 0 {
		m.tat = next
		slack := new(big.Rat).Sub(new(big.Rat).Add(n, m.window), next)
		return true, floor(new(big.Rat).Quo(slack, m.interval)), ceil(new(big.Rat).Sub(next, n)), 0
	}
	reset := ceil(new(big.Rat).Sub(m.tat, n))
	retry := new(big.Rat).Sub(new(big.Rat).Add(m.tat, m.interval), m.window)
	return false, 0, reset, ceil(retry.Sub(retry, n))
}

func floor(r *big.Rat) int64 {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	_ = m
	return q.Int64()
}

func ceil(r *big.Rat) int64 {
	if r.Sign() <= 0 {
		return 0
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

func TestRateMatchesRationalModel(t *testing.T) {
	t.Parallel()
	rates := []struct{ quota, window int64 }{
		{1, int64(time.Second)},
		{7, int64(time.Minute)},
		{10, int64(time.Minute)},
		{1000, int64(time.Minute)},
		{3, 10},                         // an interval of 3.33 ns
		{1_000_000, int64(time.Second)}, // 1 µs
		{999_983, int64(time.Hour)},     // a prime quota
		{1 << 40, int64(time.Hour)},     // intervals below a nanosecond
		{5, int64(365 * 24 * time.Hour)},
		{100_000, int64(30 * 24 * time.Hour)}, // quota × window beyond 2^64
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rc := range rates {
		r := gcra.NewRate(rc.quota, rc.window)
		m := newModel(rc.quota, rc.window)
		tat := gcra.Instant{Ns: gcra.Never}
		now := int64(-1 << 40)                       // any origin, negative included
		for i := 0; i < 20_000 && now < 1<<61; i++ { // far from overflow
			// Mostly bursts and short gaps, now and then a long one.
			switch rng.IntN(10) {
			case 0:
				now += rng.Int64N(2 * rc.window)
			case 1, 2, 3:
				now += rng.Int64N(max(rc.window/rc.quota, 1) * 3)
			}
			var allowed bool
			tat, allowed = r.Take(tat, now)
			remaining, reset, retry := r.Outcome(tat, now, allowed)
			wa, wr, wreset, wretry := m.take(now)
			require.Equal(t, []any{wa, wr, wreset, wretry}, []any{allowed, remaining, reset, retry},
				"quota %d window %d request %d at %d", rc.quota, rc.window, i, now)
		}
	}
}

func TestRescale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       gcra.Instant
		from, to int64
		want     gcra.Instant
	}{
		{"same quota", gcra.Instant{Ns: 10, Frac: 3}, 7, 7, gcra.Instant{Ns: 10, Frac: 3}},
		{"whole nanosecond", gcra.Instant{Ns: 10}, 7, 10, gcra.Instant{Ns: 10}},
		{"fraction rounds up", gcra.Instant{Ns: 10, Frac: 3}, 7, 10, gcra.Instant{Ns: 11}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, gcra.Rescale(tc.in, tc.from, tc.to))
		})
	}
}
