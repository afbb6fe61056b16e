package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/oauth"
)

var _ oauth.RegistrationStore = (*Store)(nil)

// SaveInitialAccessToken stores a new initial access token;
// oauth.ErrDuplicate if its hash exists.
func (s *Store) SaveInitialAccessToken(ctx context.Context, t *oauth.InitialAccessToken) error {
	err := s.audited(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_initial_access_tokens (hash, expires_at, created_at) VALUES ($1, $2, $3)`,
			bytesArg(t.Hash), tx.timeArg(t.ExpiresAt), tx.timeArg(t.CreatedAt))
		return err
	})
	if s.isDuplicate(err) {
		return fmt.Errorf("sqlstore: save initial access token: %w", oauth.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: save initial access token: %w", err)
	}
	return nil
}

// InitialAccessToken returns the initial access token with hash, expired
// or not, or oauth.ErrNotFound.
func (s *Store) InitialAccessToken(ctx context.Context, hash []byte) (*oauth.InitialAccessToken, error) {
	t := &oauth.InitialAccessToken{}
	var expires, created nullTime
	err := s.db.QueryRowContext(ctx, `SELECT hash, expires_at, created_at FROM oauth_initial_access_tokens WHERE hash = $1`,
		bytesArg(hash)).Scan(&t.Hash, &expires, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: initial access token: %w", oauth.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: initial access token: %w", err)
	}
	t.ExpiresAt, t.CreatedAt = expires.Time, created.Time
	return t, nil
}

// UpdateApp replaces the name, scopes, redirect URIs and
// token_endpoint_auth_method of the app with app.ClientID;
// oauth.ErrNotFound if there is none.
func (s *Store) UpdateApp(ctx context.Context, app *oauth.App) error {
	res, err := s.db.ExecContext(ctx, `
		UPDATE oauth_apps SET name = $1, scopes = $2, redirect_uris = $3, token_endpoint_auth_method = $4
		WHERE client_id = $5`,
		app.Name, listArg(app.Scopes), listArg(app.RedirectURIs), app.TokenEndpointAuthMethod, app.ClientID)
	return oneRow(res, err, "update app", app.ClientID)
}

// DeleteApp deletes the app with the client id; oauth.ErrNotFound if there
// is none.
func (s *Store) DeleteApp(ctx context.Context, clientID string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM oauth_apps WHERE client_id = $1`, clientID)
	return oneRow(res, err, "delete app", clientID)
}

// oneRow turns the result of a statement that must change the app with
// clientID into an error: the statement's, or oauth.ErrNotFound when it
// changed no row.
func oneRow(res sql.Result, err error, what, clientID string) error {
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlstore: app %q: %w", clientID, oauth.ErrNotFound)
	}
	return nil
}

var _ oauth.AuditLogStore = (*Store)(nil)

// AuditLog returns the organization's entries of the audit log, and those
// of the whole installation, oldest first (see audit.Log.List).
func (s *Store) AuditLog(ctx context.Context, organizationID, after string, limit int) ([]audit.Entry, string, error) {
	return (&auditdb.Log{DB: s.db, Dialect: s.dialect}).List(ctx, organizationID, after, limit)
}
