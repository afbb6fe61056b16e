package webhook_test

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
)

// The host of the example of API, on each database: the endpoints API
// beside the resources on one mux, its secrets sealed with a key from
// oauth.ParseSecretsKey, and its section in the host's OpenAPI document.
func TestExampleAPI(t *testing.T) {
	t.Parallel()
	key, err := oauth.ParseSecretsKey(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32))))
	require.NoError(t, err)
	sealer, err := oauth.NewSealer(key)
	require.NoError(t, err)
	eachBackend(t, func(a *webhook.API) { a.Sealer = sealer }, func(t *testing.T, e *env) {
		registry, api := e.api.Registry, e.api
		mux := http.NewServeMux()
		registry.Mount(mux)
		api.Mount(mux)
		mux.Handle("GET /openapi.json", registry.OpenAPIHandler(resource.OpenAPIInfo{
			Sections: []*openapi.Document{api.OpenAPI()},
		}))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		e.http = srv

		tok := e.codeToken(t, orgA, readAll...)
		ep := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))
		secret, id := ep["secret"].(string), ep["id"].(string)
		require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
		got := e.row(t, id)
		assert.Equal(t, key.ID(), got.keyID, "the secret is sealed at rest")
		assert.NotContains(t, string(got.secret), secret)

		// The resources are served on the same mux (the test creates no
		// table of theirs: a request without a token is enough to tell).
		r := e.do(t, http.MethodGet, "/v1/"+a1+"/quotations", "", "")
		assert.Equal(t, http.StatusUnauthorized, r.status, r.raw)

		r = e.do(t, http.MethodGet, "/openapi.json", "", "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		paths, _ := r.body["paths"].(map[string]any)
		var names []string
		for p := range paths {
			names = append(names, p)
		}
		assert.Contains(t, names, "/v1/{organizationId}/webhook_endpoints", "the document has the API's section")
		assert.Contains(t, names, "/v1/{scopeId}/quotations", "and the resources")
	})
}

// The Dispatcher of the example of Dispatcher, on each database: run until
// its context is done, woken after a write commits, with its secrets
// sealed, its outcomes observed and its figures read.
func TestExampleDispatcher(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		sealer := newSealer(t)
		_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}, Sealer: sealer})
		rc.expect("a", secret)

		var (
			mu       sync.Mutex
			outcomes []string
		)
		d := e.dispatcher(nil) // with Guard.AllowPrivate, to reach the receiver
		d.Sealer = sealer
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		d.Observe = func(o webhook.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			outcomes = append(outcomes, o.String())
		}
		d.PollInterval = time.Hour // only Wake starts a round
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", time.Now())
		d.Wake()
		require.Eventually(t, func() bool { return len(rc.Got()) == 1 }, 10*time.Second, 10*time.Millisecond)
		rc.requireClean()
		assert.Equal(t, []string{ev.ID}, rc.Got())
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(outcomes) == 1
		}, 10*time.Second, 10*time.Millisecond)
		assert.Equal(t, []string{"delivered"}, outcomes)
		st, err := d.Stats(ctx)
		require.NoError(t, err)
		assert.Zero(t, st.Pending)
		assert.Zero(t, st.Failed)

		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return when its context was done")
		}
	})
}
