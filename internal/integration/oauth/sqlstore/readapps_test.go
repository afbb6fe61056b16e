package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// TestReadAppsWith checks that App reads through the function given to
// ReadAppsWith, pgx's pool here, and reads every kind of app as it does
// through database/sql: a confidential app, a public one (empty secret
// hash), a registered one, one with empty lists; an unknown client id is
// oauth.ErrNotFound; nil goes back to database/sql.
func TestReadAppsWith(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := testdb.PostgresURL(t)
	db := openPools(t, "pgx", url, 1)[0]
	plain := newStore(t, db, query.Postgres)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	fast := sqlstore.New(db, query.Postgres)
	var reads atomic.Int64
	fast.ReadAppsWith(func(ctx context.Context, text string, args ...any) sqlstore.Row {
		reads.Add(1)
		return pool.QueryRow(ctx, text, args...)
	})

	created := time.Date(2026, 11, 27, 9, 30, 15, 123456000, time.UTC)
	apps := []*oauth.App{
		{ID: "a1", ClientID: "confidential", Name: "Dispatch", OrganizationID: "org-1", Scopes: []string{"svc:orders:read", "svc:quotations:write"},
			BranchIDs: []string{"b1", "b2"}, RedirectURIs: []string{"https://app.example/cb"}, SecretHash: []byte{1, 2, 3, 4}, CreatedAt: created},
		{ID: "a2", ClientID: "public", Name: "Phone", OrganizationID: "org-1", Scopes: []string{"svc:orders:read"},
			RedirectURIs: []string{"http://127.0.0.1/cb"}, Public: true, TokenEndpointAuthMethod: "none", CreatedAt: created},
		{ID: "a3", ClientID: "registered", Name: "Agent", OrganizationID: "org-2", Scopes: []string{"svc:trips:read"},
			SecretHash: []byte{9, 9}, RegistrationTokenHash: []byte{7, 7, 7}, TokenEndpointAuthMethod: "client_secret_post", CreatedAt: created},
		{ID: "a4", ClientID: "bare", Name: "Bare", OrganizationID: "org-3", SecretHash: []byte{5}, CreatedAt: created},
	}
	for _, a := range apps {
		require.NoError(t, plain.CreateApp(ctx, a))
	}
	for _, a := range apps {
		want, err := plain.App(ctx, a.ClientID)
		require.NoError(t, err)
		n := reads.Load()
		got, err := fast.App(ctx, a.ClientID)
		require.NoError(t, err, a.ClientID)
		assert.Equal(t, n+1, reads.Load(), "%s: App did not read through the function", a.ClientID)
		assert.Equal(t, want, got, a.ClientID)
		assert.NotNil(t, got.Scopes, "%s: Scopes", a.ClientID)
		assert.NotNil(t, got.BranchIDs, "%s: BranchIDs", a.ClientID)
		assert.NotNil(t, got.RedirectURIs, "%s: RedirectURIs", a.ClientID)
		assert.True(t, got.CreatedAt.Equal(created) && got.CreatedAt.Location() == time.UTC, "%s: CreatedAt %v", a.ClientID, got.CreatedAt)
	}

	_, err = fast.App(ctx, "nobody")
	assert.True(t, errors.Is(err, oauth.ErrNotFound), "unknown client id: %v", err)

	// A change committed through the store is seen by the next read.
	require.NoError(t, plain.SetSecretHash(ctx, "confidential", []byte{4, 3, 2, 1}))
	got, err := fast.App(ctx, "confidential")
	require.NoError(t, err)
	assert.Equal(t, []byte{4, 3, 2, 1}, got.SecretHash)

	// An error of the function's row is the store's, not a missing app.
	fast.ReadAppsWith(func(context.Context, string, ...any) sqlstore.Row { return errRow{errors.New("connection reset")} })
	_, err = fast.App(ctx, "confidential")
	require.Error(t, err)
	assert.False(t, errors.Is(err, oauth.ErrNotFound), "a failed read is not a missing app: %v", err)
	fast.ReadAppsWith(func(context.Context, string, ...any) sqlstore.Row { return errRow{sql.ErrNoRows} })
	_, err = fast.App(ctx, "confidential")
	assert.True(t, errors.Is(err, oauth.ErrNotFound), "sql.ErrNoRows: %v", err)

	n := reads.Load()
	fast.ReadAppsWith(nil)
	got, err = fast.App(ctx, "public")
	require.NoError(t, err)
	assert.Equal(t, "Phone", got.Name)
	assert.Equal(t, n, reads.Load(), "after ReadAppsWith(nil)")
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
