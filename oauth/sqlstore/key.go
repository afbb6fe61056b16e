package sqlstore

import (
	"context"
	"crypto"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// signingKeyName is the name of the row that holds the HS256 signing key.
const signingKeyName = "signing"

// signingKeyNames name the rows of the signing key of each algorithm. The
// HS256 row keeps the name it always had; an asymmetric key is stored as
// its PKCS #8 encoding, under a name of its own, so that a server that
// moves to ES256 or EdDSA (and back) finds each key where it left it, and
// no migration is needed.
var signingKeyNames = map[string]string{
	bearer.HS256: signingKeyName,
	bearer.ES256: "signing-es256",
	bearer.EdDSA: "signing-eddsa",
}

// The suffixes of the rows of a key rotation (see RotateSigningKey): the
// key that will sign next, and the one that signed before.
const (
	nextSuffix     = ".next"
	previousSuffix = ".previous"
)

// algOfRow returns the algorithm of the key stored under name, a name of
// signingKeyNames possibly followed by a rotation suffix.
func algOfRow(name string) string {
	name = strings.TrimSuffix(strings.TrimSuffix(name, nextSuffix), previousSuffix)
	for alg, n := range signingKeyNames {
		if n == name {
			return alg
		}
	}
	return bearer.HS256
}

// WithSealer returns a Store on the same database that keeps the signing
// keys encrypted at rest with sealer (AES-256-GCM under a secrets key,
// bound to its row), so that a copy of the database, a backup say, does
// not give away the key that signs every token:
//
//   - a key it generates is stored sealed;
//   - a key stored in plain text (before encryption was set up) is sealed
//     in place the first time SigningKey reads it;
//   - a key sealed with a previous secrets key of the sealer is read, and
//     left as it is until ReencryptKeys seals it with the current one.
//
// A Store without a sealer keeps its keys in plain text, and fails to read
// a sealed one (oauth.ErrUnknownSecretsKey).
func (s *Store) WithSealer(sealer *oauth.Sealer) *Store {
	c := *s
	c.sealer = sealer
	return &c
}

// SigningKey returns the HS256 signing key kept in the database,
// generating and storing one with bearer.GenerateKey on first use. Every
// Store sharing the database gets the same key, even when several start at
// once: the key is inserted only if the row is absent, then read back.
// With a sealer (see WithSealer) the key is stored encrypted, and a key
// stored in plain text is encrypted in place. A sealed key that the store
// cannot decrypt fails with oauth.ErrUnknownSecretsKey (no secrets key, or
// not the one that sealed it) or oauth.ErrUnsealFailed (the row was
// altered).
func (s *Store) SigningKey(ctx context.Context) (bearer.Key, error) {
	return s.SigningKeyFor(ctx, bearer.HS256)
}

// SigningKeyFor is SigningKey for a key of alg (bearer.HS256, ES256 or
// EdDSA): each algorithm has a key of its own, generated with
// bearer.GenerateKeyFor on first use and kept like the HS256 key, its
// private key sealed the same way.
func (s *Store) SigningKeyFor(ctx context.Context, alg string) (bearer.Key, error) {
	name, ok := signingKeyNames[alg]
	if !ok {
		return bearer.Key{}, fmt.Errorf("sqlstore: signing key: unknown algorithm %q (HS256, ES256 or EdDSA)", alg)
	}
	tx := s.autocommit()
	row, err := findKey(ctx, tx, name)
	if errors.Is(err, oauth.ErrNotFound) {
		row, err = s.generateKey(ctx, tx, name, alg)
	}
	if err != nil {
		return bearer.Key{}, err
	}
	k, err := s.openKey(row)
	if err != nil {
		return bearer.Key{}, err
	}
	if row.sealedBy == "" && s.sealer != nil {
		sealed, err := s.sealKey(row.name, k)
		if err != nil {
			return bearer.Key{}, err
		}
		if err := updateKey(ctx, tx, sealed, ""); err != nil {
			return bearer.Key{}, err
		}
	}
	return k, nil
}

// generateKey stores a new key of alg under name unless one is stored
// there, and returns the row stored: another process may have won the
// insert.
func (s *Store) generateKey(ctx context.Context, tx *tx, name, alg string) (keyRow, error) {
	k, err := bearer.GenerateKeyFor(alg)
	if err != nil {
		return keyRow{}, err
	}
	row, err := s.sealKey(name, k)
	if err != nil {
		return keyRow{}, err
	}
	if err := insertKeyIfAbsent(ctx, tx, row, time.Now()); err != nil {
		return keyRow{}, err
	}
	return findKey(ctx, tx, name)
}

// SigningKeysFor returns the keys of alg kept in the database: the current
// one, which SigningKeyFor returns (and generates on first use), and the
// others that verify beside it during a rotation (see RotateSigningKey):
// the next key, once staged, and the previous one, once the next took
// over. Pass them to bearer.NewKeySet(current, others...).
func (s *Store) SigningKeysFor(ctx context.Context, alg string) (current bearer.Key, others []bearer.Key, err error) {
	current, err = s.SigningKeyFor(ctx, alg)
	if err != nil {
		return bearer.Key{}, nil, err
	}
	tx := s.autocommit()
	name := signingKeyNames[alg]
	for _, n := range []string{name + nextSuffix, name + previousSuffix} {
		row, err := findKey(ctx, tx, n)
		if errors.Is(err, oauth.ErrNotFound) {
			continue
		}
		if err != nil {
			return bearer.Key{}, nil, err
		}
		k, err := s.openKey(row)
		if err != nil {
			return bearer.Key{}, nil, err
		}
		others = append(others, k)
	}
	return current, others, nil
}

// KeyRotation says what a step of RotateSigningKey did.
type KeyRotation struct {
	// Step is "staged" (a next key was generated: it verifies, and is
	// published, but does not sign yet) or "promoted" (the next key became
	// the current one, which signs; the current one became the previous,
	// which still verifies).
	Step string `json:"step"`
	// Current is the id of the key that signs once every server has
	// loaded the keys again.
	Current string `json:"current_kid"`
	// Next is the id of the staged key, after "staged".
	Next string `json:"next_kid,omitempty"`
	// Previous is the id of the key that only verifies, after "promoted".
	Previous string `json:"previous_kid,omitempty"`
}

// RotateSigningKey takes one step of the rotation of the signing key of
// alg, so that no server ever meets a token of a key it does not know:
//
//  1. with no next key, it stages one: a new key that every server loads
//     (at its next start) as a key that verifies, and publishes, without
//     signing;
//  2. with a next key, once every server has loaded it, it promotes it:
//     the next key becomes the current one, which signs from the servers'
//     next start, and the current key becomes the previous one, which
//     still verifies the tokens it signed; the key previous before is
//     dropped.
//
// Each step takes effect when the servers load their keys again
// (SigningKeysFor, at their start). Between the steps every server has to
// have loaded the staged key; after a promotion, the previous key should
// stay until the last token it signed expired, so wait an access token
// lifetime (and every server's restart) before the next rotation. The
// keys are moved sealed with the store's sealer (see WithSealer), which
// must open them. Each step appends signing_key.rotated to the audit log
// (package audit) in its transaction, an action of the whole installation,
// by the actor of ctx (audit.FromContext; the system without one).
func (s *Store) RotateSigningKey(ctx context.Context, alg string) (KeyRotation, error) {
	name, ok := signingKeyNames[alg]
	if !ok {
		return KeyRotation{}, fmt.Errorf("sqlstore: rotate signing key: unknown algorithm %q (HS256, ES256 or EdDSA)", alg)
	}
	if _, err := s.SigningKeyFor(ctx, alg); err != nil { // the current key, generated if need be
		return KeyRotation{}, err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return KeyRotation{}, err
	}
	defer tx.rollback(ctx)
	rows, err := allKeys(ctx, tx) // locks them on PostgreSQL
	if err != nil {
		return KeyRotation{}, err
	}
	byName := map[string]keyRow{}
	for _, row := range rows {
		byName[row.name] = row
	}
	current, next := byName[name], byName[name+nextSuffix]
	var rotation KeyRotation
	if next.id == "" {
		row, err := s.generateKey(ctx, tx, name+nextSuffix, alg)
		if err != nil {
			return KeyRotation{}, err
		}
		rotation = KeyRotation{Step: "staged", Current: current.id, Next: row.id}
	} else {
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_keys WHERE name = $1`, name+previousSuffix); err != nil {
			return KeyRotation{}, fmt.Errorf("sqlstore: rotate signing key: %w", err)
		}
		if err := s.moveKey(ctx, tx, current, name+previousSuffix); err != nil {
			return KeyRotation{}, err
		}
		if err := s.moveKey(ctx, tx, next, name); err != nil {
			return KeyRotation{}, err
		}
		rotation = KeyRotation{Step: "promoted", Current: next.id, Previous: current.id}
	}
	who, ok := audit.FromContext(ctx)
	if !ok {
		who = audit.Who{Actor: audit.Actor{Kind: audit.ActorSystem, ID: "sqlstore"}}
	}
	if err := auditdb.Append(ctx, tx, s.dialect, &audit.Entry{
		Action: audit.SigningKeyRotated, Actor: who.Actor, RemoteAddr: who.RemoteAddr,
		Target:  audit.Target{Kind: "signing_key", ID: rotation.Current},
		Details: map[string]any{"algorithm": alg, "step": rotation.Step, "next": rotation.Next, "previous": rotation.Previous},
	}); err != nil {
		return KeyRotation{}, fmt.Errorf("sqlstore: rotate signing key: %w", err)
	}
	return rotation, tx.commit(ctx)
}

// moveKey stores the key of row under name instead, sealed anew for its
// new row.
func (s *Store) moveKey(ctx context.Context, tx *tx, row keyRow, name string) error {
	k, err := s.openKey(row)
	if err != nil {
		return err
	}
	moved, err := s.sealKey(name, k)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE oauth_keys SET name = $1, secret = $2, sealed_by = $3 WHERE name = $4 AND id = $5`,
		moved.name, moved.secret, nullString(moved.sealedBy), row.name, row.id)
	if err != nil {
		return fmt.Errorf("sqlstore: rotate signing key: %w", err)
	}
	return nil
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
		sealed, err := s.sealKey(row.name, k)
		if err != nil {
			return 0, err
		}
		if err := updateKey(ctx, tx, sealed, row.sealedBy); err != nil {
			return 0, err
		}
		n++
	}
	return n, tx.commit(ctx)
}

// keyRow is a row of oauth_keys: a key as stored, its secret (the HMAC
// key, or the PKCS #8 encoding of a private key) sealed when sealedBy
// names the secrets key that sealed it.
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
func (s *Store) sealKey(name string, k bearer.Key) (keyRow, error) {
	secret := k.Secret
	if k.Private != nil {
		der, err := x509.MarshalPKCS8PrivateKey(k.Private)
		if err != nil {
			return keyRow{}, fmt.Errorf("sqlstore: encode key %q: %w", name, err)
		}
		secret = der
	}
	row := keyRow{name: name, id: k.ID, secret: secret}
	if s.sealer != nil {
		row.secret, row.sealedBy = s.sealer.Seal(secret, keyAD(name, k.ID))
	}
	return row, nil
}

// openKey returns the key that row stores, decrypted when sealed.
func (s *Store) openKey(row keyRow) (bearer.Key, error) {
	secret := row.secret
	if row.sealedBy != "" {
		if s.sealer == nil {
			return bearer.Key{}, fmt.Errorf("sqlstore: key %q is encrypted with secrets key %s, and the store has no secrets key: %w",
				row.name, row.sealedBy, oauth.ErrUnknownSecretsKey)
		}
		var err error
		if secret, err = s.sealer.Open(row.secret, keyAD(row.name, row.id), row.sealedBy); err != nil {
			return bearer.Key{}, fmt.Errorf("sqlstore: key %q: %w", row.name, err)
		}
	}
	alg := algOfRow(row.name)
	if alg == bearer.HS256 {
		return bearer.Key{ID: row.id, Secret: secret}, nil
	}
	private, err := x509.ParsePKCS8PrivateKey(secret)
	if err != nil {
		return bearer.Key{}, fmt.Errorf("sqlstore: key %q: %w", row.name, err)
	}
	signer, _ := private.(crypto.Signer)
	k := bearer.Key{ID: row.id, Private: signer}
	if k.Alg() != alg {
		return bearer.Key{}, fmt.Errorf("sqlstore: key %q is not an %s key", row.name, alg)
	}
	return k, nil
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
