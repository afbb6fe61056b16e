package oauthtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// TestRegistrationStore runs the conformance suite of
// [oauth.RegistrationStore] against the stores newStore returns, which must
// implement it. Every call of newStore must return a new, empty, migrated
// store; the subtests run in parallel, each on its own store.
//
// Beyond the documentation of the interface, the suite requires that an
// expired initial access token is still returned (expiry is the caller's to
// check), that UpdateApp changes the name, scopes, redirect URIs and
// token_endpoint_auth_method of that app alone and keeps its secret and
// registration access token, and that a deleted app is gone for App and for
// a second DeleteApp.
func TestRegistrationStore(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	registration := func(t *testing.T) registrationStore {
		s := newStore(t)
		rs, ok := s.(oauth.RegistrationStore)
		require.True(t, ok, "%T does not implement oauth.RegistrationStore", s)
		return registrationStore{s, rs}
	}
	t.Run("initial access tokens", func(t *testing.T) {
		t.Parallel()
		s := registration(t)
		expired := &oauth.InitialAccessToken{Hash: randomHash(), ExpiresAt: base.Add(-time.Minute), CreatedAt: base.Add(-time.Hour)}
		live := &oauth.InitialAccessToken{Hash: randomHash(), ExpiresAt: base.Add(24 * time.Hour), CreatedAt: base}
		for _, tok := range []*oauth.InitialAccessToken{expired, live} {
			require.NoError(t, s.SaveInitialAccessToken(t.Context(), tok))
		}
		require.ErrorIs(t, s.SaveInitialAccessToken(t.Context(), &oauth.InitialAccessToken{Hash: live.Hash, ExpiresAt: base, CreatedAt: base}),
			oauth.ErrDuplicate)
		for _, want := range []*oauth.InitialAccessToken{expired, live} {
			got, err := s.InitialAccessToken(t.Context(), want.Hash)
			require.NoError(t, err)
			assert.Equal(t, want.Hash, got.Hash)
			assertTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
			assertTime(t, want.CreatedAt, got.CreatedAt, "CreatedAt")
		}
		_, err := s.InitialAccessToken(t.Context(), randomHash())
		require.ErrorIs(t, err, oauth.ErrNotFound)
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		s := registration(t)
		app, other := registeredApp(), registeredApp()
		require.NoError(t, s.CreateApp(t.Context(), app))
		require.NoError(t, s.CreateApp(t.Context(), other))
		changed := *app
		changed.Name, changed.Scopes, changed.RedirectURIs = "Renamed agent", []string{"svc:orders:read"}, []string{"https://agent.example/cb2", "http://127.0.0.1:9000/cb"}
		changed.TokenEndpointAuthMethod = "client_secret_basic"
		require.NoError(t, s.UpdateApp(t.Context(), &changed))
		got, err := s.App(t.Context(), app.ClientID)
		require.NoError(t, err)
		assertApp(t, &changed, got)
		got, err = s.App(t.Context(), other.ClientID)
		require.NoError(t, err)
		assertApp(t, other, got)

		missing := registeredApp()
		require.ErrorIs(t, s.UpdateApp(t.Context(), missing), oauth.ErrNotFound)
		_, err = s.App(t.Context(), missing.ClientID)
		require.ErrorIs(t, err, oauth.ErrNotFound, "an update of an unknown app created it")
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		s := registration(t)
		app, other := registeredApp(), registeredApp()
		require.NoError(t, s.CreateApp(t.Context(), app))
		require.NoError(t, s.CreateApp(t.Context(), other))
		require.NoError(t, s.DeleteApp(t.Context(), app.ClientID))
		_, err := s.App(t.Context(), app.ClientID)
		require.ErrorIs(t, err, oauth.ErrNotFound)
		require.ErrorIs(t, s.DeleteApp(t.Context(), app.ClientID), oauth.ErrNotFound)
		got, err := s.App(t.Context(), other.ClientID)
		require.NoError(t, err)
		assertApp(t, other, got)
	})
}

// registrationStore is a store under test and its RegistrationStore.
type registrationStore struct {
	oauth.Store
	oauth.RegistrationStore
}

// registeredApp returns a new app as Dynamic Client Registration makes one.
func registeredApp() *oauth.App {
	app := newApp()
	app.OrganizationID, app.BranchIDs = "", []string{}
	app.RegistrationTokenHash, app.TokenEndpointAuthMethod = randomHash(), "client_secret_post"
	return app
}
