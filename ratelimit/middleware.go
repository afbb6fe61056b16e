package ratelimit

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// KeyFunc names the key a request is counted under: an organization, an
// app, a remote address. ok false means "do not limit this request": it
// passes without being counted and without RateLimit headers.
type KeyFunc func(r *http.Request) (key string, ok bool)

// KeyByRemoteAddr is the default KeyFunc: the host of r.RemoteAddr,
// without the port, grouped as one host owns addresses. An IPv4 address is
// its own key ("192.0.2.7"; an IPv4-mapped IPv6 address is keyed as its
// IPv4 address); an IPv6 address is keyed by its /64 network
// ("2001:db8:1:2::/64"), without a zone. One host commonly gets a whole
// /64 (SLAAC, privacy addresses, a /64 per customer), so that counting
// each IPv6 address would give it 2^64 quotas: it could pass any limit by
// stepping through its own addresses. A host that is not an IP address is
// used as it is. A request without a remote address (a Unix socket) is not
// limited. Behind a reverse proxy every request has the proxy's address;
// name the client some other way there.
func KeyByRemoteAddr(r *http.Request) (key string, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr // no port
	}
	if host == "" {
		return "", false
	}
	return addrGroup(host), true
}

// addrGroup returns what KeyByRemoteAddr counts the remote address host
// under: an IPv4 address as it is (an IPv4-mapped IPv6 address as its IPv4
// address), an IPv6 address as its /64 network. Anything else is left as
// it is.
func addrGroup(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return host
	}
	return p.String()
}

// Policy is one limit of a route and what each request is counted under
// in it, for routes limited under several at once (see
// Options.Policies).
type Policy struct {
	// Limit is the quota per window; its Name is the policy's name in the
	// RateLimit headers.
	Limit Limit
	// Key names the key of a request under Limit; ok false leaves this
	// policy out of the request's decision and headers. Nil means
	// KeyByRemoteAddr.
	Key KeyFunc
	// Quota, when set, may give a request's key a quota of its own (an
	// override stored for one app, say): ok true replaces Limit.Quota for
	// this request, 0 exempting it from the policy. With Quota set the
	// policy stays even when Limit.Quota is 0, so Limit.Window must be
	// positive. It runs on every request, so it must not wait for a
	// database: cache.
	Quota func(r *http.Request, key string) (quota int, ok bool)
}

// Options configures MiddlewareWithOptions. The zero value limits nothing;
// a Limit with a Quota is enough to limit by remote address in process.
type Options struct {
	// Limiter decides. Nil means a Memory limiter of the middleware's own
	// (NewMemory with zero MemoryOptions). With more than one policy it
	// must be a MultiLimiter.
	Limiter Limiter
	// Limit is the quota per window of each key. A Quota of 0 disables it;
	// with no Policies either, every request passes and no header is set.
	Limit Limit
	// Key names the key of a request under Limit. Nil means
	// KeyByRemoteAddr.
	Key KeyFunc
	// Keys are further keys of a request under Limit itself: the request
	// is counted under Limit once for each key that Key and Keys name (ok
	// true), in one decision of the Limiter (MultiLimiter.AllowAll), as
	// Policies are. It passes only when every key has room, and is then
	// counted under each; refused under any, it is counted under none, so
	// that a request refused for one key spends nothing of another's
	// quota. RateLimit-Policy names Limit once; RateLimit reports the
	// tightest key. Password sign-ins, say, are counted under their remote
	// address and under the account they name (see KeyByRemoteAddr), so
	// that one address cannot try many accounts, nor many addresses one
	// account, faster than the quota. On a Redis Cluster the decision is
	// atomic when the keys of one request share a hash tag; keys of
	// several slots are decided slot by slot (see ratelimit/redislimit).
	Keys []KeyFunc
	// Policies are further limits of the route, checked together with
	// Limit in one decision of the Limiter (MultiLimiter.AllowAll): a
	// request passes only when every policy has room, and is then counted
	// under each; refused by any, it is counted under none. Each response
	// lists every policy in RateLimit-Policy and reports the tightest in
	// RateLimit. Policies whose Limit is not Enabled and that have no
	// Quota func are left out.
	Policies []Policy
	// FailClosed is the policy for a Limiter that fails (Redis is down).
	// False, the default, fails open: the request passes, without a
	// RateLimit header. True answers 503 temporarily_unavailable with
	// Retry-After: 1.
	FailClosed bool
	// OnError is called with every error of the Limiter, so that the host
	// logs it and counts it; not when the client left meanwhile (the
	// request's context is done), which ends the request unanswered. Nil means a warning on Logger with the
	// limit's name, the method and path, and the error: never the key or
	// the query string.
	OnError func(r *http.Request, err error)
	// Logger receives the default OnError's warnings and the 503s of a
	// failed limiter with FailClosed; nil means slog.Default.
	Logger *slog.Logger
}

// Middleware limits each key that key names, as MiddlewareWithOptions does
// with l, limit and key and the default policy (fail open, errors logged
// to slog.Default). Use MiddlewareWithOptions to give it a Logger.
func Middleware(l Limiter, limit Limit, key KeyFunc) func(http.Handler) http.Handler {
	return MiddlewareWithOptions(Options{Limiter: l, Limit: limit, Key: key})
}

// policy is a Policy of a middleware, with its headers.
type policy struct {
	Policy
	hdr headers
	// group is the index of the first policy of the same limit: that of
	// Options.Limit for the policies of Options.Keys, the policy's own
	// otherwise. RateLimit-Policy names each group once.
	group int
}

// MiddlewareWithOptions returns middleware that counts each request under
// its key and the limit (and the keys of opts.Policies under theirs), and
// answers one over a limit with 429 rate_limited and a Retry-After header
// in whole seconds, rounded up: the longest wait of the policies that
// refused it.
//
// Every response of the limited route carries the RateLimit-Policy and
// RateLimit headers of draft-ietf-httpapi-ratelimit-headers-11 (see
// SetHeaders), set before the next handler runs: RateLimit-Policy lists
// every policy the request was counted under, RateLimit reports the
// tightest of them (the one that refused the request, or the one with the
// fewest requests remaining). A request let through because the limiter
// failed carries RateLimit-Policy only.
//
// It panics when a limit has a Quota (or its Policy a Quota func) and no
// positive Window, when Options.Keys holds a nil KeyFunc, and when it has
// more than one policy (or key) and a Limiter that is not a MultiLimiter.
func MiddlewareWithOptions(opts Options) func(http.Handler) http.Handler {
	return NewGate(opts).Wrap
}

// A Gate is the middleware of MiddlewareWithOptions as a value: Wrap puts
// it in front of a handler, and ChargeMore counts a request it let through
// as more requests than one, once the handler knows what the request
// costs (a batch write of many records, say).
type Gate struct {
	m *middleware // nil: a gate that limits nothing
}

// NewGate returns the gate of opts; it panics as MiddlewareWithOptions
// does.
func NewGate(opts Options) *Gate {
	var policies []policy
	all := append([]Policy{{Limit: opts.Limit, Key: opts.Key}}, make([]Policy, len(opts.Keys))...)
	for i, k := range opts.Keys {
		if k == nil {
			panic(errors.New("ratelimit: Options.Keys holds a nil KeyFunc"))
		}
		all[1+i] = Policy{Limit: opts.Limit, Key: k}
	}
	all = append(all, opts.Policies...)
	for i, p := range all {
		if !p.Limit.Enabled() && p.Quota == nil {
			continue
		}
		if p.Limit.Window <= 0 { // a Quota, or a Quota func, needs a window
			panic(fmt.Errorf("ratelimit: limit %q: %w", p.Limit.Name, ErrInvalidLimit))
		}
		if p.Key == nil {
			p.Key = KeyByRemoteAddr
		}
		group := len(policies)
		if i > 0 && i <= len(opts.Keys) {
			group = 0 // a further key of Options.Limit, which is policies[0]
		}
		policies = append(policies, policy{Policy: p, hdr: newHeaders(p.Limit), group: group})
	}
	if len(policies) == 0 {
		return &Gate{}
	}
	limiter := opts.Limiter
	if limiter == nil {
		limiter = NewMemory(MemoryOptions{})
	}
	if _, ok := limiter.(MultiLimiter); !ok && len(policies) > 1 {
		panic(ErrNotMulti)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	onError := opts.OnError
	if onError == nil {
		onError = logError(logger, policies[0].Limit.Name, opts.FailClosed)
	}
	m := &middleware{
		limiter:    limiter,
		policies:   policies,
		failClosed: opts.FailClosed,
		onError:    onError,
		errw:       apierrors.Writer{Logger: logger},
	}
	return &Gate{m: m}
}

// Wrap returns next behind the gate: the middleware of
// MiddlewareWithOptions.
func (g *Gate) Wrap(next http.Handler) http.Handler {
	switch {
	case g.m == nil:
		return next
	case len(g.m.policies) == 1 && g.m.policies[0].Quota == nil:
		return g.m.one(next)
	}
	return g.m.several(next)
}

// ChargeMore counts r, a request the gate let through, as n more requests
// under every policy and key it was counted under (their quotas as they
// were for r), in one decision of the Limiter: all n or none. A batch
// write of k records that should cost ceil(k/10) requests calls it with
// ceil(k/10)-1 once it has read its body, before it writes anything.
//
// It returns nil when n is not positive, when the gate limits nothing or
// r is under none of its policies (a KeyFunc said ok false), and when the
// n more requests fit: the RateLimit header on w then reports the state
// after them. When they do not fit it counts nothing and returns the
// 429 rate_limited error the middleware answers with (Retry-After: when
// the tightest policy has room for them), to be answered as it is. A
// Limiter that fails is the middleware's policy again: fail open returns
// nil (after OnError), fail closed the 503 the middleware answers with.
// More than one charge needs a MultiLimiter. A request that costs more than
// a policy's whole quota is refused (429) without asking the Limiter: no
// wait would make room for it.
func (g *Gate) ChargeMore(w http.ResponseWriter, r *http.Request, n int) error {
	if g == nil || g.m == nil || n <= 0 {
		return nil
	}
	m := g.m
	var sc scratch
	charges, hdrs, _, _ := m.charges(r, &sc)
	if len(charges) == 0 {
		return nil
	}
	for _, c := range charges {
		if n+1 > c.Limit.Quota {
			// More than the quota of a window: no wait makes room.
			return apierrors.RateLimited(ceilSeconds(c.Limit.Window)).WithDescription(
				"this request costs %d requests of the limit %q, which allows %d a window: send it in smaller parts", n+1, c.Limit.Name, c.Limit.Quota)
		}
	}
	all := make([]Charge, 0, n*len(charges))
	for range n {
		all = append(all, charges...)
	}
	ds := make([]Decision, len(all))
	if err := AllowAll(r.Context(), m.limiter, all, ds); err != nil {
		if r.Context().Err() != nil {
			return apierrors.ClientClosed(r.Context().Err())
		}
		m.onError(r, err)
		if m.failClosed {
			return apierrors.Unavailable("the rate limit could not be checked; retry later")
		}
		return nil
	}
	last := ds[len(ds)-len(charges):] // each bucket after every charge
	if t := tightest(last); last[t].Allowed {
		w.Header().Set(headerState, hdrs[t].state(last[t]))
		return nil
	}
	// Nothing more was counted: the RateLimit header the middleware set
	// still says what is left. The request sent again costs its one and
	// the n more: a bucket has room for n+1 once its reset time is down to
	// Window - (n+1)·Window/Quota; ds[i] of the first charges are each
	// bucket's figures as they are.
	var wait time.Duration
	for i, c := range charges {
		need := time.Duration(int64(c.Limit.Window) * int64(n+1) / int64(c.Limit.Quota))
		wait = max(wait, ds[i].Reset-c.Limit.Window+need)
	}
	return apierrors.RateLimited(max(1, ceilSeconds(wait)))
}

// middleware is the state of one MiddlewareWithOptions.
type middleware struct {
	limiter    Limiter
	policies   []policy
	failClosed bool
	onError    func(*http.Request, error)
	errw       apierrors.Writer
}

// one is the middleware of a single policy with a fixed quota.
func (m *middleware) one(next http.Handler) http.Handler {
	p := &m.policies[0]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, ok := p.Key(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		d, err := m.limiter.Allow(r.Context(), k, p.Limit)
		h := w.Header()
		h.Set(headerPolicy, p.hdr.policy)
		if err != nil {
			m.failed(w, r, next, err)
			return
		}
		h.Set(headerState, p.hdr.state(d))
		if !d.Allowed {
			m.errw.Write(w, r, apierrors.RateLimited(ceilSeconds(d.RetryAfter)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// scratch holds the charges, headers, groups and decisions of one request
// of several; pooled, since the limiter's interface call makes them
// escape.
type scratch struct {
	charges [multiInline]Charge
	hdrs    [multiInline]headers
	groups  [multiInline]int
	ds      [multiInline]Decision
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// several is the middleware of several policies, or of one whose quota
// may change from request to request.
func (m *middleware) several(next http.Handler) http.Handler {
	all := make([]headers, len(m.policies))
	groups := make([]int, len(m.policies))
	for i := range m.policies {
		all[i], groups[i] = m.policies[i].hdr, m.policies[i].group
	}
	allPolicies := policyList(all, groups) // the usual RateLimit-Policy
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := scratchPool.Get().(*scratch)
		defer scratchPool.Put(sc)
		charges, hdrs, grps, usual := m.charges(r, sc)
		if len(charges) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		if usual {
			h.Set(headerPolicy, allPolicies)
		} else {
			h.Set(headerPolicy, policyList(hdrs, grps))
		}
		var (
			ds  = sc.ds[:min(len(charges), multiInline)]
			err error
		)
		switch {
		case len(charges) == 1:
			ds[0], err = m.limiter.Allow(r.Context(), charges[0].Key, charges[0].Limit)
		case len(charges) > multiInline:
			ds = make([]Decision, len(charges))
			fallthrough
		default:
			err = m.limiter.(MultiLimiter).AllowAll(r.Context(), charges, ds)
		}
		clear(sc.charges[:]) // let the keys go
		if err != nil {
			m.failed(w, r, next, err)
			return
		}
		t := tightest(ds)
		h.Set(headerState, hdrs[t].state(ds[t]))
		if !ds[t].Allowed {
			m.errw.Write(w, r, apierrors.RateLimited(ceilSeconds(ds[t].RetryAfter)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// charges returns what r is counted under, in sc: a charge, the headers
// and the group of each policy that keys r with an enabled limit; usual
// is true when that is every policy with its own quota.
func (m *middleware) charges(r *http.Request, sc *scratch) (charges []Charge, hdrs []headers, grps []int, usual bool) {
	charges, hdrs, grps = sc.charges[:0], sc.hdrs[:0], sc.groups[:0]
	usual = true // every policy, none overridden
	for i := range m.policies {
		p := &m.policies[i]
		k, ok := p.Key(r)
		if !ok {
			usual = false
			continue
		}
		lim, hdr := p.Limit, p.hdr
		if p.Quota != nil {
			if q, ok := p.Quota(r, k); ok && q != lim.Quota {
				lim.Quota = q
				hdr = newHeaders(lim)
				usual = false
			}
		}
		if !lim.Enabled() {
			usual = false
			continue
		}
		charges = append(charges, Charge{Key: k, Limit: lim})
		hdrs = append(hdrs, hdr)
		grps = append(grps, p.group)
	}
	return charges, hdrs, grps, usual
}

// failed applies the fail-open or fail-closed policy to a request whose
// decision failed with err.
func (m *middleware) failed(w http.ResponseWriter, r *http.Request, next http.Handler, err error) {
	if r.Context().Err() != nil {
		// The client left while the limiter decided: neither a failure of
		// the limiter nor a request anyone waits for.
		return
	}
	m.onError(r, err)
	if m.failClosed {
		m.errw.Write(w, r, apierrors.Unavailable("the rate limit could not be checked; retry later"))
		return
	}
	next.ServeHTTP(w, r)
}

// policyList returns the RateLimit-Policy value of several policies: a
// structured-field list of them, in order, each group (groups[i] is that
// of hdrs[i]: the further keys of one limit are one group) named once.
func policyList(hdrs []headers, groups []int) string {
	if len(hdrs) == 1 {
		return hdrs[0].policy
	}
	n := 0
	for _, h := range hdrs {
		n += len(h.policy) + 2
	}
	b := make([]byte, 0, n)
	for i, h := range hdrs {
		if slices.Contains(groups[:i], groups[i]) {
			continue
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, h.policy...)
	}
	return string(b)
}

// logError returns the default OnError, which warns on logger.
func logError(logger *slog.Logger, name string, failClosed bool) func(*http.Request, error) {
	outcome := "request let through"
	if failClosed {
		outcome = "request refused"
	}
	return func(r *http.Request, err error) {
		logger.WarnContext(r.Context(), "ratelimit: limiter failed; "+outcome,
			"limit", name, "method", r.Method, "path", r.URL.Path, "error", err)
	}
}

// The header names of draft-ietf-httpapi-ratelimit-headers-11, in Go's
// canonical form.
const (
	headerPolicy = "Ratelimit-Policy"
	headerState  = "Ratelimit"
)

// SetHeaders sets the RateLimit headers of draft-ietf-httpapi-ratelimit-
// headers-11 for decision d under l, for a handler that checks a limit
// itself:
//
//	RateLimit-Policy: "<name>";q=<quota>;w=<window in seconds>
//	RateLimit: "<name>";r=<remaining>;t=<seconds until the full quota is back>
//
// Seconds are rounded up. The name is sent as a structured-field string
// (RFC 8941): characters outside printable ASCII are left out.
func SetHeaders(h http.Header, l Limit, d Decision) {
	hdr := newHeaders(l)
	h.Set(headerPolicy, hdr.policy)
	h.Set(headerState, hdr.state(d))
}

// headers holds the parts of the RateLimit headers of one limit that do not
// change from request to request.
type headers struct {
	policy string // the whole RateLimit-Policy value
	prefix string // `"<name>";r=`
}

func newHeaders(l Limit) headers {
	name := sfString(l.Name)
	return headers{
		policy: name + ";q=" + strconv.Itoa(l.Quota) + ";w=" + strconv.FormatInt(ceilSeconds(l.Window), 10),
		prefix: name + ";r=",
	}
}

// state returns the RateLimit value of d.
func (h headers) state(d Decision) string {
	var buf [64]byte
	b := append(buf[:0], h.prefix...)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilSeconds(d.Reset), 10)
	return string(b)
}

// sfString returns s as an RFC 8941 sf-string: in double quotes, with " and
// \ escaped and characters outside %x20-7E left out.
func sfString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20 && c <= 0x7e:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// ceilSeconds returns d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
