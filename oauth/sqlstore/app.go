package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// App returns the app with the client id, or oauth.ErrNotFound. Its lists
// are never nil. It reads through the function given to ReadAppsWith, when
// there is one.
func (s *Store) App(ctx context.Context, clientID string) (*oauth.App, error) {
	if s.queryRow != nil {
		return scanApp(s.queryRow(ctx, appSQL, clientID), s.dialect, clientID)
	}
	return findApp(ctx, s.autocommit(), clientID)
}

// Row is the row a [QueryRowFunc] returns. Scan copies its columns into
// dest, as database/sql's Row.Scan does: dest holds pointers to string,
// []byte (nil for NULL), bool and, for a timestamp on PostgreSQL,
// time.Time. Without a row, Scan returns an error that wraps
// [database/sql.ErrNoRows].
type Row interface {
	Scan(dest ...any) error
}

// QueryRowFunc runs query, a statement of the store's dialect whose
// parameters ($1, $2, ... on PostgreSQL) are bound to args, on the store's
// database, and returns its first row. pgx's pool is one, without
// database/sql between the pool and the statement:
//
//	store.ReadAppsWith(func(ctx context.Context, query string, args ...any) sqlstore.Row {
//		return pool.QueryRow(ctx, query, args...) // pool: a *pgxpool.Pool on the store's database
//	})
type QueryRowFunc func(ctx context.Context, query string, args ...any) Row

// ReadAppsWith makes App, which authenticates every client of the token,
// introspection and revocation endpoints, read the app through q rather
// than through database/sql. database/sql converts every column it reads
// and makes about fifty allocations per statement that a driver's own
// pool does not: through pgx's pool, a token request of the
// client-credentials grant in the reference server made about fifty
// allocations fewer, of some 180, and cost about a fifth less CPU. q must
// read the store's database (pgx's pool and a *sql.DB opened on the same
// pool through pgx/v5/stdlib share their connections), and see what the
// store commits as soon as it commits: App reads outside any transaction,
// like a statement of its own on the store's *sql.DB. Call it before the
// store is used; nil goes back to database/sql.
func (s *Store) ReadAppsWith(q QueryRowFunc) {
	s.queryRow = q
}

// appSQL reads an app by its client id.
const appSQL = `
		SELECT id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at, public,
			registration_token_hash, token_endpoint_auth_method
		FROM oauth_apps WHERE client_id = $1`

// CreateApp stores a new app; oauth.ErrDuplicate if its client id or id
// exists. A zero CreatedAt is set to the current time.
func (s *Store) CreateApp(ctx context.Context, app *oauth.App) error {
	if app.CreatedAt.IsZero() {
		app.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	err := s.audited(ctx, func(tx *tx) error { return insertApp(ctx, tx, app) })
	if s.isDuplicate(err) {
		return fmt.Errorf("sqlstore: create app %q: %w", app.ClientID, oauth.ErrDuplicate)
	}
	return err
}

// SetSecretHash replaces the app's secret hash; oauth.ErrNotFound if there
// is no such app.
func (s *Store) SetSecretHash(ctx context.Context, clientID string, hash []byte) error {
	return s.audited(ctx, func(tx *tx) error { return updateSecretHash(ctx, tx, clientID, hash) })
}

// findApp returns the app with the client id.
func findApp(ctx context.Context, tx *tx, clientID string) (*oauth.App, error) {
	return scanApp(tx.QueryRowContext(ctx, appSQL, clientID), tx.dialect, clientID)
}

// scanApp returns the app of client id clientID that row, of appSQL in
// dialect d, holds. Its destinations are plain ones, which a driver's own
// scanner (pgx's) fills without the conversions of a sql.Scanner: the
// lists' JSON text as bytes, and on PostgreSQL the timestamp as a
// time.Time (SQLite keeps it as text).
func scanApp(row Row, d query.Dialect, clientID string) (*oauth.App, error) {
	a := &oauth.App{ClientID: clientID}
	var scopes, branches, redirects []byte
	var created nullTime
	var createdDest any = &created
	if d == query.Postgres {
		createdDest = &a.CreatedAt
	}
	err := row.Scan(&a.ID, &a.Name, &a.OrganizationID, &scopes, &branches, &redirects, &a.SecretHash, createdDest, &a.Public,
		&a.RegistrationTokenHash, &a.TokenEndpointAuthMethod)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: app %q: %w", clientID, oauth.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: find app: %w", err)
	}
	for _, l := range [...]struct {
		text []byte
		p    *[]string
	}{{scopes, &a.Scopes}, {branches, &a.BranchIDs}, {redirects, &a.RedirectURIs}} {
		if err := decodeList(l.text, l.p); err != nil {
			return nil, fmt.Errorf("sqlstore: find app: %w", err)
		}
	}
	if d == query.Postgres {
		a.CreatedAt = a.CreatedAt.UTC()
	} else {
		a.CreatedAt = created.Time
	}
	return a, nil
}

// nullBytes returns b as a statement argument, NULL when it is empty.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// insertApp inserts the app. It returns the driver's error on a unique
// violation, for the caller to map.
func insertApp(ctx context.Context, tx *tx, a *oauth.App) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_apps (id, client_id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at, public,
			registration_token_hash, token_endpoint_auth_method)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		a.ID, a.ClientID, a.Name, a.OrganizationID, listArg(a.Scopes), listArg(a.BranchIDs),
		listArg(a.RedirectURIs), bytesArg(a.SecretHash), tx.timeArg(a.CreatedAt), a.Public,
		nullBytes(a.RegistrationTokenHash), a.TokenEndpointAuthMethod,
	)
	if err != nil {
		return fmt.Errorf("sqlstore: insert app: %w", err)
	}
	return nil
}

// updateSecretHash sets the app's secret hash.
func updateSecretHash(ctx context.Context, tx *tx, clientID string, hash []byte) error {
	res, err := tx.ExecContext(ctx, `UPDATE oauth_apps SET secret_hash = $1 WHERE client_id = $2`, bytesArg(hash), clientID)
	return oneRow(res, err, "set secret hash", clientID)
}

// RevokeClientFamilies revokes, at now, every unrevoked refresh token
// family of the client and returns how many; families revoked before are
// not counted. One UPDATE does it, so a family whose first token was
// committed before the call is revoked.
func (s *Store) RevokeClientFamilies(ctx context.Context, clientID string, now time.Time) (int, error) {
	tx := s.autocommit()
	res, err := tx.ExecContext(ctx, `UPDATE oauth_families SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL`,
		tx.timeArg(now), clientID)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: revoke client families: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: revoke client families: %w", err)
	}
	return int(n), nil
}
