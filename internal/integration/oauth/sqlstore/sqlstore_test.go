package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/oauthtest"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// sqlitePragmas are the settings the package documentation asks SQLite
// connections to have; testdb.SQLite sets the same.
const sqlitePragmas = "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"

// migrationsDir is the directory of the migrations that sqlstore embeds.
const migrationsDir = "../../../../oauth/sqlstore/migrations"

// dialects are the databases every test runs on: how to open a database of
// its own for a test, and how to open several pools on one shared database,
// as replicas of a service do.
var dialects = []struct {
	name    string
	dialect query.Dialect
	open    func(t *testing.T) *sql.DB
	shared  func(t *testing.T, n int) []*sql.DB
}{
	{"postgres", query.Postgres, func(t *testing.T) *sql.DB { return testdb.Postgres(t) }, func(t *testing.T, n int) []*sql.DB {
		return openPools(t, "pgx", testdb.PostgresURL(t), n)
	}},
	// PostgreSQL with App reading through pgx's pool (ReadAppsWith), the
	// *sql.DB opened on the same pool.
	{"postgres-pgxpool", query.Postgres, func(t *testing.T) *sql.DB { return openPgxPools(t, testdb.PostgresURL(t), 1)[0] }, func(t *testing.T, n int) []*sql.DB {
		return openPgxPools(t, testdb.PostgresURL(t), n)
	}},
	{"sqlite", query.SQLite, func(t *testing.T) *sql.DB { return testdb.SQLite(t) }, func(t *testing.T, n int) []*sql.DB {
		return openPools(t, "sqlite", testdb.SQLitePath(t)+sqlitePragmas, n)
	}},
}

// openPools opens n pools on one database, closed in t.Cleanup.
func openPools(t *testing.T, driver, dsn string, n int) []*sql.DB {
	dbs := make([]*sql.DB, n)
	for i := range dbs {
		db, err := sql.Open(driver, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		db.SetMaxOpenConns(8)
		dbs[i] = db
	}
	return dbs
}

// pgxPools are the pools of pgx under the *sql.DB that openPgxPools
// opened.
var pgxPools sync.Map // *sql.DB → *pgxpool.Pool

// openPgxPools opens n pools of pgx on one database, each with a *sql.DB
// on it, closed in t.Cleanup; newStore reads apps of a store on such a
// *sql.DB through its pool.
func openPgxPools(t *testing.T, url string, n int) []*sql.DB {
	dbs := make([]*sql.DB, n)
	for i := range dbs {
		cfg, err := pgxpool.ParseConfig(url)
		require.NoError(t, err)
		cfg.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
		require.NoError(t, err)
		db := stdlib.OpenDBFromPool(pool)
		pgxPools.Store(db, pool)
		t.Cleanup(func() {
			_ = db.Close()
			pool.Close()
			pgxPools.Delete(db)
		})
		dbs[i] = db
	}
	return dbs
}

// newStore returns a migrated store on db.
func newStore(t *testing.T, db *sql.DB, d query.Dialect) *sqlstore.Store {
	t.Helper()
	s := sqlstore.New(db, d)
	if p, ok := pgxPools.Load(db); ok {
		pool := p.(*pgxpool.Pool)
		s.ReadAppsWith(func(ctx context.Context, text string, args ...any) sqlstore.Row {
			return pool.QueryRow(ctx, text, args...)
		})
	}
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

func TestConformance(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			oauthtest.TestStore(t, func(t *testing.T) oauth.Store {
				return newStore(t, dc.open(t), dc.dialect)
			})
		})
	}
}

func TestConnectedAppStoreConformance(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			oauthtest.TestConnectedAppStore(t, func(t *testing.T) oauth.Store {
				return newStore(t, dc.open(t), dc.dialect)
			})
		})
	}
}

func TestRegistrationStoreConformance(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			oauthtest.TestRegistrationStore(t, func(t *testing.T) oauth.Store {
				return newStore(t, dc.open(t), dc.dialect)
			})
		})
	}
}

func TestMigrateTwice(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			db := dc.open(t)
			s := newStore(t, db, dc.dialect)
			require.NoError(t, s.CreateApp(t.Context(), &oauth.App{ID: "a1", ClientID: "c1", Name: "App"}))
			require.NoError(t, s.Migrate(t.Context()), "second Migrate")
			app, err := s.App(t.Context(), "c1")
			require.NoError(t, err, "the second Migrate lost data")
			assert.Equal(t, "App", app.Name)
			files, err := os.ReadDir(filepath.Join(migrationsDir, dc.dialect.String()))
			require.NoError(t, err)
			var n int
			require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM oauth_schema_migrations").Scan(&n))
			assert.Equal(t, len(files), n, "one version recorded per migration")
		})
	}
}

func TestSigningKey(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			t.Run("same key twice", func(t *testing.T) {
				t.Parallel()
				s := newStore(t, dc.open(t), dc.dialect)
				first, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				assert.NotEmpty(t, first.ID)
				assert.GreaterOrEqual(t, len(first.Secret), bearer.MinKeyLength)
				second, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				assert.Equal(t, first, second)
			})
			t.Run("replicas starting at once", func(t *testing.T) {
				t.Parallel()
				const replicas = 4
				dbs := dc.shared(t, replicas)
				keys := make([]bearer.Key, replicas)
				errs := make([]error, replicas)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i, db := range dbs {
					wg.Go(func() {
						<-start
						s := sqlstore.New(db, dc.dialect)
						if errs[i] = s.Migrate(t.Context()); errs[i] == nil {
							keys[i], errs[i] = s.SigningKey(t.Context())
						}
					})
				}
				close(start)
				wg.Wait()
				for i := range replicas {
					require.NoError(t, errs[i], "replica %d", i)
					assert.Equal(t, keys[0], keys[i], "replica %d got another key", i)
				}
				assert.NotEmpty(t, keys[0].ID)
			})
		})
	}
}

// TestRotationAcrossReplicas rotates one refresh token from several stores,
// each on its own pool of one database, as replicas of the service do:
// exactly one rotation succeeds.
func TestRotationAcrossReplicas(t *testing.T) {
	const replicas, perReplica = 3, 10
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			dbs := dc.shared(t, replicas)
			stores := make([]*sqlstore.Store, replicas)
			for i, db := range dbs {
				stores[i] = sqlstore.New(db, dc.dialect)
			}
			require.NoError(t, stores[0].Migrate(t.Context()))
			rt := &oauth.RefreshToken{Hash: []byte("first"), FamilyID: "f1", ClientID: "c1", UserID: "u1", OrganizationID: "o1"}
			require.NoError(t, stores[0].SaveRefreshToken(t.Context(), rt))

			n := replicas * perReplica
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					next := []byte{'n', byte(i)}
					_, errs[i] = stores[i%replicas].RotateRefreshToken(t.Context(), rt.Hash, next, rt.ExpiresAt, rt.ExpiresAt)
				})
			}
			close(start)
			wg.Wait()
			var ok int
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, oauth.ErrSpent), errors.Is(err, oauth.ErrRevoked):
				default:
					t.Errorf("rotation %d: %v", i, err)
				}
			}
			assert.Equal(t, 1, ok, "successful rotations: %v", errs)
			revoked, err := stores[1].FamilyRevoked(t.Context(), "f1")
			require.NoError(t, err)
			assert.True(t, revoked)
		})
	}
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
