package ratelimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/ratelimit"
)

// chargingHandler charges each request it serves extra more requests
// through gate, and answers the error ChargeMore returns.
func chargingHandler(gate *ratelimit.Gate, extra int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := gate.ChargeMore(w, r, extra); err != nil {
			apierrors.Write(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestChargeMore(t *testing.T) {
	t.Parallel()
	org := func(r *http.Request) (string, bool) { return r.Header.Get("X-Org"), r.Header.Get("X-Org") != "" }
	app := func(r *http.Request) (string, bool) { return r.Header.Get("X-App"), r.Header.Get("X-App") != "" }
	rest := ratelimit.Limit{Name: "rest", Quota: 10, Window: time.Minute}
	restApp := ratelimit.Limit{Name: "rest-app", Quota: 6, Window: time.Minute}
	for _, tc := range []struct {
		name    string
		opts    ratelimit.Options
		extra   []int    // the extra charge of each request, in order
		headers []string // X-Org, X-App of the requests
		status  []int
		state   []string // RateLimit after each ("": not checked)
		retry   []string // Retry-After of each refusal ("": not checked)
	}{
		{
			// 10 a minute, one every 6 s: 1+4 leave 5; 1 leaves 4, which 6
			// more do not fit (Retry-After: room for 1+6 again, three more,
			// 18 s); 1+3 use the rest.
			name:   "one policy: charged, then refused whole, then what is left",
			opts:   ratelimit.Options{Limit: rest, Key: org},
			extra:  []int{4, 6, 3},
			status: []int{http.StatusNoContent, http.StatusTooManyRequests, http.StatusNoContent},
			state:  []string{`"rest";r=5;t=30`, `"rest";r=4;t=36`, `"rest";r=0;t=60`},
			retry:  []string{"", "18", ""},
		},
		{
			// The app's 6 a minute (one every 10 s) are the tighter.
			name:   "several policies: the tightest refuses, and none is charged",
			opts:   ratelimit.Options{Limit: rest, Key: org, Policies: []ratelimit.Policy{{Limit: restApp, Key: app}}},
			extra:  []int{3, 3, 0},
			status: []int{http.StatusNoContent, http.StatusTooManyRequests, http.StatusNoContent},
			state:  []string{`"rest-app";r=2;t=40`, `"rest-app";r=1;t=50`, `"rest-app";r=0;t=60`},
			retry:  []string{"", "30", ""},
		},
		{
			name:   "a quota of its own",
			opts:   ratelimit.Options{Limit: rest, Key: org, Policies: []ratelimit.Policy{{Limit: restApp, Key: app, Quota: func(*http.Request, string) (int, bool) { return 3, true }}}},
			extra:  []int{2, 1},
			status: []int{http.StatusNoContent, http.StatusTooManyRequests},
			state:  []string{`"rest-app";r=0;t=60`, ""},
			retry:  []string{"", "20"},
		},
		{
			name:   "nothing more",
			opts:   ratelimit.Options{Limit: rest, Key: org},
			extra:  []int{0, -3},
			status: []int{http.StatusNoContent, http.StatusNoContent},
			state:  []string{`"rest";r=9;t=6`, `"rest";r=8;t=12`},
			retry:  []string{"", ""},
		},
		{
			name:   "far over every quota",
			opts:   ratelimit.Options{Limit: rest, Key: org},
			extra:  []int{1 << 30},
			status: []int{http.StatusTooManyRequests},
			state:  []string{`"rest";r=9;t=6`},
			retry:  []string{"60"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
			tc.opts.Limiter = ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }})
			gate := ratelimit.NewGate(tc.opts)
			for i, extra := range tc.extra {
				h := gate.Wrap(chargingHandler(gate, extra))
				req := httptest.NewRequest(http.MethodPost, "/v1/x/accounts", nil)
				req.Header.Set("X-Org", "org-1")
				req.Header.Set("X-App", "app-1")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.Equal(t, tc.status[i], rec.Code, "request %d: %s", i, rec.Body.String())
				if tc.state[i] != "" {
					assert.Equal(t, tc.state[i], rec.Header().Get("RateLimit"), "request %d", i)
				}
				if rec.Code == http.StatusTooManyRequests {
					assert.Equal(t, "rate_limited", decodeError(t, rec).Error)
					assert.NotEmpty(t, rec.Header().Get("Retry-After"))
					if tc.retry[i] != "" {
						assert.Equal(t, tc.retry[i], rec.Header().Get("Retry-After"), "request %d", i)
					}
				}
			}
		})
	}
}

func TestChargeMoreUnlimited(t *testing.T) {
	t.Parallel()
	// A gate that limits nothing, a request its key leaves out, and a nil
	// gate charge nothing.
	none := ratelimit.NewGate(ratelimit.Options{})
	keyless := ratelimit.NewGate(ratelimit.Options{Limit: ratelimit.Limit{Name: "rest", Quota: 1, Window: time.Minute},
		Key: func(*http.Request) (string, bool) { return "", false }})
	var nilGate *ratelimit.Gate
	for _, g := range []*ratelimit.Gate{none, keyless, nilGate} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		require.NoError(t, g.ChargeMore(rec, req, 100))
		assert.Empty(t, rec.Header().Get("RateLimit"))
	}
}

func TestChargeMoreLimiterFails(t *testing.T) {
	t.Parallel()
	errDown := errors.New("redislimit: connection refused")
	for _, failClosed := range []bool{false, true} {
		var failures int
		gate := ratelimit.NewGate(ratelimit.Options{
			Limiter: &stubLimiter{err: errDown}, Limit: ratelimit.Limit{Name: "rest", Quota: 100, Window: time.Minute},
			FailClosed: failClosed, OnError: func(*http.Request, error) { failures++ },
		})
		err := gate.ChargeMore(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil), 5)
		assert.Equal(t, 1, failures, "OnError hears of the failure")
		if failClosed {
			assert.Equal(t, "temporarily_unavailable", apierrors.CodeOf(err))
		} else {
			assert.NoError(t, err, "fail open lets the batch through")
		}
	}
}

// A request refused by ChargeMore passes when sent again after its
// Retry-After, and not a second before.
func TestChargeMoreRetryAfterIsEnough(t *testing.T) {
	t.Parallel()
	for _, early := range []time.Duration{time.Second, 0} {
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		gate := ratelimit.NewGate(ratelimit.Options{
			Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{Now: func() time.Time { return now }}),
			Limit:   ratelimit.Limit{Name: "rest", Quota: 7, Window: time.Minute},
			Key:     func(*http.Request) (string, bool) { return "org-1", true },
		})
		send := func(extra int) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			gate.Wrap(chargingHandler(gate, extra)).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
			return rec
		}
		require.Equal(t, http.StatusNoContent, send(3).Code) // 4 of 7
		rec := send(5)                                       // 1 + 5 > the 2 left after its 1
		require.Equal(t, http.StatusTooManyRequests, rec.Code)
		wait, err := time.ParseDuration(rec.Header().Get("Retry-After") + "s")
		require.NoError(t, err)
		now = now.Add(wait - early)
		want := http.StatusNoContent
		if early > 0 {
			want = http.StatusTooManyRequests
		}
		assert.Equal(t, want, send(5).Code, "sent again %v before Retry-After (%v)", early, wait)
	}
}
