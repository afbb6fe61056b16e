package main

import (
	"database/sql"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waybillhq/waybill/webhook"
)

// pathMetrics is where the server serves its metrics.
const pathMetrics = "/metrics"

// metrics are the Prometheus metrics of one server, on a registry of its
// own (never the global default one, so that two servers in one process,
// as in the tests, do not share or clash):
//
//	http_requests_total{route, method, code}         requests answered
//	http_request_duration_seconds{route, method}     how long they took
//	http_requests_in_flight                          requests being handled now
//	waybill_ratelimit_rejected_total{limit}          requests refused 429 by a limit
//	waybill_ratelimit_errors_total{limit}            limiter failures, requests let through
//	waybill_webhook_attempts_total{outcome}          webhook attempts: delivered, retried, failed; endpoints disabled
//
// with a webhook dispatcher (newDispatcher), the figures of its deliveries
// (see webhookCollector),
// the collectors of the Go runtime (go_*) and the process (process_*), and,
// once watchDB is called, those of the database pool (go_sql_*{db_name}:
// open, in use and idle connections, waits for a free one and their time)
// and, for PostgreSQL, waybill_db_statements_total{db_name}, the statements
// sent to it.
//
// Every label is bounded: route is the path of the ServeMux pattern that
// served the request ("/v1/{scopeId}/orders", "/" for the catch-all; the
// method is a label of its own), never the request's path, which holds ids;
// method is one of the standard methods or "OTHER"; code is the status
// code.
type metrics struct {
	registry      *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	inFlight      prometheus.Gauge
	limitRejected *prometheus.CounterVec
	limitErrors   *prometheus.CounterVec
	// webhookAttempts counts the outcomes of webhook attempts.
	webhookAttempts *prometheus.CounterVec
	// series holds the *series of each seriesKey seen (see seriesOf).
	series sync.Map
}

// newMetrics returns the metrics of a server, registered on a new registry.
func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests answered, by route (the ServeMux pattern), method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time from the start of a request's handling until its handler returned, by route and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "http_requests_in_flight",
			Help: "Requests being handled now.",
		}),
		limitRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waybill_ratelimit_rejected_total",
			Help: "Requests refused with 429 rate_limited, by limit (rest, edge, token).",
		}, []string{"limit"}),
		limitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waybill_ratelimit_errors_total",
			Help: "Failures of the rate limiter (Redis unreachable), by limit; the requests passed unlimited.",
		}, []string{"limit"}),
		webhookAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waybill_webhook_attempts_total",
			Help: "Attempts to deliver webhooks, by outcome: delivered (2xx), retried (failed, tried again later), failed (the last attempt failed); disabled counts the endpoints disabled for failing.",
		}, []string{"outcome"}),
	}
	for _, o := range []webhook.Outcome{webhook.Delivered, webhook.Retried, webhook.Failed, webhook.Disabled} {
		m.webhookAttempts.WithLabelValues(o.String())
	}
	m.registry.MustRegister(
		m.requests, m.duration, m.inFlight, m.limitRejected, m.limitErrors, m.webhookAttempts,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// watchDB adds the statistics of db's connection pool, labelled db_name:
// for PostgreSQL those of its pgxpool.Pool and the statements sent (see
// poolCollector), for SQLite those of database/sql.
func (m *metrics) watchDB(db *sql.DB, name string) {
	if pg := pgDatabaseOf(db); pg != nil {
		m.registry.MustRegister(newPoolCollector(pg, name))
		return
	}
	m.registry.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// initLimit makes the counters of the limit name exist from the start, at
// 0, so that a rate over them is defined before the first event.
func (m *metrics) initLimit(name string) {
	m.limitRejected.WithLabelValues(name)
	m.limitErrors.WithLabelValues(name)
}

// handler serves the metrics in the Prometheus exposition formats. Errors
// of gathering are logged to logger.
func (m *metrics) handler(logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
		Registry: m.registry, // counts its own errors in promhttp_metric_handler_errors_total
	})
}

// instrument returns mux behind middle, the middleware between the two
// (limits, deadline), recording every request. The route is the pattern
// mux matched, which mux hands back (see statusWriter.route: middle gives
// mux a copy of the request, whose Pattern instrument does not see), or,
// for a request answered before mux saw it (a 429 of the edge and token
// limits), the pattern mux would have chosen.
func (m *metrics) instrument(mux *http.ServeMux, middle func(http.Handler) http.Handler) http.Handler {
	next := middle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if sw, ok := w.(*statusWriter); ok {
			sw.route = r.Pattern
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		elapsed := time.Since(start)

		route := sw.route
		if route == "" {
			_, route = mux.Handler(r)
		}
		m.seriesOf(route, r.Method, sw.code()).observe(elapsed)
	})
}

// seriesKey names the series of a request: its route pattern as mux
// writes it ("GET /v1/{scopeId}/orders"), its method label (methodLabel)
// and its status code.
type seriesKey struct {
	pattern, method string
	code            int
}

// series are the request counter and the duration histogram of one
// seriesKey.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// observe records one request that took elapsed.
func (s *series) observe(elapsed time.Duration) {
	s.requests.Inc()
	s.duration.Observe(elapsed.Seconds())
}

// seriesOf returns the series of a request of route pattern, method and
// status code, found once with their label values and then kept: every
// part of the key is bounded (the patterns of the mux, the method labels,
// the status codes), and so is the cache.
func (m *metrics) seriesOf(pattern, method string, code int) *series {
	// The key holds the method's label, not the method: a client chooses
	// the method, and must not grow the cache by inventing ones.
	label := methodLabel(method)
	key := seriesKey{pattern, label, code}
	if s, ok := m.series.Load(key); ok {
		return s.(*series)
	}
	route := pattern
	// The method is a label of its own: "GET /v1/{scopeId}/orders" is
	// counted as route "/v1/{scopeId}/orders", method "GET".
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path
	}
	if route == "" {
		route = "other" // a redirect to the clean path, say
	}
	s, _ := m.series.LoadOrStore(key, &series{
		requests: m.requests.WithLabelValues(route, label, strconv.Itoa(code)),
		duration: m.duration.WithLabelValues(route, label),
	})
	return s.(*series)
}

// methodLabel returns method when it is one of the methods of RFC 9110 or
// PATCH, else "OTHER": a client chooses the method, and a label must not
// take any value it likes.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// statusWriter remembers the status code of the response it writes, and
// the route pattern that mux matched (see instrument).
type statusWriter struct {
	http.ResponseWriter
	status int    // 0 until the header is written
	route  string // "" until mux served the request
}

// WriteHeader records the first final status code and writes it.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes the header, 200 unless set, and b.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response, when the underlying writer can.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code returns the status code of the response: 200 when the handler wrote
// nothing, as net/http then sends.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
