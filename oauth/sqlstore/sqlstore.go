// Package sqlstore keeps the state of the OAuth token service (apps,
// authorization codes, refresh tokens and their families, consent grants and
// the signing key) in PostgreSQL or SQLite through database/sql.
//
// A [Store] implements [oauth.Store]. It works with any database/sql driver
// of either database; Waybill uses pgx v5 ("pgx") for PostgreSQL and
// modernc.org/sqlite ("sqlite") for SQLite, and the caller imports the driver
// it needs. [Store.Migrate] creates the tables, all named oauth_*, from
// migrations embedded in the package, and records them in the table
// oauth_schema_migrations, so the host application keeps its own migrations
// apart in the same database.
//
// Code redemption and refresh rotation are atomic across every process that
// shares the database: of concurrent rotations of one refresh token exactly
// one succeeds and the others are reuse. On PostgreSQL the store relies on
// row locks under READ COMMITTED; on SQLite every write transaction starts
// with BEGIN IMMEDIATE. Open SQLite with a busy timeout, so that writers wait
// for each other instead of failing with SQLITE_BUSY, and with foreign keys
// on:
//
//	db, err := sql.Open("sqlite", "oauth.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
//
// On PostgreSQL through pgx, [Store.ReadAppsWith] lets the read that
// authenticates every client of the token endpoints go to pgx's pool
// without database/sql; everything else goes through the *sql.DB.
//
// Timestamps are kept to the microsecond (finer digits are truncated) and
// read back in UTC. SQLite keeps them as text in the fixed-width layout
// [query.SQLiteTimestampLayout], so that text order is time order.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/internal/sqlerr"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// migrationsTable is the table in which Migrate records the versions it
// applied.
const migrationsTable = "oauth_schema_migrations"

// migrations holds one directory of migrations per dialect.
//
//go:embed migrations
var migrations embed.FS

// Store keeps the token service's state in a PostgreSQL or SQLite database.
// It implements [oauth.Store] and is safe for concurrent use, also by
// several processes sharing the database.
type Store struct {
	db      *sql.DB
	dialect query.Dialect
	sealer  *oauth.Sealer // encrypts the signing key at rest; nil: plain text
	uses    *useLog       // when RecordAppUse last wrote each app's use
	// purgeBatch is how many rows a statement of Purge deletes at most;
	// 0: defaultPurgeBatch.
	purgeBatch int
	// queryRow, when set, is how App reads (ReadAppsWith).
	queryRow QueryRowFunc
}

var _ oauth.Store = (*Store)(nil)

// New returns a Store on db, which speaks dialect d: [query.Postgres], through
// a database/sql driver such as pgx v5's ("github.com/jackc/pgx/v5/stdlib"),
// or [query.SQLite], SQLite 3.37 or later through a driver such as
// modernc.org/sqlite. It panics when d is neither. Call Migrate before the
// first use.
func New(db *sql.DB, d query.Dialect) *Store {
	if d != query.Postgres && d != query.SQLite {
		panic(fmt.Sprintf("sqlstore: unknown dialect %v", d))
	}
	return &Store{db: db, dialect: d, uses: &useLog{}}
}

// Migrate creates or updates the store's tables. It is safe to call on
// every start and from several processes at once; migrations already
// applied are skipped.
func (s *Store) Migrate(ctx context.Context) error {
	dir := "migrations/" + s.dialect.String()
	if _, err := migrate.Apply(ctx, s.db, s.dialect, migrations, dir, migrationsTable); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	if err := auditdb.Migrate(ctx, s.db, s.dialect); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return nil
}

// audited runs write on a transaction that also appends the audit log
// entry the token service gave with ctx (oauth.AuditEntry), or, when ctx
// carries none, on its own.
func (s *Store) audited(ctx context.Context, write func(tx *tx) error) error {
	e := oauth.AuditEntry(ctx)
	if e == nil {
		return write(s.autocommit())
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback(ctx)
	if err := write(tx); err != nil {
		return err
	}
	if err := auditdb.Append(ctx, tx, s.dialect, e); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return tx.commit(ctx)
}

// querier runs statements: a *sql.DB, a *sql.Tx or a *sql.Conn.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx is what the unexported helpers run their statements on: a write
// transaction that an exported method opened with begin, or, from
// autocommit, the *sql.DB itself for work of a single statement, which is
// atomic on its own. It carries the dialect, which the helpers need to
// encode timestamps.
type tx struct {
	querier
	dialect query.Dialect
	sqlTx   *sql.Tx   // PostgreSQL transaction
	conn    *sql.Conn // SQLite: the connection that ran BEGIN IMMEDIATE
	done    bool
}

// autocommit returns a tx that runs each statement in its own implicit
// transaction.
func (s *Store) autocommit() *tx {
	return &tx{querier: s.db, dialect: s.dialect, done: true}
}

// begin starts a write transaction. On PostgreSQL it is a READ COMMITTED
// transaction, whatever the server's default: the atomic updates rely on
// READ COMMITTED re-checking their WHERE clause after a concurrent update
// commits. On SQLite it starts with BEGIN IMMEDIATE on a dedicated
// connection, so that the transaction holds the write lock from its first
// read and two transactions never both read before writing; database/sql
// cannot start an immediate transaction itself. The caller defers rollback
// and calls commit.
func (s *Store) begin(ctx context.Context) (*tx, error) {
	if s.dialect == query.Postgres {
		sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: begin: %w", err)
		}
		return &tx{querier: sqlTx, dialect: s.dialect, sqlTx: sqlTx}, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: begin: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("sqlstore: begin: %w", err)
	}
	return &tx{querier: conn, dialect: s.dialect, conn: conn}, nil
}

// commit commits the transaction; when that fails it is rolled back.
func (tx *tx) commit(ctx context.Context) error {
	if tx.done {
		return nil
	}
	if tx.sqlTx != nil {
		tx.done = true
		if err := tx.sqlTx.Commit(); err != nil {
			return fmt.Errorf("sqlstore: commit: %w", err)
		}
		return nil
	}
	if _, err := tx.conn.ExecContext(ctx, "COMMIT"); err != nil {
		tx.rollback(ctx)
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	tx.done = true
	_ = tx.conn.Close()
	return nil
}

// rollback ends a transaction that was not committed; after commit it does
// nothing. On SQLite it rolls back even when ctx is done, and when that
// fails it discards the connection rather than return it to the pool with a
// transaction open.
func (tx *tx) rollback(ctx context.Context) {
	if tx.done {
		return
	}
	tx.done = true
	if tx.sqlTx != nil {
		_ = tx.sqlTx.Rollback()
		return
	}
	if _, err := tx.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		_ = tx.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = tx.conn.Close()
}

// timeArg returns t as a statement argument of the dialect (see
// query.Dialect.Timestamp), truncated to the microsecond.
func (tx *tx) timeArg(t time.Time) any {
	return tx.dialect.Timestamp(t.Truncate(time.Microsecond))
}

// nullTimeArg is timeArg, or NULL for the zero time.
func (tx *tx) nullTimeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return tx.timeArg(t)
}

// isDuplicate reports whether err is a unique violation.
func (s *Store) isDuplicate(err error) bool {
	return sqlerr.KindOf(err) == sqlerr.Unique
}

// nullTime scans a timestamp of either dialect: a time.Time from
// PostgreSQL, text in query.SQLiteTimestampLayout (or RFC 3339) from SQLite. NULL leaves
// Valid false.
type nullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (n *nullTime) Scan(src any) error {
	var err error
	switch v := src.(type) {
	case nil:
		*n = nullTime{}
		return nil
	case time.Time:
		n.Time = v.UTC()
	case string:
		n.Time, err = parseTime(v)
	case []byte:
		n.Time, err = parseTime(string(v))
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a timestamp", src)
	}
	n.Valid = err == nil
	return err
}

// parseTime parses a timestamp kept as text.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(query.SQLiteTimestampLayout, s)
	if err != nil {
		if t, err2 := time.Parse(time.RFC3339Nano, s); err2 == nil {
			return t.UTC(), nil
		}
		return time.Time{}, fmt.Errorf("sqlstore: bad timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

// list scans a list kept as a JSON array of strings into *p; an empty list
// (or JSON null) becomes an empty, non-nil slice.
type list struct{ p *[]string }

// Scan implements sql.Scanner.
func (l list) Scan(src any) error {
	var text []byte
	switch v := src.(type) {
	case string:
		text = []byte(v)
	case []byte:
		text = v
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a list", src)
	}
	return decodeList(text, l.p)
}

// decodeList decodes a list kept as a JSON array of strings into *p; an
// empty list (or JSON null) becomes an empty, non-nil slice.
//
// Every client authentication reads an app's three lists, so the lists
// that listArg writes and that hold nothing to decode (the empty list, most
// apps' redirect URIs; scopes and ids) are split without encoding/json;
// anything else, or anything the split is unsure of, goes to
// json.Unmarshal. FuzzDecodeList holds the two to the same answers.
func decodeList(text []byte, p *[]string) error {
	if string(text) == "[]" {
		*p = []string{}
		return nil
	}
	if l, ok := plainList(text); ok {
		*p = l
		return nil
	}
	var out []string
	if err := json.Unmarshal(text, &out); err != nil {
		return fmt.Errorf("sqlstore: bad list %q: %w", text, err)
	}
	if out == nil {
		out = []string{}
	}
	*p = out
	return nil
}

// plainList returns the strings of text when text is a JSON array of
// strings in the compact form of json.Marshal (no space between tokens)
// whose strings need no decoding: no escape, no control character, valid
// UTF-8. ok is false for any other text, even valid JSON. The strings share
// one allocation.
func plainList(text []byte) (l []string, ok bool) {
	if len(text) < 4 || text[0] != '[' || text[len(text)-1] != ']' || !utf8.Valid(text) {
		return nil, false
	}
	rest := string(text[1 : len(text)-1]) // `"a","b"`
	l = make([]string, 0, strings.Count(rest, ",")+1)
	for {
		if len(rest) < 2 || rest[0] != '"' {
			return nil, false
		}
		end := strings.IndexByte(rest[1:], '"') + 1 // the closing quote
		if end == 0 {
			return nil, false
		}
		s := rest[1:end]
		for i := range len(s) {
			if s[i] < 0x20 || s[i] == '\\' {
				return nil, false
			}
		}
		l = append(l, s)
		rest = rest[end+1:]
		if rest == "" {
			return l, true
		}
		if rest[0] != ',' {
			return nil, false
		}
		rest = rest[1:]
	}
}

// listArg returns the list as a statement argument: a JSON array, [] for a
// nil list.
func listArg(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // Unreachable: a []string always marshals.
	}
	return string(b)
}

// bytesArg returns b as a statement argument, an empty rather than a nil
// slice, which drivers would send as NULL.
func bytesArg(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// nullString returns s as a statement argument, NULL for "".
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
