package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// scrape returns the text of GET base/metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	res, body := get(t, http.MethodGet, base+"/metrics")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"), res.Header.Get("Content-Type"))
	return body
}

// metricLine matches a sample of the Prometheus text format: name, labels,
// value.
var (
	metricLine  = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	metricLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// metricValue returns the value of the sample of name whose labels are
// exactly labels; it fails t when there is none.
func metricValue(t *testing.T, text, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := findMetric(text, name, labels)
	require.True(t, ok, "no sample %s%v in:\n%s", name, labels, text)
	return v
}

// findMetric returns the value of the sample of name whose labels are
// exactly labels.
func findMetric(text, name string, labels map[string]string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		got := map[string]string{}
		for _, l := range metricLabel.FindAllStringSubmatch(m[2], -1) {
			got[l[1]] = l[2]
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if match {
			v, err := strconv.ParseFloat(m[3], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// The server's metrics after some requests: counts by route pattern,
// method and code, durations, rate limit refusals, the Go and process
// collectors, and nothing secret.
func TestMetrics(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme")
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--rate-rest", "2", "--rate-rest-app", "0", "--rate-token", "1"}, env(nil))
	defer func() { require.NoError(t, stop()) }()

	token := rlToken(t, base, a)
	res := rlDo(t, rlTokenRequest(t, base, "/v1/oauth/token", a, "form"))
	require.Equal(t, http.StatusTooManyRequests, res.status) // refused before the mux
	for range 3 {
		rlVehicles(t, base, a.org, token) // 200, 200, 429
	}
	rlVehicles(t, base, a.org, "") // 401, refused by tenancy, not counted by the limit
	get(t, http.MethodGet, base+"/nope")
	get(t, "BREW", base+"/healthz")

	text := scrape(t, base)
	for _, tt := range []struct {
		route, method, code string
		want                float64
	}{
		{"/v1/oauth/token", "POST", "200", 1},
		{"/v1/oauth/token", "POST", "429", 1},
		{"/v1/{scopeId}/vehicles", "GET", "200", 2},
		{"/v1/{scopeId}/vehicles", "GET", "429", 1},
		{"/v1/{scopeId}/vehicles", "GET", "401", 1},
		{"/", "GET", "404", 1},
		{"/healthz", "OTHER", "405", 1},
	} {
		labels := map[string]string{"route": tt.route, "method": tt.method, "code": tt.code}
		assert.Equal(t, tt.want, metricValue(t, text, "http_requests_total", labels), "%v", labels)
	}
	assert.Equal(t, 4.0, metricValue(t, text, "http_request_duration_seconds_count", map[string]string{"route": "/v1/{scopeId}/vehicles", "method": "GET"}))
	assert.Equal(t, 4.0, metricValue(t, text, "http_request_duration_seconds_bucket", map[string]string{"route": "/v1/{scopeId}/vehicles", "method": "GET", "le": "+Inf"}))
	for limit, want := range map[string]float64{"rest": 1, "token": 1, "edge": 0} {
		assert.Equal(t, want, metricValue(t, text, "waybill_ratelimit_rejected_total", map[string]string{"limit": limit}), limit)
		assert.Equal(t, 0.0, metricValue(t, text, "waybill_ratelimit_errors_total", map[string]string{"limit": limit}), limit)
	}
	assert.Greater(t, metricValue(t, text, "go_goroutines", nil), 0.0)
	assert.Greater(t, metricValue(t, text, "process_resident_memory_bytes", nil), 0.0)

	// The previous scrape is counted too, under its pattern.
	assert.Equal(t, 1.0, metricValue(t, scrape(t, base), "http_requests_total", map[string]string{"route": "/metrics", "method": "GET", "code": "200"}))

	// Routes are patterns, never paths: no id, no token, no secret.
	for _, secret := range []string{a.org, a.clientID, a.secret, token, "Bearer"} {
		assert.NotContains(t, text, secret)
	}
	assert.NotContains(t, text, "/nope")
}

func TestMetricsInstrument(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints) // informational: not the status
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /plain", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /silent", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /flush", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, http.NewResponseController(w).Flush())
	})
	// A wrapper that answers before the mux, as the rate limits do.
	h := m.instrument(mux, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("refuse") {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r.WithContext(r.Context())) // a copy, as the deadline makes
		})
	})
	for _, target := range []string{"/items/1", "/items/2", "/items/3?refuse", "/plain", "/silent", "/flush", "/nothing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
	rec := httptest.NewRecorder()
	m.handler(newLogger(&syncBuffer{})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := rec.Body.String()
	for _, tt := range []struct {
		route, code string
		want        float64
	}{
		{"/items/{id}", "202", 2},
		{"/items/{id}", "429", 1},
		{"/plain", "200", 1},
		{"/silent", "200", 1},
		{"/flush", "200", 1},
		{"other", "404", 1}, // no pattern matched
	} {
		labels := map[string]string{"route": tt.route, "method": "GET", "code": tt.code}
		assert.Equal(t, tt.want, metricValue(t, text, "http_requests_total", labels), "%v", labels)
	}
	_, ok := findMetric(text, "http_requests_total", map[string]string{"route": "/items/{id}", "method": "GET", "code": "103"})
	assert.False(t, ok)
}

// However many methods clients invent, the series of a route stay one per
// method label and status code.
func TestMetricsSeriesBounded(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	mux := http.NewServeMux()
	mux.HandleFunc("/items/{id}", func(w http.ResponseWriter, r *http.Request) {})
	h := m.instrument(mux, func(next http.Handler) http.Handler { return next })
	for i := range 200 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("X-"+strconv.Itoa(i), "/items/1", nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/1", nil))
	n := 0
	m.series.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 2, n, "series cached: OTHER and GET")
	rec := httptest.NewRecorder()
	m.handler(newLogger(&syncBuffer{})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	labels := map[string]string{"route": "/items/{id}", "method": "OTHER", "code": "200"}
	assert.Equal(t, 200.0, metricValue(t, rec.Body.String(), "http_requests_total", labels))
}

func TestMethodLabel(t *testing.T) {
	t.Parallel()
	for method, want := range map[string]string{"GET": "GET", "PATCH": "PATCH", "OPTIONS": "OPTIONS", "get": "OTHER", "PROPFIND": "OTHER", "": "OTHER"} {
		assert.Equal(t, want, methodLabel(method), method)
	}
}
