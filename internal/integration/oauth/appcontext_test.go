package oauth_test

import (
	"context"
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

// An app authenticated earlier in the request spares AuthenticateClient its
// lookup, but never its check of the secret.
func TestAuthenticatedAppInContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		store := &countingStore{Store: e.store}
		srv := *e.srv
		srv.Store = store
		ctx := context.Background()
		app, err := srv.AuthenticateClient(ctx, e.app.ClientID, e.secret, "")
		require.NoError(t, err)
		require.EqualValues(t, 1, store.apps.Load())

		withApp := oauth.WithAuthenticatedApp(ctx, app)
		got, ok := oauth.AuthenticatedApp(withApp)
		require.True(t, ok)
		assert.Same(t, app, got)
		_, ok = oauth.AuthenticatedApp(ctx)
		assert.False(t, ok)

		again, err := srv.AuthenticateClient(withApp, e.app.ClientID, e.secret, "")
		require.NoError(t, err)
		assert.Same(t, app, again)
		assert.EqualValues(t, 1, store.apps.Load(), "no second lookup")

		_, err = srv.AuthenticateClient(withApp, e.app.ClientID, "wrong", "")
		assert.True(t, apierrors.HasCode(err, apierrors.CodeInvalidClient), "the secret is still checked: %v", err)

		_, err = srv.AuthenticateClient(withApp, e.other.ClientID, e.otherSec, "")
		require.NoError(t, err, "another client is looked up")
		assert.EqualValues(t, 2, store.apps.Load())
	})
}
