package ratelimit

import (
	"context"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/waybillhq/waybill/ratelimit/internal/gcra"
)

// The padding of shard keeps the locks of two shards on separate cache
// lines; it must be updated when the fields change.
func TestShardSize(t *testing.T) {
	t.Parallel()
	if got := unsafe.Sizeof(shard{}); got != 128 {
		t.Fatalf("shard is %d bytes, want 128: adjust its padding", got)
	}
	if got := unsafe.Sizeof(entry{}); got != 64 {
		t.Fatalf("entry is %d bytes, want 64, one cache line", got)
	}
}

// TestTableMatchesModel drives one shard through random decisions, with
// keys going idle and swept away, and checks every decision against GCRA
// on a plain map, and the table's invariants after each step.
func TestTableMatchesModel(t *testing.T) {
	t.Parallel()
	var now time.Duration
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMemory(MemoryOptions{Now: func() time.Time { return origin.Add(now) }, MaxKeys: 1})
	s := &m.shards[0]
	s.limit = 1 << 30 // no eviction: every decision must match the model
	limits := []Limit{
		{Name: "a", Quota: 3, Window: time.Second},
		{Name: "b", Quota: 7, Window: time.Second},
	}
	model := map[[2]string]gcra.Instant{}
	shrank := 0 // decisions after which the shard holds fewer entries
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 50_000 {
		switch rng.IntN(4000) {
		case 0: // everything goes idle
			now += 2 * time.Second
		case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
			now += time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
		}
		l := limits[rng.IntN(len(limits))]
		key := strconv.Itoa(rng.IntN(1000))
		before := s.n
		d, err := m.Allow(context.Background(), key, l)
		if s.n < before {
			shrank++
		}
		if err != nil {
			t.Fatal(err)
		}
		rate := gcra.NewRate(int64(l.Quota), int64(l.Window))
		tat, ok := model[[2]string{l.Name, key}]
		if !ok {
			tat = gcra.Instant{Ns: gcra.Never}
		}
		tat, allowed := rate.Take(tat, int64(now))
		if allowed {
			model[[2]string{l.Name, key}] = tat
		}
		if want := decision(rate, tat, int64(now), allowed); d != want {
			t.Fatalf("step %d: %q under %q: got %+v, want %+v", step, key, l.Name, d, want)
		}
		if step%101 == 0 {
			checkTable(t, s, step)
		}
	}
	checkTable(t, s, -1)
	t.Logf("%d entries in %d slots; shrank %d times", s.n, len(s.table), shrank)
	if shrank < 1000 || len(s.table) < 2*s.n {
		t.Fatalf("table of %d slots holds %d entries; shrank %d times", len(s.table), s.n, shrank)
	}
}

// TestTableEvicts drives a full shard and checks its invariants and bound.
func TestTableEvicts(t *testing.T) {
	t.Parallel()
	var now time.Duration
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMemory(MemoryOptions{Now: func() time.Time { return origin.Add(now) }, MaxKeys: 1})
	s := &m.shards[0]
	s.limit = 50
	l := Limit{Name: "a", Quota: 3, Window: time.Second}
	rng := rand.New(rand.NewPCG(5, 6))
	for step := range 20_000 {
		if rng.IntN(10) == 0 {
			now += time.Duration(rng.Int64N(int64(10 * time.Millisecond)))
		}
		key := strconv.Itoa(rng.IntN(500))
		if _, err := m.Allow(context.Background(), key, l); err != nil {
			t.Fatal(err)
		}
		checkTable(t, s, step)
		if s.n > s.limit {
			t.Fatalf("step %d: %d entries over the limit of %d", step, s.n, s.limit)
		}
		if i := s.find(maphash.String(m.seed, key)|1<<63, l.Name, key); i < 0 {
			t.Fatalf("step %d: the key just decided is not held", step)
		}
	}
}

// checkTable checks that the shard counts its entries right and finds each
// of them from its home slot.
func checkTable(t *testing.T, s *shard, step int) {
	t.Helper()
	n := 0
	for i := range s.table {
		e := &s.table[i]
		if e.hash == 0 {
			continue
		}
		n++
		if got := s.find(e.hash, e.name, e.key); got != i {
			t.Fatalf("step %d: entry %q/%q at slot %d is found at %d", step, e.name, e.key, i, got)
		}
	}
	if n != s.n {
		t.Fatalf("step %d: %d entries, counted %d", step, n, s.n)
	}
}
