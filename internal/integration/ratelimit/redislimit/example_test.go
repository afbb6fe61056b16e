package redislimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/ratelimit/redislimit"
)

// The middleware of the example of New, on the test Redis: with a quota of
// two, an organization's third request within the window is refused with
// 429 and Retry-After, another organization's is not, and no error reaches
// OnError.
func TestExampleNew(t *testing.T) {
	t.Parallel()
	client, prefix := newClient(t)
	api := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limiter: redislimit.New(client, redislimit.Options{Prefix: prefix}),
		Limit:   ratelimit.Limit{Name: "api", Quota: 2, Window: time.Minute},
		Key: func(r *http.Request) (string, bool) {
			org := r.PathValue("scopeId")
			return org, org != ""
		},
		OnError: func(r *http.Request, err error) {
			t.Errorf("rate limiter unavailable: %v", err)
		},
	})
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/{scopeId}/orders", api(orders))

	get := func(org string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/"+org+"/orders", nil))
		return rec
	}
	for i := range 2 {
		rec := get("org-1")
		require.Equal(t, http.StatusOK, rec.Code, "request %d", i)
		assert.NotEmpty(t, rec.Header().Get("RateLimit"), "request %d", i)
	}
	rec := get("org-1")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Equal(t, http.StatusOK, get("org-2").Code, "another organization has a quota of its own")
}
