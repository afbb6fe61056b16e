package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/waybillhq/waybill/ratelimit/internal/gcra"
)

// DefaultMaxKeys is the number of keys a Memory limiter holds when
// MemoryOptions.MaxKeys is 0.
const DefaultMaxKeys = 100_000

const (
	// shardBits is the log2 of the number of shards of a Memory limiter
	// (fewer when MaxKeys is smaller), each with its own lock: 64.
	shardBits = 6
	// sweepSample is how many keys each new key examines, at a cursor that
	// goes round its shard, to drop those that have gone idle. More than one,
	// so that idle keys go faster than new ones come.
	sweepSample = 4
	// evictSample is how many keys a full shard examines to make room for a
	// new one; it drops the one closest to idle.
	evictSample = 5
	// minSlots is the size of a shard's table when its first key comes.
	minSlots = 8
)

// MemoryOptions configures a Memory limiter. The zero value is ready to use.
type MemoryOptions struct {
	// Now is the clock, for tests. Nil means the monotonic clock of
	// time.Now, so that a step of the wall clock changes nothing. Only
	// differences between readings matter.
	Now func() time.Time
	// MaxKeys bounds how many keys the limiter holds, a key counting once
	// for each limit name it is used under. 0 means DefaultMaxKeys. The
	// bound is kept per shard, MaxKeys divided among them.
	//
	// A key whose quota is whole again holds no information: each new key
	// sweeps a few such idle keys away, so the limiter holds about as many
	// keys as are active. When a shard is full of active keys, a new key
	// makes it forget the one of a small sample that is closest to idle,
	// which can only let that key through sooner.
	MaxKeys int
}

// Memory is the in-process GCRA limiter: exact, lock-sharded, and without
// allocation for a key it already holds. Its limits hold within one process;
// for many replicas use the Redis limiter of package ratelimit/redislimit.
//
// A Memory is safe for concurrent use. Create it with NewMemory.
type Memory struct {
	now    func() time.Time // nil: the monotonic clock
	origin time.Time
	seed   maphash.Seed
	shift  uint // a key's shard is the top bits of its hash
	shards []shard
}

// shard is a part of the key space with its own lock: an open-addressing
// hash table with linear probing, of entries held inline, so that a decision
// touches one cache line of the table. It is never more than half full.
type shard struct {
	mu     sync.Mutex
	table  []entry        // len is a power of two, or 0 before the first key
	n      int            // entries in table
	limit  int            // how many entries the shard may hold
	cursor int            // the next slot the idle sweep examines
	_      [128 - 56]byte // keeps the locks of two shards off one cache line pair
}

// entry is the GCRA state of a key under a limit name. Its 64 bytes are one
// cache line.
type entry struct {
	hash      uint64 // the key's hash with the top bit set; 0 marks an empty slot
	name, key string
	tat       gcra.Instant
	quota     int64 // the quota tat's fraction is counted in
}

// NewMemory returns an in-process limiter.
func NewMemory(opts MemoryOptions) *Memory {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	bits := uint(shardBits)
	for 1<<bits > maxKeys {
		bits--
	}
	n := 1 << bits
	m := &Memory{
		now:    opts.Now,
		origin: time.Now(),
		seed:   maphash.MakeSeed(),
		shift:  64 - bits,
		shards: make([]shard, n),
	}
	if m.now != nil {
		m.origin = m.now()
	}
	for i := range m.shards {
		m.shards[i].limit = maxKeys / n
		if i < maxKeys%n {
			m.shards[i].limit++
		}
	}
	return m
}

// Allow decides one request of key under l and counts it when it passes. It
// never fails for a valid Limit; ctx is not used.
func (m *Memory) Allow(_ context.Context, key string, l Limit) (Decision, error) {
	if !l.Enabled() {
		return Decision{Allowed: true}, nil
	}
	if l.Window <= 0 {
		return Decision{}, l.Validate()
	}
	quota := int64(l.Quota)
	rate := gcra.NewRate(quota, int64(l.Window))
	now := m.elapsed()
	raw := maphash.String(m.seed, key)
	s := &m.shards[raw>>m.shift]
	h := raw | 1<<63

	s.mu.Lock()
	tat := gcra.Instant{Ns: gcra.Never}
	i := s.find(h, l.Name, key)
	if i >= 0 {
		e := &s.table[i]
		tat = gcra.Rescale(e.tat, e.quota, quota)
	}
	tat, allowed := rate.Take(tat, now)
	if allowed {
		if i >= 0 {
			e := &s.table[i]
			e.tat, e.quota = tat, quota
		} else {
			s.insert(entry{hash: h, name: l.Name, key: key, tat: tat, quota: quota}, now)
		}
	}
	s.mu.Unlock()
	return decision(rate, tat, now, allowed), nil
}

var _ MultiLimiter = (*Memory)(nil)

// multiInline is how many charges AllowAll decides without allocating.
const multiInline = 4

// pending is the state of one charge inside AllowAll.
type pending struct {
	rate    gcra.Rate
	h       uint64 // the key's hash with the top bit set
	shard   int
	before  gcra.Instant // before the decision
	tat     gcra.Instant // after the decision
	allowed bool
}

// AllowAll decides one request under every charge at once, as
// MultiLimiter.AllowAll prescribes: counted under all of them, or, when any
// refuses, under none. The shards of the charges are locked together, in
// order, so that no other decision sees half of it. It never fails for
// valid limits; ctx is not used.
func (m *Memory) AllowAll(_ context.Context, charges []Charge, ds []Decision) error {
	if len(ds) < len(charges) {
		return fmt.Errorf("ratelimit: %d decisions for %d charges", len(ds), len(charges))
	}
	for _, c := range charges {
		if err := c.Limit.Validate(); err != nil {
			return err
		}
	}
	var buf [multiInline]pending
	ps := buf[:0]
	if len(charges) > multiInline {
		ps = make([]pending, 0, len(charges))
	}
	for _, c := range charges {
		p := pending{allowed: true}
		if c.Limit.Enabled() {
			raw := maphash.String(m.seed, c.Key)
			p.rate = gcra.NewRate(int64(c.Limit.Quota), int64(c.Limit.Window))
			p.h, p.shard = raw|1<<63, int(raw>>m.shift)
		}
		ps = append(ps, p)
	}
	now := m.elapsed()
	m.lockShards(ps, true)
	all := true
	for i, c := range charges {
		p := &ps[i]
		if p.h == 0 {
			continue
		}
		p.before = m.current(ps[:i], charges[:i], p, c)
		p.tat, p.allowed = p.rate.Take(p.before, now)
		all = all && p.allowed
	}
	if all {
		for i, c := range charges {
			p := &ps[i]
			if p.h == 0 {
				continue
			}
			s := &m.shards[p.shard]
			if j := s.find(p.h, c.Limit.Name, c.Key); j >= 0 {
				s.table[j].tat, s.table[j].quota = p.tat, p.rate.Quota
			} else {
				s.insert(entry{hash: p.h, name: c.Limit.Name, key: c.Key, tat: p.tat, quota: p.rate.Quota}, now)
			}
		}
	}
	m.lockShards(ps, false)
	for i := range charges {
		p := &ps[i]
		switch {
		case p.h == 0:
			ds[i] = Decision{Allowed: all}
		case all || !p.allowed:
			ds[i] = decision(p.rate, p.tat, now, all)
		default: // room, but another charge refused: its figures as they are
			ds[i] = Decision{
				Remaining: int(p.rate.Remaining(p.before, now)),
				Reset:     time.Duration(p.rate.Reset(p.before, now)),
			}
		}
	}
	return nil
}

// current returns the TAT of charge c, p, before this request: that of an
// earlier charge of the same request on the same bucket (prev, before),
// else the stored one, rescaled to c's quota. Its shard is locked.
func (m *Memory) current(prev []pending, before []Charge, p *pending, c Charge) gcra.Instant {
	for j := len(prev) - 1; j >= 0; j-- {
		if prev[j].h == p.h && before[j].Key == c.Key && before[j].Limit.Name == c.Limit.Name {
			return gcra.Rescale(prev[j].tat, prev[j].rate.Quota, p.rate.Quota)
		}
	}
	s := &m.shards[p.shard]
	if i := s.find(p.h, c.Limit.Name, c.Key); i >= 0 {
		return gcra.Rescale(s.table[i].tat, s.table[i].quota, p.rate.Quota)
	}
	return gcra.Instant{Ns: gcra.Never}
}

// lockShards locks (or unlocks) the distinct shards of the enabled charges
// ps, in ascending order, so that two AllowAll calls never deadlock.
func (m *Memory) lockShards(ps []pending, lock bool) {
	last := -1
	for {
		next := -1
		for i := range ps {
			if ps[i].h != 0 && ps[i].shard > last && (next < 0 || ps[i].shard < next) {
				next = ps[i].shard
			}
		}
		if next < 0 {
			return
		}
		if lock {
			m.shards[next].mu.Lock()
		} else {
			m.shards[next].mu.Unlock()
		}
		last = next
	}
}

// elapsed returns the nanoseconds since the limiter was made. time.Since
// reads only the monotonic clock, at half the cost of time.Now.
func (m *Memory) elapsed() int64 {
	if m.now == nil {
		return int64(time.Since(m.origin))
	}
	return int64(m.now().Sub(m.origin))
}

// Len returns how many keys the limiter holds, over every limit name.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.n
		s.mu.Unlock()
	}
	return n
}

// find returns the slot of the entry of key under name, or -1.
func (s *shard) find(h uint64, name, key string) int {
	if s.n == 0 {
		return -1
	}
	mask := len(s.table) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := &s.table[i]
		if e.hash == 0 {
			return -1
		}
		if e.hash == h && e.name == name && e.key == key {
			return i
		}
	}
}

// insert adds e, which is not in the table. It first drops idle entries it
// comes across and, when the shard is still full, makes room.
func (s *shard) insert(e entry, now int64) {
	s.sweep(now)
	for s.n >= s.limit && s.n > 0 {
		s.evict(now)
	}
	if (s.n+1)*2 > len(s.table) {
		s.grow()
	}
	// Clone the key so that the table does not keep a request's memory
	// alive.
	e.key = strings.Clone(e.key)
	s.place(e)
	s.n++
}

// place puts e in the first free slot of its probe sequence.
func (s *shard) place(e entry) {
	mask := len(s.table) - 1
	i := int(e.hash) & mask
	for s.table[i].hash != 0 {
		i = (i + 1) & mask
	}
	s.table[i] = e
}

// grow doubles the table.
func (s *shard) grow() {
	old := s.table
	s.table = make([]entry, max(2*len(old), minSlots))
	for i := range old {
		if old[i].hash != 0 {
			s.place(old[i])
		}
	}
	s.cursor = 0
}

// sweep examines up to sweepSample entries from the cursor and drops those
// that are idle: their quota is whole again, as it is for a key never seen.
func (s *shard) sweep(now int64) {
	examined := 0
	for steps := 0; steps < 4*sweepSample && examined < sweepSample && s.n > 0; steps++ {
		s.cursor &= len(s.table) - 1
		e := &s.table[s.cursor]
		if e.hash == 0 {
			s.cursor++
			continue
		}
		examined++
		if e.tat.Idle(now) {
			s.remove(s.cursor) // a later entry may move here: examine it next
		} else {
			s.cursor++
		}
	}
}

// evict drops one entry: an idle one if a sample of evictSample entries
// from the cursor holds one, else the one of the sample whose TAT comes
// first. The shard holds at least one entry.
func (s *shard) evict(now int64) {
	victim := -1
	for examined := 0; examined < evictSample && examined < s.n; s.cursor++ {
		s.cursor &= len(s.table) - 1
		e := &s.table[s.cursor]
		if e.hash == 0 {
			continue
		}
		examined++
		if e.tat.Idle(now) {
			s.remove(s.cursor)
			return
		}
		if victim < 0 || e.tat.Ns < s.table[victim].tat.Ns {
			victim = s.cursor
		}
	}
	s.remove(victim)
}

// remove empties slot i and moves later entries of the probe run back, so
// that every entry stays reachable from its home slot (deletion without
// tombstones, for linear probing).
func (s *shard) remove(i int) {
	mask := len(s.table) - 1
	s.n--
	for {
		s.table[i] = entry{} // let the strings go
		j := i
		for {
			j = (j + 1) & mask
			if s.table[j].hash == 0 {
				return
			}
			// The entry at j may move to i unless its home slot lies
			// cyclically in (i, j].
			home := int(s.table[j].hash) & mask
			if i <= j && i < home && home <= j || i > j && (i < home || home <= j) {
				continue
			}
			s.table[i] = s.table[j]
			i = j
			break
		}
	}
}
