package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
)

// SaveRefreshToken stores the first token of a new family, recording the
// family, authorized at t.AuthorizedAt (the current time when zero), unless
// it exists; oauth.ErrDuplicate if a token with the same hash exists. A
// family revoked before its first token is saved stays revoked.
func (s *Store) SaveRefreshToken(ctx context.Context, t *oauth.RefreshToken) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback(ctx)
	now := time.Now()
	authorized := t.AuthorizedAt
	if authorized.IsZero() {
		authorized = now
	}
	if err := insertFamilyIfAbsent(ctx, tx, t, authorized); err != nil {
		return err
	}
	if err := insertRefreshToken(ctx, tx, t, now); err != nil {
		if s.isDuplicate(err) {
			return fmt.Errorf("sqlstore: save refresh token: %w", oauth.ErrDuplicate)
		}
		return err
	}
	return tx.commit(ctx)
}

// RotateRefreshToken atomically spends the token with hash and stores its
// successor, newHash, in the same family with the same client, user,
// organization and scopes, expiring at expiresAt. It returns the spent
// token.
//
// A token spent before is reuse: the family is revoked (and that revocation
// committed) and the token is returned with oauth.ErrSpent. A token of a
// revoked family, spent or not, is returned with oauth.ErrRevoked; an
// unknown one gives oauth.ErrNotFound, and a newHash that exists
// oauth.ErrDuplicate (the token is then not spent).
//
// The token is spent by an UPDATE whose WHERE clause requires it unspent
// and its family unrevoked. On PostgreSQL a concurrent rotation waits for
// the row lock and, under READ COMMITTED, re-checks that clause once the
// first commits, so it finds the token spent; on SQLite the transaction
// holds the write lock from its start. Either way exactly one of concurrent
// rotations succeeds, on one replica or many.
func (s *Store) RotateRefreshToken(ctx context.Context, hash, newHash []byte, expiresAt, now time.Time) (*oauth.RefreshToken, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.rollback(ctx)
	old, err := rotateRefreshToken(ctx, tx, hash, newHash, expiresAt, now)
	switch {
	case err == nil, errors.Is(err, oauth.ErrSpent):
		// Commit the successor, or the revocation of a reused token's family.
		if cerr := tx.commit(ctx); cerr != nil {
			return nil, cerr
		}
		return old, err
	case s.isDuplicate(err):
		return nil, fmt.Errorf("sqlstore: rotate refresh token: %w", oauth.ErrDuplicate)
	}
	return old, err
}

// RefreshToken returns the token with hash, spent or not (Spent says
// which), or oauth.ErrNotFound.
func (s *Store) RefreshToken(ctx context.Context, hash []byte) (*oauth.RefreshToken, error) {
	t, _, err := findRefreshToken(ctx, s.autocommit(), hash)
	return t, err
}

// RevokeFamily revokes every token of the family, now and later: a family
// not recorded yet is recorded revoked, so tokens saved in it afterwards
// are revoked too. Revoking a revoked family keeps its first revocation
// time.
func (s *Store) RevokeFamily(ctx context.Context, familyID string, now time.Time) error {
	return revokeFamily(ctx, s.autocommit(), familyID, now)
}

// RevokeUserFamilies revokes, at now, every family of the user in the
// organization, or in every organization when organizationID is "", and
// returns how many it revoked; families revoked before are not counted.
// One UPDATE does it, so a family whose first token was committed before
// the call is revoked.
func (s *Store) RevokeUserFamilies(ctx context.Context, userID, organizationID string, now time.Time) (int, error) {
	return revokeUserFamilies(ctx, s.autocommit(), userID, organizationID, now)
}

// FamilyRevoked reports whether the family is revoked. An unknown family is
// not.
func (s *Store) FamilyRevoked(ctx context.Context, familyID string) (bool, error) {
	return familyRevoked(ctx, s.autocommit(), familyID)
}

// familyRevoked reports whether the family is recorded revoked.
func familyRevoked(ctx context.Context, tx *tx, familyID string) (bool, error) {
	var revoked bool
	err := tx.QueryRowContext(ctx, `SELECT revoked_at IS NOT NULL FROM oauth_families WHERE id = $1`, familyID).Scan(&revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlstore: family revoked: %w", err)
	}
	return revoked, nil
}

// rotateRefreshToken spends the token and inserts its successor; for a
// token it cannot spend it returns the reason, and for a spent one revokes
// the family too. The caller commits after success and after ErrSpent.
func rotateRefreshToken(ctx context.Context, tx *tx, hash, newHash []byte, expiresAt, now time.Time) (*oauth.RefreshToken, error) {
	old, err := spendRefreshToken(ctx, tx, hash, now)
	if errors.Is(err, errNoRows) {
		return refuseRotation(ctx, tx, hash, now)
	}
	if err != nil {
		return nil, err
	}
	next := *old
	next.Hash, next.ExpiresAt = newHash, expiresAt
	if err := insertRefreshToken(ctx, tx, &next, now); err != nil {
		return nil, err
	}
	return old, nil
}

// refuseRotation explains why the token with hash could not be spent:
// ErrNotFound, ErrRevoked, or ErrSpent after revoking its family.
func refuseRotation(ctx context.Context, tx *tx, hash []byte, now time.Time) (*oauth.RefreshToken, error) {
	t, state, err := findRefreshToken(ctx, tx, hash)
	switch {
	case err != nil:
		return nil, err
	case state.revoked:
		return t, fmt.Errorf("sqlstore: rotate refresh token: %w", oauth.ErrRevoked)
	case state.spent:
		if err := revokeFamily(ctx, tx, t.FamilyID, now); err != nil {
			return nil, err
		}
		return t, fmt.Errorf("sqlstore: rotate refresh token: %w", oauth.ErrSpent)
	}
	// Unreachable: spent_at and revoked_at are never cleared.
	return nil, fmt.Errorf("sqlstore: rotate refresh token: token neither spendable, spent nor revoked")
}

// refreshColumns are the token's columns that scanRefreshToken reads
// first, in its order.
const refreshColumns = "family_id, client_id, user_id, organization_id, scopes, expires_at, resource"

// familyAuthorizedAt is the expression, in a statement on
// oauth_refresh_tokens, of when the token's family was authorized: the
// family's created_at.
const familyAuthorizedAt = "(SELECT f.created_at FROM oauth_families f WHERE f.id = oauth_refresh_tokens.family_id)"

// scanRefreshToken scans refreshColumns, the family's authorization time,
// and then extra, into a token with hash.
func scanRefreshToken(row *sql.Row, hash []byte, extra ...any) (*oauth.RefreshToken, error) {
	t := &oauth.RefreshToken{Hash: hash}
	var expires, authorized nullTime
	dest := append([]any{&t.FamilyID, &t.ClientID, &t.UserID, &t.OrganizationID, list{&t.Scopes}, &expires, &t.Resource, &authorized}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	t.ExpiresAt, t.AuthorizedAt = expires.Time, authorized.Time
	return t, nil
}

// tokenState is whether a token is spent and whether its family is revoked.
type tokenState struct{ spent, revoked bool }

// findRefreshToken returns the token with hash and its state.
func findRefreshToken(ctx context.Context, tx *tx, hash []byte) (*oauth.RefreshToken, tokenState, error) {
	var state tokenState
	row := tx.QueryRowContext(ctx, `
		SELECT t.family_id, t.client_id, t.user_id, t.organization_id, t.scopes, t.expires_at, t.resource,
			f.created_at, t.spent_at IS NOT NULL, f.revoked_at IS NOT NULL
		FROM oauth_refresh_tokens t LEFT JOIN oauth_families f ON f.id = t.family_id
		WHERE t.hash = $1`, bytesArg(hash))
	t, err := scanRefreshToken(row, hash, &state.spent, &state.revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, state, fmt.Errorf("sqlstore: refresh token: %w", oauth.ErrNotFound)
	}
	if err != nil {
		return nil, state, fmt.Errorf("sqlstore: find refresh token: %w", err)
	}
	t.Spent = state.spent
	return t, state, nil
}

// spendRefreshToken marks the token spent if it is unspent and its family
// unrevoked, and returns it; errNoRows otherwise.
func spendRefreshToken(ctx context.Context, tx *tx, hash []byte, now time.Time) (*oauth.RefreshToken, error) {
	row := tx.QueryRowContext(ctx, `
		UPDATE oauth_refresh_tokens SET spent_at = $1
		WHERE hash = $2 AND spent_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM oauth_families f WHERE f.id = oauth_refresh_tokens.family_id AND f.revoked_at IS NOT NULL)
		RETURNING `+refreshColumns+`, `+familyAuthorizedAt,
		tx.timeArg(now), bytesArg(hash),
	)
	t, err := scanRefreshToken(row, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoRows
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: spend refresh token: %w", err)
	}
	return t, nil
}

// insertRefreshToken inserts the token, unspent, created at now. It returns
// the driver's error on a unique violation, for the caller to map.
func insertRefreshToken(ctx context.Context, tx *tx, t *oauth.RefreshToken, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_refresh_tokens (hash, family_id, client_id, user_id, organization_id, scopes, expires_at, created_at, resource)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		bytesArg(t.Hash), t.FamilyID, t.ClientID, t.UserID, t.OrganizationID, listArg(t.Scopes),
		tx.timeArg(t.ExpiresAt), tx.timeArg(now), t.Resource,
	)
	if err != nil {
		return fmt.Errorf("sqlstore: insert refresh token: %w", err)
	}
	return nil
}

// insertFamilyIfAbsent records the family of t, created (authorized) at
// now, unless it is recorded.
func insertFamilyIfAbsent(ctx context.Context, tx *tx, t *oauth.RefreshToken, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_families (id, client_id, user_id, organization_id, created_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`,
		t.FamilyID, t.ClientID, t.UserID, t.OrganizationID, tx.timeArg(now),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: insert family: %w", err)
	}
	return nil
}

// revokeFamily marks the family revoked at now unless it is revoked,
// recording it first if it is not recorded.
func revokeFamily(ctx context.Context, tx *tx, familyID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_families (id, created_at, revoked_at) VALUES ($1, $2, $2)
		ON CONFLICT (id) DO UPDATE SET revoked_at = excluded.revoked_at
		WHERE oauth_families.revoked_at IS NULL`,
		familyID, tx.timeArg(now),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: revoke family: %w", err)
	}
	return nil
}

// revokeUserFamilies marks revoked at now the unrevoked families of the
// user in the organization, or in every organization for "", and returns
// how many.
func revokeUserFamilies(ctx context.Context, tx *tx, userID, organizationID string, now time.Time) (int, error) {
	query := `UPDATE oauth_families SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL`
	args := []any{tx.timeArg(now), userID}
	if organizationID != "" {
		query += ` AND organization_id = $3`
		args = append(args, organizationID)
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: revoke user families: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: revoke user families: %w", err)
	}
	return int(n), nil
}
