package oauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
)

// countingStore counts the app lookups of a store.
type countingStore struct {
	oauth.Store
	apps atomic.Int64
}

func (c *countingStore) App(ctx context.Context, clientID string) (*oauth.App, error) {
	c.apps.Add(1)
	return c.Store.App(ctx, clientID)
}

// The app IdentifyClient authenticated spares AuthenticateClient its
// lookup, but never its check of the secret; a client that does not
// authenticate goes on without an app.
func TestAuthenticatedAppInContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		store := &countingStore{Store: e.store}
		srv := *e.srv
		srv.Store = store
		var inner func(r *http.Request)
		h := oauth.IdentifyClient(&srv)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { inner(r) }))
		request := func(clientID, secret string) *http.Request {
			form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}}
			r := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}

		called := false
		inner = func(r *http.Request) {
			called = true
			ctx := r.Context()
			app, ok := oauth.AuthenticatedApp(ctx)
			require.True(t, ok)
			assert.Equal(t, e.app.ClientID, app.ClientID)
			require.EqualValues(t, 1, store.apps.Load())

			again, err := srv.AuthenticateClient(ctx, e.app.ClientID, e.secret, "")
			require.NoError(t, err)
			assert.Same(t, app, again)
			assert.EqualValues(t, 1, store.apps.Load(), "no second lookup")

			_, err = srv.AuthenticateClient(ctx, e.app.ClientID, "wrong", "")
			assert.True(t, apierrors.HasCode(err, apierrors.CodeInvalidClient), "the secret is still checked: %v", err)

			_, err = srv.AuthenticateClient(ctx, e.other.ClientID, e.otherSec, "")
			require.NoError(t, err, "another client is looked up")
			assert.EqualValues(t, 2, store.apps.Load())
		}
		h.ServeHTTP(httptest.NewRecorder(), request(e.app.ClientID, e.secret))
		require.True(t, called)

		called = false
		inner = func(r *http.Request) {
			called = true
			_, ok := oauth.AuthenticatedApp(r.Context())
			assert.False(t, ok, "a wrong secret authenticates no app")
		}
		h.ServeHTTP(httptest.NewRecorder(), request(e.app.ClientID, "wrong"))
		require.True(t, called)
	})
}
