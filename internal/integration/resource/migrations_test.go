package resource_test

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/resource"
)

// The registry's own migrations as package resource embeds them, read from
// its directory, and the table in which Registry.Migrate records them.
var (
	resourceMigrations = os.DirFS("../../../resource")
	migrationsTable    = "waybill_resource_migrations"
)

// The migration that makes idempotency keys per user keeps the keys stored
// before it, as keys of no user: a client-credentials token's key replays
// as it did, a user's token does not find one of them, and writes a key of
// its own beside it.
func TestMigrateKeysPerUser(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name    string
		dialect query.Dialect
		open    func(testing.TB) *sql.DB
	}{
		{"postgres", query.Postgres, testdb.Postgres},
		{"sqlite", query.SQLite, testdb.SQLite},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			d := b.dialect
			dir := "migrations/" + d.String()
			first, err := fs.ReadFile(resourceMigrations, dir+"/0001_idempotency.sql")
			require.NoError(t, err)
			_, err = migrate.Apply(ctx, db, d, fstest.MapFS{dir + "/0001_idempotency.sql": {Data: first}}, dir, migrationsTable)
			require.NoError(t, err)
			now := time.Now().UTC()
			text, args, err := sqlbuild.SQL(d, sq.Insert(idempotency.Table).
				Columns("organization_id", "client_id", "idempotency_key", "fingerprint", "status", "headers", "body", "created_at", "expires_at").
				Values("org-1", "client-1", "k1", "f1", 201, `{"Location":"/v1/b/accounts/1"}`, `{"data":{}}`, d.Timestamp(now), d.Timestamp(now.Add(time.Hour))))
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, text, args...)
			require.NoError(t, err)

			g := &resource.Registry{DB: db, Dialect: d}
			require.NoError(t, g.Migrate(ctx), "the registry takes the first migration as applied, in its table")
			require.NoError(t, g.Migrate(ctx), "migrating again changes nothing")
			files, err := fs.ReadDir(resourceMigrations, dir)
			require.NoError(t, err)
			var versions int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+migrationsTable).Scan(&versions))
			assert.Equal(t, len(files), versions, "%s records every migration of the registry", migrationsTable)
			store := idempotency.Store{Dialect: d} // the registry's store: its IdempotencyTTL and Now, both zero
			app := idempotency.Owner{OrganizationID: "org-1", ClientID: "client-1"}
			kept, err := store.Lookup(ctx, db, app, "k1")
			require.NoError(t, err)
			require.NotNil(t, kept, "the key stored before is kept")
			assert.Equal(t, "f1", kept.Fingerprint)
			assert.Equal(t, 201, kept.Status)
			assert.Equal(t, map[string]string{"Location": "/v1/b/accounts/1"}, kept.Headers)

			user := app
			user.UserID = "user-1"
			none, err := store.Lookup(ctx, db, user, "k1")
			require.NoError(t, err)
			assert.Nil(t, none, "a user's token does not see a key of no user")
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, store.Remember(ctx, tx, user, "k1", &idempotency.Answer{Fingerprint: "f2", Status: 200, Body: []byte(`{}`)}))
			require.NoError(t, tx.Commit())
			mine, err := store.Lookup(ctx, db, user, "k1")
			require.NoError(t, err)
			require.NotNil(t, mine)
			assert.Equal(t, "f2", mine.Fingerprint)
			kept, err = store.Lookup(ctx, db, app, "k1")
			require.NoError(t, err)
			assert.Equal(t, "f1", kept.Fingerprint, "each keeps its own")
		})
	}
}
