package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
	"github.com/waybillhq/waybill/tenancy"
)

// The rate limits: their names, which the RateLimit
// headers and the metrics carry, and their default quotas per minute.
const (
	limitREST    = "rest"
	limitRESTApp = "rest-app"
	limitEdge    = "edge"
	limitToken   = "token"

	defaultRateREST  = 1000
	defaultRateEdge  = 100
	defaultRateToken = 30

	// rateWindow is the window of every limit: the quotas are per minute.
	rateWindow = time.Minute
)

// edgePrefix starts the paths of the edge functions, limited by "edge".
const edgePrefix = "/functions/v1/"

// How the server talks to Redis when --redis-url is set. A request waits for
// its decision, so an unreachable Redis must cost little: one dial attempt
// of at most redisDialTimeout, reads and writes of at most redisIOTimeout,
// one retry (which makes a connection that died with a restart of Redis
// invisible to the request). A URL may set any of them itself
// (?dial_timeout=2s and so on).
const (
	redisDialTimeout   = time.Second
	redisIOTimeout     = 500 * time.Millisecond
	redisMaxRetries    = 1
	redisDialerRetries = 1
	// redisPingTimeout bounds the check at start.
	redisPingTimeout = 2 * time.Second
)

// errorLogInterval is how often a limit logs the failures of its limiter
// while they go on: the first one at once, then one line per interval with
// the number of those not logged. The metric counts every one.
const errorLogInterval = 10 * time.Second

// limitsConfig configures the rate limits of serve. Its zero value turns
// every limit off; the flags default the quotas to 1000 a minute per
// organization for the API, 100 per app for the edge functions and 30 per
// client for the token endpoints, in process.
type limitsConfig struct {
	// REST, Edge and Token are the quotas per minute of the limits "rest",
	// "edge" and "token"; 0 disables a limit. The flags default them to
	// defaultRateREST, defaultRateEdge and defaultRateToken.
	REST, Edge, Token int
	// RESTApp is the quota per minute of the limit "rest-app": the
	// requests of each app to the REST API within its organization,
	// checked beside "rest". 0, the flags' default, gives apps no quota of
	// their own, so that an organization whose one integration is one app
	// has its organization's whole quota; an app with an override (waybill
	// admin app set-quota) has that quota whatever RESTApp is.
	RESTApp int
	// RedisURL, when set, keeps the limits in that Redis, shared by every
	// replica that uses it: one server, a Redis Cluster or the master of
	// Redis Sentinels (see newRedisClient); empty means one in-process
	// limiter.
	RedisURL string
	// RedisPrefix starts every key the limits write to Redis; empty means
	// redislimit.DefaultPrefix ("waybill:rl:"). Replicas that share limits
	// share the prefix; deployments that share a Redis do not.
	RedisPrefix string
}

// limitsFlags sets c to the defaults and registers its flags on fs.
func limitsFlags(fs *flag.FlagSet, c *limitsConfig) {
	c.REST, c.Edge, c.Token, c.RESTApp = defaultRateREST, defaultRateEdge, defaultRateToken, 0
	fs.Var(quotaFlag{&c.REST}, "rate-rest", "`N` requests per minute of each organization to the REST API (/v1, /api/v1); 0 disables the limit")
	fs.Var(quotaFlag{&c.RESTApp}, "rate-rest-app", "`N` requests per minute of each app to the REST API within its organization, beside the organization's limit; 0 gives apps no limit of their own (waybill admin app set-quota still gives one app its own)")
	fs.Var(quotaFlag{&c.Edge}, "rate-edge", "`N` requests per minute of each authenticated app (else of each remote address) to the edge functions (/functions/v1/*); 0 disables the limit")
	fs.Var(quotaFlag{&c.Token}, "rate-token", "`N` requests per minute of each authenticated client to the token endpoints, of each remote address to them without a client that authenticates, of each remote address and each email to the password sign-ins, and of each signed-in user to the consent form (an IPv6 address counts as its /64); 0 disables the limit")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis `URL` that keeps the rate limits, shared by every replica using it (default: in process): one server, redis://[user:password@]host:port/db (rediss:// for TLS); a Redis Cluster, redis+cluster://[user:password@]host:port,host:port,... (rediss+cluster://); or the master named master watched by Redis Sentinels, redis+sentinel://[user:password@]host:26379,host:26379,.../master[?db=N&sentinel_password=P] (rediss+sentinel://)")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", "", "`prefix` of the rate limits' Redis keys (default "+redislimit.DefaultPrefix+")")
}

// quotaFlag is the flag.Value of a quota per minute: a whole number from 0
// to redislimit.MaxQuota, stored in *dst.
type quotaFlag struct{ dst *int }

// String returns the quota; "" for one not given (negative), as
// set-quota's --rest-per-minute is until it is.
func (q quotaFlag) String() string {
	if q.dst == nil || *q.dst < 0 {
		return ""
	}
	return strconv.Itoa(*q.dst)
}

// Set parses s as the quota.
func (q quotaFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > redislimit.MaxQuota {
		return errors.New("not a whole number of requests per minute, from 0 to 2^52")
	}
	*q.dst = n
	return nil
}

// limit returns the limit name with the quota q, or def when q is nil.
func limit(name string, quota int) ratelimit.Limit {
	return ratelimit.Limit{Name: name, Quota: quota, Window: rateWindow}
}

// rateLimits are the limits of a server over one limiter:
//
//   - rest: each organization's requests to the REST API. It is the
//     registry's Middleware (REST), so it runs after tenancy resolved the
//     tenant: requests that tenancy refuses (401, 403, 404) are not counted,
//     as the organization of a request without a valid token is not known.
//   - rest-app: beside rest, the requests of each app (the token's OAuth
//     client) to the REST API within its organization, so that one app
//     cannot spend its organization's whole quota. It counts only the apps
//     that have a quota: every app with --rate-rest-app, one app with its
//     override (waybill admin app set-quota), which holds also without
//     --rate-rest-app; by default no app has one. Both are decided in one
//     step of the limiter (one round trip to Redis): a request passes when
//     both have room and is counted under both; refused by either, it is
//     counted under neither. A product user's token, of no app, counts
//     under rest only.
//   - edge: every request to /functions/v1/*. A POST to
//     /functions/v1/oauth-token (the only edge function so far) whose
//     client authenticates is keyed by that client; every other request by
//     remote address. That route counts against "edge" only.
//   - token: POST to the token, revocation and introspection endpoints,
//     keyed by the client when it authenticates, else by remote address:
//     a request that names a client but fails to authenticate as it spends
//     the quota of its own address, never the client's, so nobody can lock
//     a client out by naming it. POST to the password sign-in and the login
//     form, keyed by remote address and by the email it names, each with
//     the whole quota: naming a new client_id at each attempt does not
//     escape the limit of the address, and spreading guesses at one
//     account over many addresses does not escape the limit of the email.
//     The two are decided in one step: a sign-in refused for its email is
//     counted under neither, so it spends nothing of its address's quota.
//     Every request to Dynamic Client Registration (registering a client,
//     and reading, updating or deleting a registration), keyed by remote
//     address, so that one address cannot fill the database with clients.
//
// Remote addresses are keyed as they are for IPv4 and by their /64 for
// IPv6, the block a single host or subscriber is usually given (see
// ratelimit.KeyByRemoteAddr).
//
// Over a limit, a request is answered 429 rate_limited with Retry-After;
// every response of a limited route carries RateLimit-Policy and RateLimit.
// A limiter that fails (Redis is down) lets requests through; each failure
// is counted in waybill_ratelimit_errors_total and logged, at most once per
// errorLogInterval and limit.
type rateLimits struct {
	rest, restApp, edge, token ratelimit.Limit
	limiter                    ratelimit.Limiter
	metrics                    *metrics
	errorLogs                  map[string]*errorLog // by limit name
	// errors writes the refusals, logging to the server's logger.
	errors apierrors.Writer
	// close releases the Redis client; nil for the in-process limiter.
	close func() error
	// reload, for a Redis Cluster, makes the client read the cluster's
	// slots again; it is called at each failure of the limiter, so that a
	// replica promoted in place of a dead master is found at once.
	reload func()
	// quotas are the per-app overrides of "rest-app"; nil until
	// WatchQuotas, and then none.
	quotas atomic.Pointer[appQuotas]
}

// newRateLimits returns the limits of c, counted in m (nil for none) and
// logged to logger. With c.RedisURL it pings Redis once and only warns when
// Redis does not answer: the limits fail open until it does. Close releases
// the Redis client.
func newRateLimits(ctx context.Context, c limitsConfig, m *metrics, logger *slog.Logger) (*rateLimits, error) {
	l := &rateLimits{
		rest:    limit(limitREST, c.REST),
		restApp: limit(limitRESTApp, c.RESTApp),
		edge:    limit(limitEdge, c.Edge),
		token:   limit(limitToken, c.Token),
		metrics: m,
		errors:  apierrors.Writer{Logger: logger, Realm: realm},
	}
	l.errorLogs = map[string]*errorLog{}
	for _, lim := range []ratelimit.Limit{l.rest, l.restApp, l.edge, l.token} {
		l.errorLogs[lim.Name] = &errorLog{name: lim.Name, logger: logger}
	}
	backend := "memory"
	if c.RedisURL == "" {
		l.limiter = ratelimit.NewMemory(ratelimit.MemoryOptions{})
	} else {
		client, err := newRedisClient(c.RedisURL)
		if err != nil {
			return nil, err
		}
		l.limiter = redislimit.New(client, redislimit.Options{Prefix: c.RedisPrefix})
		l.close = client.Close
		if cluster, ok := client.(*redis.ClusterClient); ok {
			// go-redis reloads the slots of a cluster on MOVED only:
			// after a master died it would keep dialing it until the
			// next periodic reload. Any failure reloads them, in the
			// background (at most one reload at a time).
			l.reload = func() { cluster.ReloadState(context.Background()) }
		}
		backend = "redis"
		pingCtx, cancel := context.WithTimeout(ctx, redisPingTimeout)
		defer cancel()
		if err := client.Ping(pingCtx).Err(); err != nil {
			logger.Warn("rate limits: redis does not answer; requests pass unlimited until it does",
				"redis_url", redactRedisURL(c.RedisURL), "error", err.Error())
		}
	}
	if m != nil {
		l.limiter = countingLimiter{Limiter: l.limiter, metrics: m}
		for _, lim := range []ratelimit.Limit{l.rest, l.restApp, l.edge, l.token} {
			m.initLimit(lim.Name)
		}
	}
	attrs := []any{"backend", backend, limitREST, l.rest.Quota, limitRESTApp, l.restApp.Quota, limitEdge, l.edge.Quota, limitToken, l.token.Quota, "window", rateWindow.String()}
	if c.RedisURL != "" {
		attrs = append(attrs, "redis_url", redactRedisURL(c.RedisURL))
	}
	logger.Info("rate limits", attrs...)
	return l, nil
}

// redisLogger passes the log lines of go-redis to a slog.Logger at debug
// level: the failures that matter reach the log through errorLog already,
// at most one line per interval.
type redisLogger struct{ logger *slog.Logger }

// Printf logs one line of go-redis.
func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis client", "message", fmt.Sprintf(format, v...))
}

// Close releases the Redis client, if any.
func (l *rateLimits) Close() error {
	if l.close == nil {
		return nil
	}
	return l.close()
}

// REST returns the gate of the "rest" and "rest-app" limits: its Wrap is
// resource.Registry.Middleware, its ChargeMore Registry.ChargeExtra (a
// batch of n records costs ceil(n/10) requests). It keys each request by
// the organization that tenancy resolved and by the token's app within
// it.
func (l *rateLimits) REST() *ratelimit.Gate {
	return ratelimit.NewGate(ratelimit.Options{
		Limiter:  l.limiter,
		Limit:    l.rest,
		Key:      keyByOrganization,
		Policies: []ratelimit.Policy{{Limit: l.restApp, Key: keyByOrganizationApp, Quota: l.restAppQuota}},
		OnError:  l.onError(limitREST),
		Logger:   l.errors.Logger,
	})
}

// WatchQuotas makes the "rest-app" limit take the per-app overrides of db
// (waybill admin app set-quota) into account, read now and then every
// appQuotaTTL (see appQuotas).
func (l *rateLimits) WatchQuotas(ctx context.Context, db *sql.DB) {
	l.quotas.Store(newAppQuotas(ctx, db, l.errors.Logger))
}

// restAppQuota is the Quota of the "rest-app" policy: the override of the
// request's app, once WatchQuotas has been called.
func (l *rateLimits) restAppQuota(r *http.Request, key string) (int, bool) {
	q := l.quotas.Load()
	if q == nil {
		return 0, false
	}
	return q.restAppQuota(r, key)
}

// Wrap puts the "edge" and "token" limits in front of their routes of
// next, the server's mux, and leaves every other request to next as it is.
// The limit is picked by method and path (see rateLimits); clients
// authenticates the clients of the token endpoints, for their keys
// (oauth.IdentifyClient, which reads each request once for the limit and
// the endpoint both). A limit that is off (quota 0) identifies no client:
// its requests go to next as they came.
func (l *rateLimits) Wrap(next http.Handler, clients oauth.ClientAuthenticator) http.Handler {
	identify := oauth.IdentifyClient(clients)
	byClient := func(lim ratelimit.Limit) http.Handler {
		if !lim.Enabled() {
			return next
		}
		return identify(l.middleware(lim, keyByClient)(next))
	}
	edgeToken := byClient(l.edge)
	edge := l.middleware(l.edge, keyByAddr)(next)
	token := byClient(l.token)
	signIn := l.signIn(next)
	register := l.middleware(l.token, keyByAddr)(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == pathEdgeToken && r.Method == http.MethodPost:
			edgeToken.ServeHTTP(w, r)
		case strings.HasPrefix(p, edgePrefix):
			edge.ServeHTTP(w, r)
		case p == oauth.PathRegister || strings.HasPrefix(p, oauth.PathRegister+"/"):
			register.ServeHTTP(w, r)
		case r.Method != http.MethodPost:
			next.ServeHTTP(w, r)
		case p == oauth.PathToken || p == pathV1Token || p == oauth.PathRevoke || p == oauth.PathIntrospect:
			token.ServeHTTP(w, r)
		case p == oauth.PathUserToken || p == oauth.PathLogin:
			signIn.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// signIn returns the "token" limit of the password sign-ins: each request
// is counted under its remote address and, when it names one, under its
// email, in one decision (ratelimit.Options.Keys): refused when either is
// over the quota, and then counted under neither, so that refusals for a
// spent email do not spend the quota of the address they come from. Its
// RateLimit header tells the tighter of the two.
func (l *rateLimits) signIn(next http.Handler) http.Handler {
	return ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: l.limiter,
		Limit:   l.token,
		Key:     keyByAddr,
		Keys:    []ratelimit.KeyFunc{oauth.KeyBySignInEmail},
		OnError: l.onError(l.token.Name),
		Logger:  l.errors.Logger,
	})(next)
}

// middleware returns the ratelimit middleware of lim keyed by key, failing
// open and reporting errors to l.onError.
func (l *rateLimits) middleware(lim ratelimit.Limit, key ratelimit.KeyFunc) func(http.Handler) http.Handler {
	return ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: l.limiter,
		Limit:   lim,
		Key:     key,
		OnError: l.onError(lim.Name),
		Logger:  l.errors.Logger,
	})
}

// onError returns the OnError of the limit name: it counts every failure
// in the metrics and hands it to the limit's errorLog.
func (l *rateLimits) onError(name string) func(*http.Request, error) {
	log := l.errorLogs[name]
	return func(r *http.Request, err error) {
		if l.reload != nil {
			l.reload()
		}
		if l.metrics != nil {
			l.metrics.limitErrors.WithLabelValues(name).Inc()
		}
		log.failed(r, err)
	}
}

// errorLog logs the failures of the limiter under one limit: the first at
// once, then at most one line per errorLogInterval, with the number of
// failures since the last line. It logs neither the key nor the query
// string.
type errorLog struct {
	name   string
	logger *slog.Logger

	mu       sync.Mutex
	last     time.Time // when the last line was written; zero before the first
	unlogged int       // failures since then that were not logged
}

// failed records one failure of the request r.
func (e *errorLog) failed(r *http.Request, err error) {
	e.mu.Lock()
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < errorLogInterval {
		e.unlogged++
		e.mu.Unlock()
		return
	}
	failures := e.unlogged + 1
	e.last, e.unlogged = now, 0
	e.mu.Unlock()
	e.logger.WarnContext(r.Context(), "rate limits: the limiter failed; requests pass unlimited",
		"limit", e.name, "method", r.Method, "path", r.URL.Path, "error", err.Error(),
		"failures", failures, "log_interval", errorLogInterval.String())
}

// countingLimiter counts the requests that its Limiter refuses, by limit
// name.
type countingLimiter struct {
	ratelimit.Limiter
	metrics *metrics
}

var _ ratelimit.MultiLimiter = countingLimiter{}

// AllowAll decides through the Limiter and counts a refusal under each
// limit that refused, once per request however many of its keys (the
// address and the email of a sign-in) refused.
func (c countingLimiter) AllowAll(ctx context.Context, charges []ratelimit.Charge, ds []ratelimit.Decision) error {
	err := ratelimit.AllowAll(ctx, c.Limiter, charges, ds)
	if err != nil {
		return err
	}
	for i, d := range ds[:len(charges)] {
		if !d.Allowed && d.RetryAfter > 0 && !refusedBefore(charges[:i], ds[:i], charges[i].Limit.Name) {
			c.metrics.limitRejected.WithLabelValues(charges[i].Limit.Name).Inc()
		}
	}
	return nil
}

// refusedBefore reports whether one of charges, whose decisions are ds,
// is of the limit name and refused.
func refusedBefore(charges []ratelimit.Charge, ds []ratelimit.Decision, name string) bool {
	for i, c := range charges {
		if c.Limit.Name == name && !ds[i].Allowed && ds[i].RetryAfter > 0 {
			return true
		}
	}
	return false
}

// Allow decides through the Limiter and counts a refusal.
func (c countingLimiter) Allow(ctx context.Context, key string, l ratelimit.Limit) (ratelimit.Decision, error) {
	d, err := c.Limiter.Allow(ctx, key, l)
	if err == nil && !d.Allowed {
		c.metrics.limitRejected.WithLabelValues(l.Name).Inc()
	}
	return d, err
}

// keyByOrganizationApp keys a request by the organization of its tenant
// and the app of its token, "{<organization>}:client:<client id>" (see
// oauth.ClientKey); none for a token of no app. The organization is a Redis
// hash tag, as in keyByOrganization: the two keys of one request hash to
// one slot of a Redis Cluster, where one script decides them atomically.
func keyByOrganizationApp(r *http.Request) (string, bool) {
	t, ok := tenancy.FromContext(r.Context())
	if !ok || t.OrganizationID == "" || t.Claims == nil || t.Claims.ClientID == "" {
		return "", false
	}
	return "{" + t.OrganizationID + "}:" + oauth.ClientKey(t.Claims.ClientID), true
}

// keyByOrganization keys a request by the organization of its tenant,
// "{<organization>}" (a Redis hash tag); it runs inside tenancy's
// middleware, which always sets one.
func keyByOrganization(r *http.Request) (string, bool) {
	t, ok := tenancy.FromContext(r.Context())
	if !ok || t.OrganizationID == "" {
		return "", false
	}
	return "{" + t.OrganizationID + "}", true
}

// keyByClient keys a token request by the client that
// oauth.IdentifyClient authenticated, "client:<id>" (oauth.ClientKey), else
// by its remote address, "addr:<host>": a request that names a client
// without its secret spends the quota of its address, so that nobody can
// spend a client's quota but the client.
var keyByClient = oauth.KeyByClient(keyByAddr)

// keyByAddr keys a request by its remote address, "addr:<host>", an IPv6
// address by its /64 (see ratelimit.KeyByRemoteAddr).
func keyByAddr(r *http.Request) (string, bool) {
	host, ok := ratelimit.KeyByRemoteAddr(r)
	if !ok {
		return "", false
	}
	return "addr:" + host, true
}
