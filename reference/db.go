package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/numbering"
	"github.com/waybillhq/waybill/webhook"
)

// defaultDatabaseURL is the database of every command when neither
// --database-url nor WAYBILL_DATABASE_URL names one: a SQLite file in the
// working directory, so that the binary runs with nothing installed.
const defaultDatabaseURL = "sqlite://waybill.db"

// databaseURLFlag declares --database-url, bound to p, on fs: the flag of
// every command that opens a database.
func databaseURLFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "database-url", defaultDatabaseURL, "database `URL`: postgres://... (any pgx URL) or sqlite://PATH (relative, or absolute with a leading /)")
}

// migrationsTable records the versions of the reference server's own
// migrations. Libraries that keep tables of their own record theirs in
// tables of their own.
const migrationsTable = "waybill_schema_migrations"

// migrations holds the schema of the reference server, one directory per
// dialect, applied by migrateDB.
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// openTimeout bounds the first connection to the database.
const openTimeout = 30 * time.Second

// The pool of a PostgreSQL database. A request holds a connection only while
// its statements run, so a few connections serve many concurrent requests;
// every connection is a backend process of PostgreSQL, which admits
// max_connections of them (100 by default, 3 reserved for superusers) for
// every replica and tool together.
const (
	// defaultDBMaxConns is the default of --db-max-conns: enough to keep a
	// PostgreSQL server of 4 to 8 cores busy with one replica, small enough
	// that five replicas fit in PostgreSQL's default max_connections with
	// room for migrations, admin commands and psql.
	defaultDBMaxConns = 16
	// dbConnMaxLifetime retires a connection after this long, so that a
	// PostgreSQL failover or a change of the DNS name behind the URL is
	// picked up and no backend grows without bound.
	dbConnMaxLifetime = 30 * time.Minute
	// dbConnMaxIdleTime closes a connection unused for this long: after a
	// burst, the pool shrinks back to what the load needs.
	dbConnMaxIdleTime = 5 * time.Minute
)

// openDB opens the database that rawURL names and checks that it answers:
//
//   - postgres://... or postgresql://...: PostgreSQL, any URL that pgx
//     accepts, with the database/sql driver of pgx v5;
//   - sqlite://PATH: a SQLite file, with modernc.org/sqlite. PATH is
//     relative to the working directory, or absolute when it starts with /
//     (sqlite:///var/lib/waybill.db). Every connection has foreign keys on,
//     a busy timeout of 5 s, the WAL journal with synchronous FULL, and
//     begins its transactions with BEGIN IMMEDIATE, read-only ones apart,
//     and gathers the planner's statistics when it opens (PRAGMA
//     optimize=0x10002; see sqlitePragmas and sqliteOptimize).
//
// The pool of a PostgreSQL database (pgx's pgxpool, behind database/sql)
// opens at most maxConns connections and keeps them open while they are
// used: under steady load no request opens a connection of its own. When
// every connection is busy, the requests that need one queue and are served
// in the order they came (database/sql's own pool would hand a freed
// connection to any waiter, which stretches the slowest requests under
// load). A connection is retired after dbConnMaxLifetime, or after
// dbConnMaxIdleTime unused.
//
// The pool of a SQLite database holds a single connection, so that the
// statements of the process are serialized: they queue in database/sql,
// bounded by the request's deadline, rather than in SQLite's
// busy handler, which sleeps and polls (BenchmarkSQLiteHTTP measured a
// pool of 4 or 16 slower on every case, and a pool of 16 with five times
// the p99 latency of creates). Code that holds a
// transaction must therefore not use the *sql.DB until it ends. Other
// processes on the same file (a second server, an admin command) take
// turns with it through SQLite's locks: a transaction that is not read
// only holds the write lock from its BEGIN, so a transaction that reads
// then writes never fails with SQLITE_BUSY because another process wrote
// in between (SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out); it
// waits for the lock instead, up to the busy timeout or the request's
// deadline, past which the request is answered 503 with Retry-After.
// Read-only transactions (an export's snapshot) take no write lock.
func openDB(ctx context.Context, rawURL string, maxConns int) (*sql.DB, query.Dialect, error) {
	if maxConns < 1 {
		return nil, 0, fmt.Errorf("the database pool needs at least 1 connection, not %d", maxConns)
	}
	driver, dsn, dialect, err := parseDatabaseURL(rawURL)
	if err != nil {
		return nil, 0, err
	}
	var db *sql.DB
	switch dialect {
	case query.SQLite:
		path, _, _ := strings.Cut(dsn, "?")
		if info, err := os.Stat(filepath.Dir(path)); err != nil || !info.IsDir() {
			return nil, 0, fmt.Errorf("database URL %s: the directory %s does not exist; create it first (SQLite creates the file, not its directory)", rawURL, filepath.Dir(path))
		}
		if db, err = sql.Open(driver, dsn); err != nil {
			return nil, 0, fmt.Errorf("open database: %w", err)
		}
		db.SetMaxOpenConns(sqliteMaxConns)
		db.SetMaxIdleConns(sqliteMaxConns)
	default:
		config, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, 0, fmt.Errorf("database URL %s: %w", redactURL(rawURL), err)
		}
		config.ConnConfig.BuildContextWatcherHandler = cancelQuery
		statements := new(statementCounter)
		config.ConnConfig.Tracer = statements
		config.MaxConns = int32(min(maxConns, math.MaxInt32))
		config.MinConns = 0
		config.MaxConnLifetime = dbConnMaxLifetime
		config.MaxConnIdleTime = dbConnMaxIdleTime
		pool, err := pgxpool.NewWithConfig(ctx, config)
		if err != nil {
			return nil, 0, fmt.Errorf("database URL %s: %w", redactURL(rawURL), err)
		}
		connector := &poolConnector{Connector: stdlib.GetPoolConnector(pool), pool: pool}
		db = sql.OpenDB(connector)
		connector.db = db
		// database/sql keeps no connection of its own: each one goes back
		// to the pool as soon as it is released, where the request that
		// waited longest takes it.
		db.SetMaxIdleConns(0)
		pgPools.Store(db, &pgDatabase{pool: pool, statements: statements})
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, 0, fmt.Errorf("open database %s: %w", redactURL(rawURL), err)
	}
	return db, dialect, nil
}

// poolConnector is the driver.Connector of a PostgreSQL database: every
// connection that database/sql opens is one acquired from pool, and
// closing it releases it to pool. Closing the *sql.DB closes pool.
type poolConnector struct {
	driver.Connector
	pool *pgxpool.Pool
	db   *sql.DB // the database that uses it, the key of pgPools
}

// Close closes the pool; database/sql calls it once it closed its
// connections.
func (c *poolConnector) Close() error {
	pgPools.Delete(c.db)
	c.pool.Close()
	return nil
}

// pgDatabase is what openDB keeps of a PostgreSQL database besides its
// *sql.DB, for its metrics (metrics.watchDB).
type pgDatabase struct {
	pool       *pgxpool.Pool
	statements *statementCounter
}

// pgPools maps each PostgreSQL *sql.DB that openDB returned to its
// pgDatabase.
var pgPools sync.Map

// pgDatabaseOf returns the pgDatabase of a PostgreSQL *sql.DB that openDB
// returned, or nil for another database.
func pgDatabaseOf(db *sql.DB) *pgDatabase {
	p, _ := pgPools.Load(db)
	d, _ := p.(*pgDatabase)
	return d
}

// statementCounter counts the statements sent to PostgreSQL, as a pgx
// tracer: every query and command, BEGIN and COMMIT included.
type statementCounter struct{ n atomic.Int64 }

// TraceQueryStart implements pgx.QueryTracer.
func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// cancelGrace is how long a statement whose request is over (its client
// left, or its deadline passed) may take to stop once PostgreSQL was asked
// to cancel it, before its connection is closed instead.
const cancelGrace = 500 * time.Millisecond

// cancelQuery makes pgx cancel a running statement whose context ends by
// asking PostgreSQL to cancel it (a cancel request), so that the connection
// stays open for the next request. By default pgx closes the connection
// instead: under overload, when deadlines pass, that would turn every late
// statement into a new connection, a backend process forked at the worst
// moment. A PostgreSQL that does not answer within cancelGrace (a network
// partition) gets its connection closed all the same.
func cancelQuery(conn *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cancelGrace}
}

// parseDatabaseURL returns the database/sql driver, the DSN and the dialect
// of a database URL (see openDB).
func parseDatabaseURL(rawURL string) (driver, dsn string, dialect query.Dialect, err error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return "pgx", rawURL, query.Postgres, nil
	case strings.HasPrefix(rawURL, "sqlite://"):
		path, err := sqlitePath(rawURL)
		if err != nil {
			return "", "", 0, err
		}
		return "sqlite", path + "?" + sqlitePragmas, query.SQLite, nil
	default:
		return "", "", 0, errors.New("database URL must start with postgres://, postgresql:// or sqlite://")
	}
}

// sqlitePath returns the absolute path of the file that a sqlite:// URL
// names: what follows sqlite:// is a path, relative to the working directory
// unless it starts with /. Query parameters are not supported: the server
// sets the pragmas itself.
func sqlitePath(rawURL string) (string, error) {
	path := strings.TrimPrefix(rawURL, "sqlite://")
	switch {
	case path == "":
		return "", errors.New("database URL sqlite:// names no file; want sqlite://PATH, e.g. sqlite://waybill.db")
	case strings.ContainsAny(path, "?#"):
		return "", fmt.Errorf("database URL %s: a sqlite:// path may not hold ? or #", rawURL)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("database URL %s: %w", rawURL, err)
	}
	return abs, nil
}

// redactURL returns rawURL with its password hidden, for messages.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// migrateDB applies the reference server's migrations that db has not seen
// yet and returns their versions.
func migrateDB(ctx context.Context, db *sql.DB, dialect query.Dialect) ([]int, error) {
	applied, err := migrate.Apply(ctx, db, dialect, migrations, "migrations/"+dialect.String(), migrationsTable)
	if err != nil {
		return applied, err
	}
	if err := newOAuthStore(db, dialect).Migrate(ctx); err != nil {
		return applied, err
	}
	// The counters of the numbered resources: the schema above created
	// number_sequences already, with a foreign key to branches, and this
	// keeps it.
	if err := numbering.Migrate(ctx, db, dialect); err != nil {
		return applied, err
	}
	// The registry's own tables (the answers kept for idempotency keys),
	// the outbox of events, and the webhook endpoints and deliveries.
	return applied, (&webhook.API{Registry: &resource.Registry{DB: db, Dialect: dialect}}).Migrate(ctx)
}

// openAndMigrate opens the database that rawURL names, with a pool of at
// most maxConns connections (see openDB), and migrates it, as every command
// that opens a database does first. It returns the database, its dialect
// and the versions it applied. On SQLite, after migrations that it
// applied, it runs PRAGMA optimize (see sqliteOptimize).
func openAndMigrate(ctx context.Context, rawURL string, maxConns int) (*sql.DB, query.Dialect, []int, error) {
	db, dialect, err := openDB(ctx, rawURL, maxConns)
	if err != nil {
		return nil, 0, nil, err
	}
	applied, err := migrateDB(ctx, db, dialect)
	if err != nil {
		_ = db.Close()
		return nil, 0, nil, err
	}
	if dialect == query.SQLite && len(applied) > 0 {
		// The statistics of the indexes the migrations created, which the
		// connection's own PRAGMA optimize, run before them, did not see.
		if err := sqliteOptimize(ctx, db, true); err != nil {
			_ = db.Close()
			return nil, 0, nil, fmt.Errorf("PRAGMA optimize after the migrations: %w", err)
		}
	}
	return db, dialect, applied, nil
}
