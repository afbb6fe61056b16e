package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
)

// SaveCode stores a new code; oauth.ErrDuplicate if one with the same hash
// exists.
func (s *Store) SaveCode(ctx context.Context, c *oauth.Code) error {
	err := insertCode(ctx, s.autocommit(), c)
	if s.isDuplicate(err) {
		return fmt.Errorf("sqlstore: save code: %w", oauth.ErrDuplicate)
	}
	return err
}

// RedeemCode atomically marks the code with this hash used at now, records
// familyID as the refresh token family issued from it, and returns the
// code. For a code used before it returns the code as first redeemed (with
// that FamilyID) and oauth.ErrSpent; for an unknown one oauth.ErrNotFound.
// A single conditional UPDATE does the work, so of concurrent redemptions
// exactly one succeeds.
func (s *Store) RedeemCode(ctx context.Context, hash []byte, familyID string, now time.Time) (*oauth.Code, error) {
	tx := s.autocommit()
	c, err := markCodeUsed(ctx, tx, hash, familyID, now)
	if !errors.Is(err, errNoRows) {
		return c, err
	}
	c, used, err := findCode(ctx, tx, hash)
	switch {
	case err != nil:
		return nil, err
	case !used:
		// Saved after the UPDATE looked for it: it was not there then.
		return nil, fmt.Errorf("sqlstore: redeem code: %w", oauth.ErrNotFound)
	}
	return c, fmt.Errorf("sqlstore: redeem code: %w", oauth.ErrSpent)
}

// Code returns the code with this hash, redeemed or not (a redeemed code
// has its FamilyID), or oauth.ErrNotFound. It spends nothing.
func (s *Store) Code(ctx context.Context, hash []byte) (*oauth.Code, error) {
	c, _, err := findCode(ctx, s.autocommit(), hash)
	return c, err
}

// errNoRows is what the helpers of conditional updates return when no row
// qualified.
var errNoRows = errors.New("sqlstore: no row qualified")

// codeColumns are the columns scanCode reads, in its order.
const codeColumns = "client_id, user_id, organization_id, redirect_uri, challenge, scopes, expires_at, family_id, resource, nonce, auth_time"

// scanCode scans codeColumns, and then extra, into a code with hash.
func scanCode(row *sql.Row, hash []byte, extra ...any) (*oauth.Code, error) {
	c := &oauth.Code{Hash: hash}
	var expires, authTime nullTime
	var family, nonce sql.NullString
	dest := append([]any{&c.ClientID, &c.UserID, &c.OrganizationID, &c.RedirectURI, &c.Challenge, list{&c.Scopes}, &expires, &family, &c.Resource,
		&nonce, &authTime}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	c.ExpiresAt, c.FamilyID, c.Nonce, c.AuthTime = expires.Time, family.String, nonce.String, authTime.Time
	return c, nil
}

// insertCode inserts the code, unused. It returns the driver's error on a
// unique violation, for the caller to map.
func insertCode(ctx context.Context, tx *tx, c *oauth.Code) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_codes (hash, client_id, user_id, organization_id, redirect_uri, challenge, scopes, expires_at, family_id, resource,
			nonce, auth_time)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		bytesArg(c.Hash), c.ClientID, c.UserID, c.OrganizationID, c.RedirectURI, c.Challenge,
		listArg(c.Scopes), tx.timeArg(c.ExpiresAt), nullString(c.FamilyID), c.Resource,
		nullString(c.Nonce), tx.nullTimeArg(c.AuthTime),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: save code: %w", err)
	}
	return nil
}

// markCodeUsed marks the code used and records its family, if it is
// unused; errNoRows if there is no unused code with hash.
func markCodeUsed(ctx context.Context, tx *tx, hash []byte, familyID string, now time.Time) (*oauth.Code, error) {
	row := tx.QueryRowContext(ctx, `
		UPDATE oauth_codes SET used_at = $1, family_id = $2
		WHERE hash = $3 AND used_at IS NULL
		RETURNING `+codeColumns,
		tx.timeArg(now), nullString(familyID), bytesArg(hash),
	)
	c, err := scanCode(row, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoRows
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: redeem code: %w", err)
	}
	return c, nil
}

// findCode returns the code with hash and whether it was used.
func findCode(ctx context.Context, tx *tx, hash []byte) (*oauth.Code, bool, error) {
	var used bool
	row := tx.QueryRowContext(ctx, `SELECT `+codeColumns+`, used_at IS NOT NULL FROM oauth_codes WHERE hash = $1`, bytesArg(hash))
	c, err := scanCode(row, hash, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("sqlstore: code: %w", oauth.ErrNotFound)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: find code: %w", err)
	}
	return c, used, nil
}
