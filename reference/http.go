package main

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/resource"
)

// The product's other token endpoints, beside the token service's own
// (oauth.PathToken): they take only the client-credentials grant, served
// by oauth.Server.ClientCredentialsHandler.
const (
	pathEdgeToken = "/functions/v1/oauth-token"
	pathV1Token   = "/v1/oauth/token"
)

// readyTimeout bounds the database ping of the readiness probe.
const readyTimeout = 2 * time.Second

// realm is the realm of every WWW-Authenticate challenge the server sends:
// Bearer for the API, Basic for the token endpoint's client authentication.
const realm = "waybill"

// newHandler returns the server's routes over db: the token service, the
// API of api (when not nil), and the probes. Every response that is not a
// success has the API error shape of package errors, including those for
// routes that do not exist. It has neither rate limits nor metrics; serve
// adds them with newHandlerWith.
func newHandler(db *sql.DB, tokens *oauth.Server, api *resource.Registry) http.Handler {
	return newHandlerWith(db, tokens, api, handlerOptions{})
}

// handlerOptions are what serve adds around the routes of newHandler. The
// zero value adds nothing.
type handlerOptions struct {
	// Limits puts the edge and token limits in front of their routes (see
	// rateLimits.Wrap and rateLimits.Consent). The REST limit is not here: it is the registry's
	// Middleware, set before the API is mounted (see rateLimits.REST).
	Limits *rateLimits
	// Metrics records every request, rate-limited ones included, and is
	// served at GET /metrics.
	Metrics *metrics
	// Logger receives the errors of the metrics handler and the failed
	// requests of the routes of its own (the probes); nil means
	// slog.Default.
	Logger *slog.Logger
	// DBTimeout, when not zero, bounds every request's wait for the
	// database (see withDeadline).
	DBTimeout time.Duration
	// Sealer, when not nil, encrypts the signing secrets of webhook
	// endpoints (--secrets-key).
	Sealer *oauth.Sealer
	// WebhookAllowPrivate lets webhook endpoints be at addresses that are
	// not globally reachable (--webhook-allow-private).
	WebhookAllowPrivate bool
	// WebhookWake, when set, wakes the webhook dispatcher after an action
	// of the endpoints API queued deliveries (a test, a recovery).
	WebhookWake func()
	// EventRetention is how long events are kept (--event-retention): a
	// recovery may not reach further back.
	EventRetention time.Duration
}

// newHandlerWith returns the routes of newHandler with what opts adds: from
// the outside in, metrics, the deadline, the edge and token limits, and the
// mux.
func newHandlerWith(db *sql.DB, tokens *oauth.Server, api *resource.Registry, opts handlerOptions) http.Handler {
	mux := http.NewServeMux()
	tokens.Mount(mux)
	for _, p := range []string{pathEdgeToken, pathV1Token} {
		mux.Handle("POST "+p, tokens.ClientCredentialsHandler())
	}
	if api != nil {
		api.Mount(mux)
		newFeed(api).Mount(mux)
		hooks := newWebhookAPI(api, opts.Sealer, opts.WebhookAllowPrivate)
		hooks.Wake = opts.WebhookWake
		hooks.EventRetention = opts.EventRetention
		hooks.Mount(mux)
		mountOpenAPI(mux, api, tokens)
		mountProtectedResource(mux, tokens.Issuer)
	}
	mux.HandleFunc("GET /healthz", handleHealthz)
	mux.Handle("/healthz", methodNotAllowed(http.MethodGet, http.MethodHead))
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	mux.Handle("GET /readyz", handleReadyz(db, logger))
	mux.Handle("/readyz", methodNotAllowed(http.MethodGet, http.MethodHead))
	if opts.Metrics != nil {
		mux.Handle("GET "+pathMetrics, opts.Metrics.handler(logger))
		mux.Handle(pathMetrics, methodNotAllowed(http.MethodGet, http.MethodHead))
	}
	// The catch-all: without it ServeMux would answer in plain text.
	mux.HandleFunc("/", handleNotFound)

	if opts.Limits != nil && db != nil {
		opts.Limits.WatchQuotas(context.Background(), db)
	}
	middle := func(h http.Handler) http.Handler {
		if opts.Limits != nil {
			h = opts.Limits.Wrap(h, tokens)
			h = opts.Limits.Consent(h, tokens)
		}
		if opts.DBTimeout > 0 {
			// Outside the limits: a Redis that does not answer spends the
			// same budget as the database, so a request still ends within
			// the bound.
			h = withDeadline(h, opts.DBTimeout)
		}
		return h
	}
	if opts.Metrics != nil {
		return opts.Metrics.instrument(mux, middle)
	}
	return middle(mux)
}

// defaultDBTimeout is the default of --db-timeout. It is short enough that a
// client learns of an outage or of overload within seconds, and long enough
// for the statements of any request of this API, which its indexes keep in
// milliseconds, and for a queue of requests waiting for a connection.
const defaultDBTimeout = 2 * time.Second

// withDeadline gives every request a deadline of d from its arrival for
// what it asks of the database: the wait for a free connection of the pool,
// connecting, and its statements. A request that hits it is answered 503
// temporarily_unavailable with Retry-After (see apierrors.From), instead of
// waiting as long as the database or the pool takes. Requests that use no
// database (the probes, the metrics) are unaffected; /readyz bounds its own
// ping.
func withDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// handleHealthz is the liveness probe: 200 {"status":"ok"} while the process
// serves requests. It checks no dependency; readiness (/readyz) does.
func handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	}
}

// handleReadyz returns the readiness probe: 200 {"status":"ready"} when db
// answers a ping within readyTimeout, else 503 temporarily_unavailable,
// logged to logger.
func handleReadyz(db *sql.DB, logger *slog.Logger) http.Handler {
	errw := apierrors.Writer{Logger: logger}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			errw.Write(w, r, apierrors.Unavailable("the database is not reachable").Wrap(err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
		}
	})
}

// handleNotFound answers every request that no route matches with 404
// not_found.
func handleNotFound(w http.ResponseWriter, r *http.Request) {
	apierrors.Write(w, r, apierrors.NotFound("no route for %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed returns a handler that answers 405 method_not_allowed with
// an Allow header listing allow.
func methodNotAllowed(allow ...string) http.Handler {
	err := apierrors.MethodNotAllowed(allow...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierrors.Write(w, r, err)
	})
}
