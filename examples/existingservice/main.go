// Command existingservice is an existing HTTP service — a fleet team's own
// API on its own SQLite database — that puts Waybill in front of its
// routes: the tenancy middleware (bearer token, scope, tenant), the
// ratelimit middleware (a quota per organization) and one resource of its
// own, "drivers", served by a resource.Registry. The tokens are the ones a
// running Waybill token service issues: this service verifies them with the
// same HMAC secret (-jwt-secret) and issuer (-issuer), and refuses those the
// token service revoked by reading its database (-waybill-db, read only).
//
// The same routes are served by a plain http.ServeMux (-router mux) or by
// chi (-router chi): the middleware and handlers are plain net/http.
//
//	go run ./examples/existingservice -jwt-secret "$SECRET" -issuer http://127.0.0.1:8080 \
//		-branch "$ORG:$BRANCH" [-waybill-db sqlite://waybill.db] [-addr 127.0.0.1:8090] [-db fleet.db] [-router mux|chi] [-rate 1000]
//
// See README.md for the whole walk-through next to the waybill binary.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "existingservice:", err)
		os.Exit(1)
	}
}

// config is what the command line says.
type config struct {
	addr, dbPath, secret, issuer, router string
	waybillDB                            string // the token service's database
	rate                                 int
	branches                             [][2]string // organization and branch ids
}

// parseFlags reads the command line.
func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("existingservice", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8090", "`address` to listen on; port 0 picks a free port")
	fs.StringVar(&c.dbPath, "db", "fleet.db", "`path` of the service's SQLite database, created and migrated at start")
	fs.StringVar(&c.secret, "jwt-secret", "", "the Waybill token service's --jwt-secret (required, at least 32 bytes)")
	fs.StringVar(&c.issuer, "issuer", "http://127.0.0.1:8080", "the Waybill token service's --issuer `URL`")
	fs.StringVar(&c.waybillDB, "waybill-db", "sqlite://waybill.db", "the Waybill token service's --database-url `URL`, read (never written) to refuse the tokens it revoked")
	fs.StringVar(&c.router, "router", "mux", "`router` that serves the routes: mux (http.ServeMux) or chi")
	fs.IntVar(&c.rate, "rate", 1000, "requests per minute of each organization; 0 disables the limit")
	fs.Func("branch", "`ORG:BRANCH`: the ids of a branch and its organization, recorded in the branches table (repeatable)", func(v string) error {
		org, branch, ok := strings.Cut(v, ":")
		if !ok || org == "" || branch == "" {
			return errors.New("want ORG:BRANCH, the ids of an organization and of one of its branches")
		}
		c.branches = append(c.branches, [2]string{org, branch})
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case c.secret == "":
		return config{}, errors.New("-jwt-secret is required: the token service's --jwt-secret")
	case c.router != "mux" && c.router != "chi":
		return config{}, fmt.Errorf("-router %q: want mux or chi", c.router)
	}
	return c, nil
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	keys, err := keySet(cfg.secret)
	if err != nil {
		return err
	}
	families, closeFamilies, err := openFamilies(ctx, cfg.waybillDB)
	if err != nil {
		return err
	}
	defer closeFamilies()
	db, err := openDB(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, b := range cfg.branches {
		if err := addBranch(ctx, db, b[0], b[1]); err != nil {
			return err
		}
	}
	svc, err := newService(db, newVerifier(keys, cfg.issuer, families), cfg.rate)
	if err != nil {
		return err
	}
	handler := svc.newMux()
	if cfg.router == "chi" {
		handler = svc.newChi()
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fleet service (%s router) listening on http://%s\n", cfg.router, ln.Addr())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// keySet returns the key set of the token service's --jwt-secret.
// bearer.SecretKey names the raw secret as the waybill binary does, so that
// the kid of every token it signs names this key.
func keySet(secret string) (*bearer.KeySet, error) {
	return bearer.NewKeySet(bearer.SecretKey([]byte(secret)))
}

// newVerifier returns the verifier of the token service's tokens. Like
// the waybill binary's own, it asks families whether the refresh token
// family of an authorization-code token was revoked (a revocation, a
// reused refresh token, a user removed from the organization, an app whose
// tokens were revoked), so that a revoked token is refused at once instead
// of at its expiry. Client-credentials tokens have no family and cost no
// lookup.
func newVerifier(keys *bearer.KeySet, issuer string, families bearer.FamilyChecker) *bearer.Verifier {
	return &bearer.Verifier{Keys: keys, Issuer: issuer, Families: families}
}

// openFamilies opens the token service's database, named by its
// --database-url (postgres://..., or sqlite://PATH for a SQLite file, read
// only), as the FamilyChecker of newVerifier, and checks that it holds the
// token service's tables. The returned function closes it.
func openFamilies(ctx context.Context, dbURL string) (bearer.FamilyChecker, func(), error) {
	driver, dsn, dialect := "pgx", dbURL, query.Postgres
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		path, ok := strings.CutPrefix(dbURL, "sqlite://")
		if !ok || path == "" {
			return nil, nil, errors.New("-waybill-db: want the token service's --database-url, postgres://... or sqlite://PATH")
		}
		driver, dsn, dialect = "sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)", query.SQLite
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("-waybill-db: %w", err)
	}
	store := sqlstore.New(db, dialect)
	if _, err := store.FamilyRevoked(ctx, "probe"); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("-waybill-db %s is not the database of a Waybill token service (start the token service, or run \"waybill migrate\" on it, first): %w", redacted(dbURL), err)
	}
	return store, func() { db.Close() }, nil
}

// redacted returns a database URL with its password hidden.
func redacted(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// migrations are the service's schema, applied in order, each once.
var migrations = []string{
	`CREATE TABLE branches (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL) STRICT`,
	`CREATE TABLE drivers (
		id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
		name TEXT NOT NULL, license_class TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1) STRICT`,
	`CREATE INDEX drivers_by_organization ON drivers (organization_id, created_at)`,
}

// openDB opens the SQLite database at path and applies the migrations it
// lacks. One connection, as SQLite writes one at a time.
func openDB(ctx context.Context, path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}

// migrate applies, in one transaction, the migrations that the database's
// user_version says it lacks, and records the new version.
func migrate(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
		return err
	}
	return tx.Commit()
}

// addBranch records a branch of an organization, as the service learns of
// it; recording it again changes nothing.
func addBranch(ctx context.Context, db *sql.DB, org, branch string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO branches (id, organization_id) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`,
		strings.ToLower(branch), strings.ToLower(org))
	return err
}
