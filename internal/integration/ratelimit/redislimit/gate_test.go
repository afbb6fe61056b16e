package redislimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// A request charged as more on Redis (ratelimit.Gate.ChargeMore): the
// repeats of one charge in one decision count n times, under both
// policies, and a charge that does not fit counts nothing.
func TestChargeMore(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)

	byOrg := func(*http.Request) (string, bool) { return "org-1", true }
	byApp := func(*http.Request) (string, bool) { return "org-1/app-1", true }
	gate := ratelimit.NewGate(ratelimit.Options{
		Limiter:  redislimit.New(client, redislimit.Options{Prefix: prefix}),
		Limit:    ratelimit.Limit{Name: "rest", Quota: 100, Window: time.Hour},
		Key:      byOrg,
		Policies: []ratelimit.Policy{{Limit: ratelimit.Limit{Name: "rest-app", Quota: 60, Window: time.Hour}, Key: byApp}},
	})
	do := func(extra int) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		gate.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := gate.ChargeMore(w, r, extra); err != nil {
				apierrors.Write(w, r, err)
			}
		})).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		return rec
	}
	rec := do(24) // 25 of each
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, `"rest-app";r=35;t=1500`, rec.Header().Get("RateLimit"))
	rec = do(40) // 26 + 40 > 60: refused, only its own request counted
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	assert.Equal(t, `"rest-app";r=34;t=1560`, rec.Header().Get("RateLimit"))
	assert.Equal(t, "420", rec.Header().Get("Retry-After"), "room for 1+40 again: seven more of one a minute")
	rec = do(33) // 27 + 33 = 60: the app's whole quota, 60 of the organization's 100
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, `"rest-app";r=0;t=3600`, rec.Header().Get("RateLimit"))
}
