package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
)

// signingKeyName is the name of the row that holds the signing key.
const signingKeyName = "signing"

// SigningKey returns the signing key kept in the database, generating and
// storing one with oauth.GenerateKey on first use. Every Store sharing the
// database gets the same key, even when several start at once: the key is
// inserted only if the row is absent, then read back.
func (s *Store) SigningKey(ctx context.Context) (oauth.Key, error) {
	tx := s.autocommit()
	k, err := findKey(ctx, tx, signingKeyName)
	if !errors.Is(err, oauth.ErrNotFound) {
		return k, err
	}
	k, err = oauth.GenerateKey()
	if err != nil {
		return oauth.Key{}, err
	}
	if err := insertKeyIfAbsent(ctx, tx, signingKeyName, k, time.Now()); err != nil {
		return oauth.Key{}, err
	}
	// Another process may have won the insert: read what is stored.
	return findKey(ctx, tx, signingKeyName)
}

// findKey returns the key stored under name.
func findKey(ctx context.Context, tx *tx, name string) (oauth.Key, error) {
	var k oauth.Key
	err := tx.QueryRowContext(ctx, `SELECT id, secret FROM oauth_keys WHERE name = $1`, name).Scan(&k.ID, &k.Secret)
	if errors.Is(err, sql.ErrNoRows) {
		return oauth.Key{}, fmt.Errorf("sqlstore: key %q: %w", name, oauth.ErrNotFound)
	}
	if err != nil {
		return oauth.Key{}, fmt.Errorf("sqlstore: read key: %w", err)
	}
	return k, nil
}

// insertKeyIfAbsent stores k under name unless a key is stored there.
func insertKeyIfAbsent(ctx context.Context, tx *tx, name string, k oauth.Key, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_keys (name, id, secret, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO NOTHING`,
		name, k.ID, k.Secret, tx.timeArg(now),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: store key: %w", err)
	}
	return nil
}
