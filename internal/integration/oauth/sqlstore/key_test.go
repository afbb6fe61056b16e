package sqlstore_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
)

// newSealer returns a sealer of a new random secrets key, and previous.
func newSealer(t *testing.T, previous ...oauth.SecretsKey) (*oauth.Sealer, oauth.SecretsKey) {
	t.Helper()
	b := make([]byte, oauth.SecretsKeySize)
	_, err := rand.Read(b)
	require.NoError(t, err)
	key, err := oauth.ParseSecretsKey(base64.StdEncoding.EncodeToString(b))
	require.NoError(t, err)
	s, err := oauth.NewSealer(key, previous...)
	require.NoError(t, err)
	return s, key
}

// storedKey is the signing key's row as stored.
type storedKey struct {
	id, sealedBy string
	secret       []byte
}

func readStoredKey(t *testing.T, db *sql.DB) storedKey {
	t.Helper()
	var k storedKey
	var sealedBy sql.NullString
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT id, secret, sealed_by FROM oauth_keys WHERE name = 'signing'`).
		Scan(&k.id, &k.secret, &sealedBy))
	k.sealedBy = sealedBy.String
	return k
}

func TestSealedSigningKey(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			t.Run("stored sealed", func(t *testing.T) {
				t.Parallel()
				db := dc.open(t)
				sealer, secretsKey := newSealer(t)
				s := newStore(t, db, dc.dialect).WithSealer(sealer)
				key, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				assert.GreaterOrEqual(t, len(key.Secret), bearer.MinKeyLength)

				stored := readStoredKey(t, db)
				assert.Equal(t, key.ID, stored.id)
				assert.Equal(t, secretsKey.ID(), stored.sealedBy)
				assert.NotContains(t, string(stored.secret), string(key.Secret), "the stored value is not the key")
				assert.Len(t, stored.secret, 12+len(key.Secret)+16, "nonce, ciphertext and tag")

				again, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				assert.Equal(t, key, again)
				assert.Equal(t, stored, readStoredKey(t, db), "reading changes nothing")

				_, err = sqlstore.New(db, dc.dialect).SigningKey(t.Context())
				assert.ErrorIs(t, err, oauth.ErrUnknownSecretsKey, "no secrets key")
				assert.ErrorContains(t, err, secretsKey.ID())
				other, _ := newSealer(t)
				_, err = sqlstore.New(db, dc.dialect).WithSealer(other).SigningKey(t.Context())
				assert.ErrorIs(t, err, oauth.ErrUnknownSecretsKey, "another secrets key")
			})
			t.Run("plain text key sealed in place", func(t *testing.T) {
				t.Parallel()
				db := dc.open(t)
				plain, err := newStore(t, db, dc.dialect).SigningKey(t.Context())
				require.NoError(t, err)
				stored := readStoredKey(t, db)
				require.Empty(t, stored.sealedBy)
				require.Equal(t, plain.Secret, stored.secret, "a store without a sealer keeps plain text")

				sealer, secretsKey := newSealer(t)
				s := sqlstore.New(db, dc.dialect).WithSealer(sealer)
				key, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				assert.Equal(t, plain, key, "the same key")
				stored = readStoredKey(t, db)
				assert.Equal(t, secretsKey.ID(), stored.sealedBy)
				assert.NotEqual(t, plain.Secret, stored.secret)
			})
			t.Run("rotation of the secrets key", func(t *testing.T) {
				t.Parallel()
				db := dc.open(t)
				oldSealer, oldKey := newSealer(t)
				key, err := newStore(t, db, dc.dialect).WithSealer(oldSealer).SigningKey(t.Context())
				require.NoError(t, err)

				rotating, newKey := newSealer(t, oldKey)
				s := sqlstore.New(db, dc.dialect).WithSealer(rotating)
				got, err := s.SigningKey(t.Context())
				require.NoError(t, err, "the previous secrets key opens")
				assert.Equal(t, key, got)
				assert.Equal(t, oldKey.ID(), readStoredKey(t, db).sealedBy, "left as it is until reencrypted")

				n, err := s.ReencryptKeys(t.Context())
				require.NoError(t, err)
				assert.Equal(t, 1, n)
				assert.Equal(t, newKey.ID(), readStoredKey(t, db).sealedBy)
				n, err = s.ReencryptKeys(t.Context())
				require.NoError(t, err)
				assert.Zero(t, n, "nothing left")

				onlyNew, err := oauth.NewSealer(newKey)
				require.NoError(t, err)
				got, err = sqlstore.New(db, dc.dialect).WithSealer(onlyNew).SigningKey(t.Context())
				require.NoError(t, err)
				assert.Equal(t, key, got)
				_, err = sqlstore.New(db, dc.dialect).WithSealer(oldSealer).SigningKey(t.Context())
				assert.ErrorIs(t, err, oauth.ErrUnknownSecretsKey, "the old secrets key is no longer needed, nor enough")
			})
			t.Run("reencrypt plain text and refusals", func(t *testing.T) {
				t.Parallel()
				db := dc.open(t)
				s := newStore(t, db, dc.dialect)
				_, err := s.ReencryptKeys(t.Context())
				assert.ErrorContains(t, err, "no secrets key")
				sealer, secretsKey := newSealer(t)
				n, err := s.WithSealer(sealer).ReencryptKeys(t.Context())
				require.NoError(t, err)
				assert.Zero(t, n, "no key yet")

				key, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				n, err = s.WithSealer(sealer).ReencryptKeys(t.Context())
				require.NoError(t, err)
				assert.Equal(t, 1, n)
				assert.Equal(t, secretsKey.ID(), readStoredKey(t, db).sealedBy)

				other, _ := newSealer(t)
				_, err = s.WithSealer(other).ReencryptKeys(t.Context())
				assert.ErrorIs(t, err, oauth.ErrUnknownSecretsKey)
				assert.Equal(t, secretsKey.ID(), readStoredKey(t, db).sealedBy, "a failed reencryption changes nothing")
				got, err := s.WithSealer(sealer).SigningKey(t.Context())
				require.NoError(t, err)
				assert.Equal(t, key, got)
			})
			t.Run("bound to its row", func(t *testing.T) {
				t.Parallel()
				db := dc.open(t)
				sealer, _ := newSealer(t)
				s := newStore(t, db, dc.dialect).WithSealer(sealer)
				_, err := s.SigningKey(t.Context())
				require.NoError(t, err)
				_, err = db.ExecContext(t.Context(), `UPDATE oauth_keys SET id = 'forged-kid' WHERE name = 'signing'`)
				require.NoError(t, err)
				_, err = s.SigningKey(t.Context())
				assert.ErrorIs(t, err, oauth.ErrUnsealFailed, "a sealed secret under another key id does not decrypt")
			})
		})
	}
}
