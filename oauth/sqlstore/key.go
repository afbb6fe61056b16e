package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// signingKeyName is the name of the row that holds the signing key.
const signingKeyName = "signing"

// WithSealer returns a Store on the same database that keeps the signing
// key encrypted at rest with sealer (AES-256-GCM under a secrets key, bound
// to its row), so that a copy of the database, a backup say, does not give
// away the key that signs every token:
//
//   - a key it generates is stored sealed;
//   - a key stored in plain text (before encryption was set up) is sealed
//     in place the first time SigningKey reads it;
//   - a key sealed with a previous secrets key of the sealer is read, and
//     left as it is until ReencryptKeys seals it with the current one.
//
// A Store without a sealer keeps its key in plain text, and fails to read
// a sealed one (oauth.ErrUnknownSecretsKey).
func (s *Store) WithSealer(sealer *oauth.Sealer) *Store {
	c := *s
	c.sealer = sealer
	return &c
}

// SigningKey returns the signing key kept in the database, generating and
// storing one with bearer.GenerateKey on first use. Every Store sharing the
// database gets the same key, even when several start at once: the key is
// inserted only if the row is absent, then read back. With a sealer (see
// WithSealer) the key is stored encrypted, and a key stored in plain text
// is encrypted in place. A sealed key that the store cannot decrypt fails
// with oauth.ErrUnknownSecretsKey (no secrets key, or not the one that
// sealed it) or oauth.ErrUnsealFailed (the row was altered).
func (s *Store) SigningKey(ctx context.Context) (bearer.Key, error) {
	tx := s.autocommit()
	row, err := findKey(ctx, tx, signingKeyName)
	if errors.Is(err, oauth.ErrNotFound) {
		row, err = s.generateKey(ctx, tx, signingKeyName)
	}
	if err != nil {
		return bearer.Key{}, err
	}
	k, err := s.openKey(row)
	if err != nil {
		return bearer.Key{}, err
	}
	if row.sealedBy == "" && s.sealer != nil {
		if err := updateKey(ctx, tx, s.sealKey(row.name, k), ""); err != nil {
			return bearer.Key{}, err
		}
	}
	return k, nil
}

// generateKey stores a new key under name unless one is stored there,
// and returns the row stored: another process may have won the insert.
func (s *Store) generateKey(ctx context.Context, tx *tx, name string) (keyRow, error) {
	k, err := bearer.GenerateKey()
	if err != nil {
		return keyRow{}, err
	}
	if err := insertKeyIfAbsent(ctx, tx, s.sealKey(name, k), time.Now()); err != nil {
		return keyRow{}, err
	}
	return findKey(ctx, tx, name)
}

// ReencryptKeys seals, with the sealer's current secrets key, every stored
// key that is sealed with another one or kept in plain text, and returns
// how many it sealed. It is the last step of a rotation of the secrets key:
// once it is done, the previous secrets key may be dropped. It needs a
// sealer (see WithSealer) that opens every stored key; otherwise it
// changes nothing and fails.
func (s *Store) ReencryptKeys(ctx context.Context) (int, error) {
	if s.sealer == nil {
		return 0, errors.New("sqlstore: reencrypt keys: the store has no secrets key (see WithSealer)")
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.rollback(ctx)
	rows, err := allKeys(ctx, tx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, row := range rows {
		if row.sealedBy == s.sealer.KeyID() {
			continue
		}
		k, err := s.openKey(row)
		if err != nil {
			return 0, err
		}
		if err := updateKey(ctx, tx, s.sealKey(row.name, k), row.sealedBy); err != nil {
			return 0, err
		}
		n++
	}
	return n, tx.commit(ctx)
}

// keyRow is a row of oauth_keys: a key as stored, its secret sealed when
// sealedBy names the secrets key that sealed it.
type keyRow struct {
	name, id string
	secret   []byte
	sealedBy string
}

// keyAD is the additional data of a sealed key: its table and row, so that
// a sealed secret copied to another row does not decrypt.
func keyAD(name, id string) []byte {
	return []byte("oauth_keys/" + name + "/" + id)
}

// sealKey returns the row that stores k under name: sealed with the
// store's sealer, or in plain text without one.
func (s *Store) sealKey(name string, k bearer.Key) keyRow {
	row := keyRow{name: name, id: k.ID, secret: k.Secret}
	if s.sealer != nil {
		row.secret, row.sealedBy = s.sealer.Seal(k.Secret, keyAD(name, k.ID))
	}
	return row
}

// openKey returns the key that row stores, decrypted when sealed.
func (s *Store) openKey(row keyRow) (bearer.Key, error) {
	if row.sealedBy == "" {
		return bearer.Key{ID: row.id, Secret: row.secret}, nil
	}
	if s.sealer == nil {
		return bearer.Key{}, fmt.Errorf("sqlstore: key %q is encrypted with secrets key %s, and the store has no secrets key: %w",
			row.name, row.sealedBy, oauth.ErrUnknownSecretsKey)
	}
	secret, err := s.sealer.Open(row.secret, keyAD(row.name, row.id), row.sealedBy)
	if err != nil {
		return bearer.Key{}, fmt.Errorf("sqlstore: key %q: %w", row.name, err)
	}
	return bearer.Key{ID: row.id, Secret: secret}, nil
}

// keyColumns are the columns scanKey reads, in its order.
const keyColumns = "name, id, secret, sealed_by"

// scanKey scans keyColumns.
func scanKey(scan func(dest ...any) error) (keyRow, error) {
	var row keyRow
	var sealedBy sql.NullString
	if err := scan(&row.name, &row.id, &row.secret, &sealedBy); err != nil {
		return keyRow{}, err
	}
	row.sealedBy = sealedBy.String
	return row, nil
}

// findKey returns the row of the key stored under name.
func findKey(ctx context.Context, tx *tx, name string) (keyRow, error) {
	row, err := scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM oauth_keys WHERE name = $1`, name).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return keyRow{}, fmt.Errorf("sqlstore: key %q: %w", name, oauth.ErrNotFound)
	}
	if err != nil {
		return keyRow{}, fmt.Errorf("sqlstore: read key: %w", err)
	}
	return row, nil
}

// allKeys returns every stored key, locked for update on PostgreSQL (a
// SQLite transaction holds the write lock already).
func allKeys(ctx context.Context, tx *tx) ([]keyRow, error) {
	stmt := `SELECT ` + keyColumns + ` FROM oauth_keys ORDER BY name`
	if tx.dialect == query.Postgres {
		stmt += ` FOR UPDATE`
	}
	rows, err := tx.QueryContext(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read keys: %w", err)
	}
	defer rows.Close()
	var out []keyRow
	for rows.Next() {
		row, err := scanKey(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: read keys: %w", err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: read keys: %w", err)
	}
	return out, nil
}

// insertKeyIfAbsent stores row unless a key is stored under its name.
func insertKeyIfAbsent(ctx context.Context, tx *tx, row keyRow, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_keys (name, id, secret, sealed_by, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO NOTHING`,
		row.name, row.id, row.secret, nullString(row.sealedBy), tx.timeArg(now),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: store key: %w", err)
	}
	return nil
}

// updateKey stores row's secret and sealing over the stored key with its
// name and id, provided that key is still sealed with wasSealedBy ("" for
// plain text): of processes that seal the same key at once, one writes and
// the others change nothing.
func updateKey(ctx context.Context, tx *tx, row keyRow, wasSealedBy string) error {
	_, err := tx.ExecContext(ctx, `
		UPDATE oauth_keys SET secret = $1, sealed_by = $2
		WHERE name = $3 AND id = $4 AND COALESCE(sealed_by, '') = $5`,
		row.secret, nullString(row.sealedBy), row.name, row.id, wasSealedBy,
	)
	if err != nil {
		return fmt.Errorf("sqlstore: encrypt key: %w", err)
	}
	return nil
}
