package ratelimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/ratelimittest"
)

// stubLimiter answers every request with its decision or error and counts
// the calls.
type stubLimiter struct {
	decision ratelimit.Decision
	err      error
	calls    atomic.Int64
}

func (s *stubLimiter) Allow(context.Context, string, ratelimit.Limit) (ratelimit.Decision, error) {
	s.calls.Add(1)
	return s.decision, s.err
}

// okHandler answers 200 "ok" and counts the requests that reach it.
type okHandler struct{ calls atomic.Int64 }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.calls.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// errorBody is the JSON body of an error response.
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) errorBody {
	t.Helper()
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var b errorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b), rec.Body.String())
	return b
}

func TestMiddlewareLimits(t *testing.T) {
	t.Parallel()
	var clock ratelimittest.Clock
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now})
	limit := ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute}
	next := &okHandler{}
	h := ratelimit.Middleware(limiter, limit, ratelimit.KeyByRemoteAddr)(next)

	const policy = `"api";q=2;w=60`
	steps := []struct {
		name       string
		at         time.Duration
		remoteAddr string
		status     int
		state      string // the RateLimit header
		retryAfter string
	}{
		{"first", 0, "192.0.2.1:1000", 200, `"api";r=1;t=30`, ""},
		{"second, another port", 0, "192.0.2.1:1001", 200, `"api";r=0;t=60`, ""},
		{"over the limit", 0, "192.0.2.1:1000", 429, `"api";r=0;t=60`, "30"},
		{"another address", 0, "192.0.2.2:1000", 200, `"api";r=1;t=30`, ""},
		{"a second later", time.Second, "192.0.2.1:1000", 429, `"api";r=0;t=59`, "29"},
		{"a nanosecond early", 30*time.Second - 1, "192.0.2.1:1000", 429, `"api";r=0;t=31`, "1"},
		{"earned back", 30 * time.Second, "192.0.2.1:1000", 200, `"api";r=0;t=60`, ""},
		{"IPv6", 30 * time.Second, "[2001:db8::1]:443", 200, `"api";r=1;t=30`, ""},
	}
	for _, s := range steps {
		clock.Set(s.at)
		req := httptest.NewRequest(http.MethodGet, "/v1/org/orders", nil)
		req.RemoteAddr = s.remoteAddr
		rec := httptest.NewRecorder()
		before := next.calls.Load()
		h.ServeHTTP(rec, req)

		assert.Equal(t, s.status, rec.Code, s.name)
		assert.Equal(t, policy, rec.Header().Get("RateLimit-Policy"), s.name)
		assert.Equal(t, s.state, rec.Header().Get("RateLimit"), s.name)
		assert.Equal(t, s.retryAfter, rec.Header().Get("Retry-After"), s.name)
		if s.status == http.StatusOK {
			assert.Equal(t, before+1, next.calls.Load(), "%s: the handler runs", s.name)
			assert.Equal(t, "ok", rec.Body.String(), s.name)
			continue
		}
		assert.Equal(t, before, next.calls.Load(), "%s: the handler does not run", s.name)
		b := decodeError(t, rec)
		assert.Equal(t, errorBody{"rate_limited", "rate limit exceeded; retry in " + s.retryAfter + " s"}, b, s.name)
	}
}

func TestMiddlewareHeadOverTheLimit(t *testing.T) {
	t.Parallel()
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: &stubLimiter{decision: ratelimit.Decision{Reset: time.Minute, RetryAfter: 1500 * time.Millisecond}},
		Limit:   ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute},
	})(&okHandler{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "2", rec.Header().Get("Retry-After"), "rounded up")
	assert.Equal(t, `"api";r=0;t=60`, rec.Header().Get("RateLimit"))
	assert.Empty(t, rec.Body.String())
}

func TestMiddlewareDoesNotLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit ratelimit.Limit
		key   ratelimit.KeyFunc
	}{
		{"quota 0", ratelimit.Limit{Name: "api", Quota: 0, Window: time.Minute}, ratelimit.KeyByRemoteAddr},
		{"quota 0 and no window", ratelimit.Limit{Name: "api"}, nil},
		{"key func says no", ratelimit.Limit{Name: "api", Quota: 1, Window: time.Minute},
			func(*http.Request) (string, bool) { return "", false }},
		{"no remote address", ratelimit.Limit{Name: "api", Quota: 1, Window: time.Minute}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			limiter := &stubLimiter{err: errors.New("must not be called")}
			next := &okHandler{}
			h := ratelimit.Middleware(limiter, tc.limit, tc.key)(next)
			for range 5 {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.RemoteAddr = ""
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				assert.Equal(t, http.StatusOK, rec.Code)
				assert.Empty(t, rec.Header().Get("RateLimit-Policy"))
				assert.Empty(t, rec.Header().Get("RateLimit"))
			}
			assert.Equal(t, int64(5), next.calls.Load())
			assert.Zero(t, limiter.calls.Load(), "the limiter is not asked")
		})
	}
}

func TestMiddlewareLimiterFails(t *testing.T) {
	t.Parallel()
	errDown := errors.New("redislimit: dial tcp 127.0.0.1:6379: connect: connection refused")
	tests := []struct {
		name       string
		failClosed bool
		status     int
		handler    int64
		retryAfter string // a 503 asks the client to come back soon
	}{
		{"fail open", false, http.StatusOK, 1, ""},
		{"fail closed", true, http.StatusServiceUnavailable, 0, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu     sync.Mutex
				errs   []error
				method string
			)
			next := &okHandler{}
			h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
				Limiter:    &stubLimiter{err: errDown},
				Limit:      ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute},
				FailClosed: tc.failClosed,
				OnError: func(r *http.Request, err error) {
					mu.Lock()
					defer mu.Unlock()
					errs = append(errs, err)
					method = r.Method
				},
			})(next)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/oauth/token", nil))

			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, tc.handler, next.calls.Load())
			assert.Equal(t, `"api";q=10;w=60`, rec.Header().Get("RateLimit-Policy"))
			assert.Empty(t, rec.Header().Get("RateLimit"), "no decision, no state")
			assert.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"))
			mu.Lock()
			assert.Equal(t, []error{errDown}, errs)
			assert.Equal(t, http.MethodPost, method)
			mu.Unlock()
			if tc.failClosed {
				assert.Equal(t, "temporarily_unavailable", decodeError(t, rec).Error)
			}
		})
	}
}

// A request whose client leaves while the limiter decides is no failure of
// the limiter: OnError is not called, and the handler does not run.
func TestMiddlewareClientLeft(t *testing.T) {
	t.Parallel()
	var errs atomic.Int64
	next := &okHandler{}
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: &stubLimiter{err: context.Canceled},
		Limit:   ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute},
		OnError: func(*http.Request, error) { errs.Add(1) },
	})(next)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	assert.Zero(t, errs.Load(), "not a failure of the limiter")
	assert.Zero(t, next.calls.Load(), "nobody waits for the answer")

	// The same error while the client still waits is a failure.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, int64(1), errs.Load())
	assert.Equal(t, int64(1), next.calls.Load())
}

// The default OnError warns on the Logger.
func TestMiddlewareDefaultOnError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: &stubLimiter{err: errors.New("redis is down")},
		Limit:   ratelimit.Limit{Name: "token", Quota: 30, Window: time.Minute},
		Key:     func(r *http.Request) (string, bool) { return r.URL.Query().Get("client_id"), true },
		Logger:  slog.New(slog.NewJSONHandler(&buf, nil)),
	})(&okHandler{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/v1/oauth/token?client_id=secret-client", nil))
	require.Equal(t, http.StatusOK, rec.Code)

	var entry map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &entry), buf.String())
	assert.Equal(t, "WARN", entry["level"])
	assert.Equal(t, "token", entry["limit"])
	assert.Equal(t, "/auth/v1/oauth/token", entry["path"])
	assert.Equal(t, "redis is down", entry["error"])
	assert.NotContains(t, buf.String(), "secret-client", "neither the key nor the query string")
}

func TestMiddlewareDefaults(t *testing.T) {
	t.Parallel()
	// A Limit alone limits by remote address with a limiter of its own.
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limit: ratelimit.Limit{Name: "api", Quota: 1, Window: time.Hour},
	})(&okHandler{})
	codes := map[string][]int{}
	for _, addr := range []string{"192.0.2.1:1", "192.0.2.1:2", "192.0.2.2:1"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes[addr[:9]] = append(codes[addr[:9]], rec.Code)
	}
	assert.Equal(t, map[string][]int{"192.0.2.1": {200, 429}, "192.0.2.2": {200}}, codes)
}

func TestMiddlewarePanicsOnInvalidLimit(t *testing.T) {
	t.Parallel()
	assert.PanicsWithError(t, `ratelimit: limit "api": quota without a positive window`, func() {
		ratelimit.Middleware(nil, ratelimit.Limit{Name: "api", Quota: 1}, nil)
	})
}

func TestKeyByRemoteAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		remoteAddr string
		key        string
		ok         bool
	}{
		{"192.0.2.1:1234", "192.0.2.1", true},
		{"[2001:db8::1]:443", "2001:db8::/64", true},
		{"192.0.2.1", "192.0.2.1", true},
		{"", "", false},
		{":8080", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.remoteAddr, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tc.remoteAddr
			key, ok := ratelimit.KeyByRemoteAddr(req)
			assert.Equal(t, tc.key, key)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limit  ratelimit.Limit
		d      ratelimit.Decision
		policy string
		state  string
	}{
		{"whole seconds", ratelimit.Limit{Name: "api", Quota: 1000, Window: time.Minute},
			ratelimit.Decision{Allowed: true, Remaining: 999, Reset: 60 * time.Millisecond},
			`"api";q=1000;w=60`, `"api";r=999;t=1`},
		{"rounded up", ratelimit.Limit{Name: "edge", Quota: 3, Window: 1500 * time.Millisecond},
			ratelimit.Decision{Reset: time.Second + 1},
			`"edge";q=3;w=2`, `"edge";r=0;t=2`},
		{"full quota", ratelimit.Limit{Name: "api", Quota: 5, Window: time.Hour},
			ratelimit.Decision{Allowed: true, Remaining: 5},
			`"api";q=5;w=3600`, `"api";r=5;t=0`},
		{"quoted name", ratelimit.Limit{Name: "a\"b\\c\né", Quota: 1, Window: time.Second},
			ratelimit.Decision{Allowed: true, Reset: time.Second},
			`"a\"b\\c";q=1;w=1`, `"a\"b\\c";r=0;t=1`},
		{"long name", ratelimit.Limit{Name: "a-limit-with-a-name-longer-than-the-buffer-of-sixty-four-bytes", Quota: 1, Window: time.Second},
			ratelimit.Decision{Allowed: true, Reset: time.Second},
			`"a-limit-with-a-name-longer-than-the-buffer-of-sixty-four-bytes";q=1;w=1`,
			`"a-limit-with-a-name-longer-than-the-buffer-of-sixty-four-bytes";r=0;t=1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			ratelimit.SetHeaders(h, tc.limit, tc.d)
			assert.Equal(t, tc.policy, h.Get("RateLimit-Policy"))
			assert.Equal(t, tc.state, h.Get("RateLimit"))
		})
	}
}

// byHeader keys a request by the value of its header name; none when it
// is empty.
func byHeader(name string) ratelimit.KeyFunc {
	return func(r *http.Request) (string, bool) {
		v := r.Header.Get(name)
		return v, v != ""
	}
}

// byOrgApp keys a request by its organization and app, within it.
func byOrgApp(r *http.Request) (string, bool) {
	app := r.Header.Get("X-App")
	return r.Header.Get("X-Org") + ":" + app, app != ""
}

func TestMiddlewarePolicies(t *testing.T) {
	t.Parallel()
	var clock ratelimittest.Clock
	overrides := map[string]int{"o1:big": 4, "o1:exempt": 0}
	h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{Now: clock.Now}),
		Limit:   ratelimit.Limit{Name: "rest", Quota: 6, Window: time.Minute},
		Key:     byHeader("X-Org"),
		Policies: []ratelimit.Policy{{
			Limit: ratelimit.Limit{Name: "rest-app", Quota: 2, Window: time.Minute},
			Key:   byOrgApp,
			Quota: func(_ *http.Request, key string) (int, bool) {
				q, ok := overrides[key]
				return q, ok
			},
		}},
	})(&okHandler{})

	const both = `"rest";q=6;w=60, "rest-app";q=2;w=60`
	steps := []struct {
		name, org, app string
		at             time.Duration
		status         int
		policy, state  string
		retryAfter     string
	}{
		{"a, first", "o1", "a", 0, 200, both, `"rest-app";r=1;t=30`, ""},
		{"a, second", "o1", "a", 0, 200, both, `"rest-app";r=0;t=60`, ""},
		{"a over its share", "o1", "a", 0, 429, both, `"rest-app";r=0;t=60`, "30"},
		{"a again: the organization was not charged", "o1", "a", 0, 429, both, `"rest-app";r=0;t=60`, "30"},
		{"b of the same organization is served", "o1", "b", 0, 200, both, `"rest-app";r=1;t=30`, ""},
		{"without an app, the organization's only", "o1", "", 0, 200, `"rest";q=6;w=60`, `"rest";r=2;t=40`, ""},
		{"an override", "o1", "big", 0, 200, `"rest";q=6;w=60, "rest-app";q=4;w=60`, `"rest";r=1;t=50`, ""},
		{"exempt from its share", "o1", "exempt", 0, 200, `"rest";q=6;w=60`, `"rest";r=0;t=60`, ""},
		{"the organization caps the sum", "o1", "c", 0, 429, both, `"rest";r=0;t=60`, "10"},
		{"another organization", "o2", "a", 0, 200, both, `"rest-app";r=1;t=30`, ""},
		{"earned back", "o1", "c", 10 * time.Second, 200, both, `"rest";r=0;t=60`, ""},
	}
	for _, s := range steps {
		clock.Set(s.at)
		req := httptest.NewRequest(http.MethodGet, "/v1/o/orders", nil)
		req.Header.Set("X-Org", s.org)
		req.Header.Set("X-App", s.app)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, s.status, rec.Code, s.name)
		assert.Equal(t, s.policy, rec.Header().Get("RateLimit-Policy"), s.name)
		assert.Equal(t, s.state, rec.Header().Get("RateLimit"), s.name)
		assert.Equal(t, s.retryAfter, rec.Header().Get("Retry-After"), s.name)
	}
}

func TestMiddlewarePoliciesNeedAMultiLimiter(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, ratelimit.ErrNotMulti, func() {
		ratelimit.MiddlewareWithOptions(ratelimit.Options{
			Limiter:  &stubLimiter{},
			Limit:    ratelimit.Limit{Name: "rest", Quota: 6, Window: time.Minute},
			Policies: []ratelimit.Policy{{Limit: ratelimit.Limit{Name: "rest-app", Quota: 2, Window: time.Minute}}},
		})
	})
}

func TestAllowAll(t *testing.T) {
	t.Parallel()
	lim := ratelimit.Limit{Name: "api", Quota: 10, Window: time.Minute}
	one := []ratelimit.Charge{{Key: "k", Limit: lim}}
	two := append(one, ratelimit.Charge{Key: "j", Limit: lim})
	stub := &stubLimiter{decision: ratelimit.Decision{Allowed: true, Remaining: 3}}
	tests := []struct {
		name    string
		limiter ratelimit.Limiter
		charges []ratelimit.Charge
		ds      int
		want    []ratelimit.Decision
		err     error
	}{
		{"a Limiter, one charge", stub, one, 1, []ratelimit.Decision{{Allowed: true, Remaining: 3}}, nil},
		{"a Limiter, no charge", stub, nil, 0, []ratelimit.Decision{}, nil},
		{"a Limiter, two charges", stub, two, 2, make([]ratelimit.Decision, 2), ratelimit.ErrNotMulti},
		{"a MultiLimiter", ratelimit.NewMemory(ratelimit.MemoryOptions{}), two, 2,
			[]ratelimit.Decision{{Allowed: true, Remaining: 9, Reset: 6 * time.Second}, {Allowed: true, Remaining: 9, Reset: 6 * time.Second}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ds := make([]ratelimit.Decision, tc.ds)
			err := ratelimit.AllowAll(t.Context(), tc.limiter, tc.charges, ds)
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.want, ds)
		})
	}
	require.Error(t, ratelimit.AllowAll(t.Context(), stub, two, nil), "too few decisions")
}

// failingMulti is a MultiLimiter whose every decision fails.
type failingMulti struct{ stubLimiter }

func (f *failingMulti) AllowAll(context.Context, []ratelimit.Charge, []ratelimit.Decision) error {
	f.calls.Add(1)
	return errors.New("redis is down")
}

func TestMiddlewarePoliciesLimiterFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		failClosed bool
		status     int
	}{
		{"fail open", false, http.StatusOK},
		{"fail closed", true, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			limiter := &failingMulti{}
			var errs atomic.Int64
			h := ratelimit.MiddlewareWithOptions(ratelimit.Options{
				Limiter:    limiter,
				Limit:      ratelimit.Limit{Name: "rest", Quota: 6, Window: time.Minute},
				Key:        byHeader("X-Org"),
				Policies:   []ratelimit.Policy{{Limit: ratelimit.Limit{Name: "rest-app", Quota: 2, Window: time.Minute}, Key: byOrgApp}},
				FailClosed: tc.failClosed,
				OnError:    func(*http.Request, error) { errs.Add(1) },
				Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			})(&okHandler{})
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("X-Org", "o1")
			req.Header.Set("X-App", "a")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, `"rest";q=6;w=60, "rest-app";q=2;w=60`, rec.Header().Get("RateLimit-Policy"))
			assert.Empty(t, rec.Header().Get("RateLimit"))
			assert.Equal(t, int64(1), limiter.calls.Load(), "one decision")
			assert.Equal(t, int64(1), errs.Load())
		})
	}
}
