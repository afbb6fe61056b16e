// Package redislimit is a ratelimit.Limiter kept in Redis, so that a limit
// holds across every replica that shares the Redis.
//
// Each decision is one atomic Lua script, one round trip (EVALSHA, with EVAL
// when the server has not cached the script yet), running the same exact
// GCRA as ratelimit.Memory; so is each decision of a request under several
// limits at once (AllowAll), which reads and writes all of its keys in the
// one script. A key's state is one string, its theoretical
// arrival time (TAT), which expires when the TAT passes: an idle key takes no
// memory. Time is the Redis server's (TIME inside the script), so replicas
// whose clocks disagree still agree on every limit.
//
// The client is any redis.UniversalClient: one server, a failover client
// of Redis Sentinel (redis.NewFailoverClient), or a Redis Cluster
// (redis.NewClusterClient). On a cluster a decision under one key is as
// atomic as on one server; one under several keys (AllowAll) is when they
// share a hash tag, and is decided slot by slot otherwise (see AllowAll).
//
// The limiter returns Redis errors as errors; the middleware of package
// ratelimit applies its fail-open or fail-closed policy to them. go-redis
// reconnects by itself, so once Redis is back, decisions simply work again,
// with the same client and limiter.
//
// A request waits for its decision, so bound the wait through the client's
// options: DialTimeout, ReadTimeout and WriteTimeout, MaxRetries, and
// DialerRetries (go-redis dials five times, 100 ms apart, by default, which
// adds about half a second to each request while Redis is down). See the
// example of New.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/internal/gcra"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "waybill:rl:"

// MaxWindow and MaxQuota are the longest window and the largest quota the
// limiter takes: the script's numbers are Lua doubles, exact up to 2^53, and
// a key's TAT may lie up to two windows ahead (in nanoseconds), its fraction
// up to two quotas. MaxWindow is about 52 days.
const (
	MaxWindow = time.Duration(1 << 52)
	MaxQuota  = 1 << 52
)

// Options configures a Limiter. The zero value is ready to use.
type Options struct {
	// Prefix starts every key the limiter writes. Empty means
	// DefaultPrefix. The key of a request is Prefix, the limit's name (":"
	// and "%" escaped as %3A and %25), ":", and the request's key.
	Prefix string
	// Now, when set, is the clock: the script is given its reading instead
	// of asking Redis for TIME. It is meant for tests. Keys still expire on
	// Redis's own clock.
	Now func() time.Time
}

// Limiter is a ratelimit.Limiter kept in Redis. It is safe for concurrent
// use. Create it with New.
type Limiter struct {
	client redis.UniversalClient
	script *redis.Script
	multi  *redis.Script
	// dryMulti is multiScript without its writes (see runMulti).
	dryMulti *redis.Script
	prefix   string
	now      func() time.Time
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// New returns a limiter that keeps its state through client, a single
// server, a sentinel-backed failover client or a cluster (each decision
// touches one key).
func New(client redis.UniversalClient, opts Options) *Limiter {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Limiter{client: client, script: redis.NewScript(script), multi: redis.NewScript(multiScript), dryMulti: redis.NewScript(dryMultiScript), prefix: prefix, now: opts.Now}
}

// script is one GCRA decision, the Lua twin of gcra.Rate.Take.
//
// KEYS[1] is the bucket. ARGV holds the emission interval in whole
// nanoseconds and its remainder (of quota-ths of a nanosecond), the quota,
// the window in nanoseconds and, when the caller sets the clock, now in Unix
// seconds and nanoseconds. The stored value is
// "<TAT Unix seconds> <nanoseconds> <remainder> <quota>".
//
// Inside, instants are nanoseconds relative to now, so that every number
// stays an integer below 2^53, which a Lua double holds exactly. The reply is
// {allowed (1 or 0), TAT after the decision relative to now, its remainder}.
const script = `
if redis.replicate_commands then redis.replicate_commands() end
local step = tonumber(ARGV[1])
local rem = tonumber(ARGV[2])
local quota = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local nows, nowns
if ARGV[5] then
  nows, nowns = tonumber(ARGV[5]), tonumber(ARGV[6])
else
  local t = redis.call('TIME')
  nows, nowns = tonumber(t[1]), tonumber(t[2]) * 1000
end
local tat, frac = -1, 0
local v = redis.call('GET', KEYS[1])
if v then
  local s, ns, f, q = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
  if s then
    tat = (tonumber(s) - nows) * 1000000000 + (tonumber(ns) - nowns)
    frac = tonumber(f)
    if tonumber(q) ~= quota and frac > 0 then
      tat, frac = tat + 1, 0
    end
  end
end
local nt, nf = tat, frac
if nt < 0 then nt, nf = 0, 0 end
nt, nf = nt + step, nf + rem
if nf >= quota then nt, nf = nt + 1, nf - quota end
if nt > window or (nt == window and nf > 0) then
  return {0, tat, frac}
end
local at = nowns + nt
local s = nows + math.floor(at / 1000000000)
local ns = at % 1000000000
local ahead = nt
if nf > 0 then ahead = ahead + 1 end
local px = math.floor(ahead / 1000000)
if px * 1000000 < ahead then px = px + 1 end
if px < 1 then px = 1 end
redis.call('SET', KEYS[1], string.format('%.0f %.0f %.0f %.0f', s, ns, nf, quota), 'PX', string.format('%.0f', px))
return {1, nt, nf}
`

// Allow decides one request of key under l in Redis and counts it when it
// passes. It returns the error of a Redis that does not answer.
func (l *Limiter) Allow(ctx context.Context, key string, lim ratelimit.Limit) (ratelimit.Decision, error) {
	if !lim.Enabled() {
		return ratelimit.Decision{Allowed: true}, nil
	}
	if err := lim.Validate(); err != nil {
		return ratelimit.Decision{}, err
	}
	if lim.Window > MaxWindow || int64(lim.Quota) > MaxQuota {
		return ratelimit.Decision{}, fmt.Errorf("redislimit: limit %q: a window over %v or a quota over 2^52 is not supported", lim.Name, MaxWindow)
	}
	rate := gcra.NewRate(int64(lim.Quota), int64(lim.Window))
	args := make([]any, 4, 6)
	args[0], args[1], args[2], args[3] = rate.Step, rate.Rem, rate.Quota, rate.Window
	if l.now != nil {
		now := l.now()
		args = append(args, now.Unix(), now.Nanosecond())
	}
	reply, err := l.script.Run(ctx, l.client, []string{l.key(lim.Name, key)}, args...).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redislimit: %w", err)
	}
	if len(reply) != 3 {
		return ratelimit.Decision{}, errors.New("redislimit: unexpected reply from the script")
	}
	allowed := reply[0] == 1
	remaining, reset, retry := rate.Outcome(gcra.Instant{Ns: reply[1], Frac: reply[2]}, 0, allowed)
	return ratelimit.Decision{
		Allowed:    allowed,
		Remaining:  int(remaining),
		Reset:      time.Duration(reset),
		RetryAfter: time.Duration(retry),
	}, nil
}

var _ ratelimit.MultiLimiter = (*Limiter)(nil)

// multiScript is one GCRA decision under several buckets at once, all or
// nothing: the twin of ratelimit.Memory.AllowAll.
//
// KEYS are the buckets; ARGV holds, for each in turn, its emission interval
// in whole nanoseconds and remainder, its quota and its window, then, when
// the caller sets the clock, now in Unix seconds and nanoseconds. A bucket
// named twice is charged twice, the second charge seeing the first. Every
// bucket is written only when every one conforms. The reply is {all
// conform (1 or 0)} followed, for each bucket, by {conforms, TAT before the
// decision relative to now, its remainder, TAT after, its remainder}.
const multiScript = `
if redis.replicate_commands then redis.replicate_commands() end
local n = #KEYS
local nows, nowns
if ARGV[4 * n + 1] then
  nows, nowns = tonumber(ARGV[4 * n + 1]), tonumber(ARGV[4 * n + 2])
else
  local t = redis.call('TIME')
  nows, nowns = tonumber(t[1]), tonumber(t[2]) * 1000
end
local seen, after, out, all = {}, {}, {0}, 1
for i = 1, n do
  local b = 4 * (i - 1)
  local step, rem = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local quota, window = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local k = KEYS[i]
  local tat, frac, q = -1, 0, quota
  local st = seen[k]
  if st then
    tat, frac, q = st[1], st[2], st[3]
  else
    local v = redis.call('GET', k)
    if v then
      local s, ns, f, vq = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
      if s then
        tat = (tonumber(s) - nows) * 1000000000 + (tonumber(ns) - nowns)
        frac, q = tonumber(f), tonumber(vq)
      end
    end
  end
  if q ~= quota and frac > 0 then
    tat, frac = tat + 1, 0
  end
  local nt, nf = tat, frac
  if nt < 0 then nt, nf = 0, 0 end
  nt, nf = nt + step, nf + rem
  if nf >= quota then nt, nf = nt + 1, nf - quota end
  local ok = 1
  if nt > window or (nt == window and nf > 0) then
    ok, all, nt, nf = 0, 0, tat, frac
  end
  seen[k] = {nt, nf, quota}
  after[i] = {nt, nf, quota}
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = ok, tat, frac, nt, nf
end
out[1] = all
if all == 1 then
  for i = 1, n do
    local nt, nf, quota = after[i][1], after[i][2], after[i][3]
    local at = nowns + nt
    local s = nows + math.floor(at / 1000000000)
    local ns = at % 1000000000
    local ahead = nt
    if nf > 0 then ahead = ahead + 1 end
    local px = math.floor(ahead / 1000000)
    if px * 1000000 < ahead then px = px + 1 end
    if px < 1 then px = 1 end
    redis.call('SET', KEYS[i], string.format('%.0f %.0f %.0f %.0f', s, ns, nf, quota), 'PX', string.format('%.0f', px))
  end
end
return out
`

// dryMultiScript is multiScript deciding without writing anything: its
// writes, under "if all == 1 then", never run.
var dryMultiScript = func() string {
	dry := strings.Replace(multiScript, "\nif all == 1 then\n", "\nif false then\n", 1)
	if dry == multiScript {
		panic("redislimit: multiScript no longer holds the writes dryMultiScript turns off")
	}
	return dry
}()

// AllowAll decides one request under every charge at once in one atomic
// script, one round trip, as ratelimit.MultiLimiter prescribes: counted
// under every charge when each has room, under none when any refuses.
//
// With a Redis Cluster (a *redis.ClusterClient), the decision is atomic
// when the keys of one call hash to one slot: give the request keys a
// common hash tag, e.g. "{org-1}" under one limit and "{org-1}:app-7"
// under the other. Keys of several slots are decided slot by slot, in two
// steps (see runMulti): a refusal still counts under none of them, but a
// request that a concurrent one beats to the last room of a key may stay
// counted under the keys of other slots.
func (l *Limiter) AllowAll(ctx context.Context, charges []ratelimit.Charge, ds []ratelimit.Decision) error {
	if len(ds) < len(charges) {
		return fmt.Errorf("redislimit: %d decisions for %d charges", len(ds), len(charges))
	}
	var (
		rbuf  [4]gcra.Rate
		kbuf  [4]string
		rates = rbuf[:0]
		keys  = kbuf[:0]
		args  = make([]any, 0, 4*len(charges)+2)
	)
	for _, c := range charges {
		lim := c.Limit
		if !lim.Enabled() {
			continue
		}
		if err := lim.Validate(); err != nil {
			return err
		}
		if lim.Window > MaxWindow || int64(lim.Quota) > MaxQuota {
			return fmt.Errorf("redislimit: limit %q: a window over %v or a quota over 2^52 is not supported", lim.Name, MaxWindow)
		}
		rate := gcra.NewRate(int64(lim.Quota), int64(lim.Window))
		rates = append(rates, rate)
		keys = append(keys, l.key(lim.Name, c.Key))
		args = append(args, rate.Step, rate.Rem, rate.Quota, rate.Window)
	}
	if len(keys) == 0 {
		for i := range charges {
			ds[i] = ratelimit.Decision{Allowed: true}
		}
		return nil
	}
	if l.now != nil {
		now := l.now()
		args = append(args, now.Unix(), now.Nanosecond())
	}
	reply, err := l.runMulti(ctx, keys, args)
	if err != nil {
		return err
	}
	all := reply[0] == 1
	j := 0
	for i, c := range charges {
		if !c.Limit.Enabled() {
			ds[i] = ratelimit.Decision{Allowed: all}
			continue
		}
		rate, r := rates[j], reply[1+5*j:1+5*j+5]
		j++
		before := gcra.Instant{Ns: r[1], Frac: r[2]}
		switch {
		case all:
			remaining, reset, _ := rate.Outcome(gcra.Instant{Ns: r[3], Frac: r[4]}, 0, true)
			ds[i] = ratelimit.Decision{Allowed: true, Remaining: int(remaining), Reset: time.Duration(reset)}
		case r[0] == 0:
			_, reset, retry := rate.Outcome(before, 0, false)
			ds[i] = ratelimit.Decision{Reset: time.Duration(reset), RetryAfter: time.Duration(retry)}
		default: // room, but another charge refused: its figures as they are
			ds[i] = ratelimit.Decision{Remaining: int(rate.Remaining(before, 0)), Reset: time.Duration(rate.Reset(before, 0))}
		}
	}
	return nil
}

// runMulti runs multiScript on keys with args (four per key, and the time
// when Options.Now is set) and returns its reply, 1+5*len(keys) numbers.
//
// On a Redis Cluster, whose scripts may touch the keys of one hash slot
// only, keys of several slots are decided in two steps: first the script
// decides each slot's keys without writing (dryMultiScript), and a refusal
// by any ends the decision there, counted under none of the keys; else
// the script charges each slot's keys in turn. Between the two steps
// another request may take the last room of a key, and then this one is
// refused but stays counted under the keys of the slots charged before:
// keys that share a hash tag (one slot) are decided atomically, as on one
// server.
func (l *Limiter) runMulti(ctx context.Context, keys []string, args []any) ([]int64, error) {
	groups := [][]int{nil}
	if _, ok := l.client.(*redis.ClusterClient); ok && len(keys) > 1 {
		groups = slotGroups(keys)
	}
	if len(groups) == 1 {
		reply, err := l.multi.Run(ctx, l.client, keys, args...).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("redislimit: %w", err)
		}
		if len(reply) != 1+5*len(keys) {
			return nil, errors.New("redislimit: unexpected reply from the script")
		}
		return reply, nil
	}
	reply := make([]int64, 1+5*len(keys))
	reply[0] = 1
	for _, script := range []*redis.Script{l.dryMulti, l.multi} {
		for _, g := range groups {
			gkeys := make([]string, len(g))
			gargs := make([]any, 0, 4*len(g)+2)
			for j, i := range g {
				gkeys[j] = keys[i]
				gargs = append(gargs, args[4*i:4*i+4]...)
			}
			gargs = append(gargs, args[4*len(keys):]...) // the time, if any
			r, err := script.Run(ctx, l.client, gkeys, gargs...).Int64Slice()
			if err != nil {
				return nil, fmt.Errorf("redislimit: %w", err)
			}
			if len(r) != 1+5*len(g) {
				return nil, errors.New("redislimit: unexpected reply from the script")
			}
			for j, i := range g {
				copy(reply[1+5*i:1+5*i+5], r[1+5*j:1+5*j+5])
			}
			if r[0] != 1 {
				reply[0] = 0
				return reply, nil
			}
		}
	}
	return reply, nil
}

// slotGroups returns the indexes of keys grouped by Redis Cluster hash
// slot, in the order of each slot's first key.
func slotGroups(keys []string) [][]int {
	var groups [][]int
	bySlot := map[uint16]int{}
	for i, k := range keys {
		s := slot(k)
		g, ok := bySlot[s]
		if !ok {
			g = len(groups)
			bySlot[s] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// slot returns the Redis Cluster hash slot of key: the CRC16 (XMODEM) of
// its hash tag, the part between its first { and the next } when not
// empty, else of the whole key, modulo 16384.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// key returns the Redis key of a request's key under a limit name.
func (l *Limiter) key(name, key string) string {
	if strings.ContainsAny(name, ":%") {
		name = strings.NewReplacer("%", "%25", ":", "%3A").Replace(name)
	}
	return l.prefix + name + ":" + key
}
