package sqlstore_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
)

// Each algorithm has a key of its own in the database, kept sealed like
// the HS256 key, and read back as the same key.
func TestSigningKeyFor(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			db := dc.open(t)
			plain := newStore(t, db, dc.dialect)
			hs, err := plain.SigningKey(t.Context())
			require.NoError(t, err)
			ed, err := plain.SigningKeyFor(t.Context(), bearer.EdDSA)
			require.NoError(t, err, "a plain-text store keeps its keys in plain text")
			assert.Equal(t, bearer.EdDSA, ed.Alg())

			sealer, secretsKey := newSealer(t)
			s := plain.WithSealer(sealer)
			ec, err := s.SigningKeyFor(t.Context(), bearer.ES256)
			require.NoError(t, err)
			assert.Equal(t, bearer.ES256, ec.Alg())
			again, err := s.SigningKeyFor(t.Context(), bearer.ES256)
			require.NoError(t, err)
			assert.Equal(t, ec.ID, again.ID)
			assert.True(t, ec.Private.(*ecdsa.PrivateKey).Equal(again.Private), "the same private key is read back")

			edAgain, err := s.SigningKeyFor(t.Context(), bearer.EdDSA)
			require.NoError(t, err)
			assert.Equal(t, ed.Private.(ed25519.PrivateKey), edAgain.Private.(ed25519.PrivateKey))
			hsAgain, err := s.SigningKey(t.Context())
			require.NoError(t, err)
			assert.Equal(t, hs, hsAgain, "the HS256 key stays where it was")
			assert.NotEqual(t, hs.ID, ec.ID)

			var sealedBy sql.NullString
			for _, name := range []string{"signing", "signing-es256", "signing-eddsa"} {
				require.NoError(t, db.QueryRowContext(t.Context(), `SELECT sealed_by FROM oauth_keys WHERE name = $1`, name).Scan(&sealedBy))
				assert.Equal(t, secretsKey.ID(), sealedBy.String, "%s is sealed (in place, for the plain ones)", name)
			}
			_, err = plain.SigningKeyFor(t.Context(), bearer.ES256)
			assert.ErrorIs(t, err, oauth.ErrUnknownSecretsKey)

			next, _ := newSealer(t, secretsKey)
			n, err := plain.WithSealer(next).ReencryptKeys(t.Context())
			require.NoError(t, err)
			assert.Equal(t, 3, n)
			ecNext, err := plain.WithSealer(next).SigningKeyFor(t.Context(), bearer.ES256)
			require.NoError(t, err)
			assert.True(t, ec.Private.(*ecdsa.PrivateKey).Equal(ecNext.Private))

			_, err = s.SigningKeyFor(t.Context(), "RS256")
			assert.ErrorContains(t, err, "unknown algorithm")
		})
	}
}

// A rotation stages a next key, which verifies and is published but does
// not sign, then promotes it; the key before stays as the previous one
// until the next promotion. Every key stays sealed.
func TestRotateSigningKey(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			db := dc.open(t)
			sealer, secretsKey := newSealer(t)
			s := newStore(t, db, dc.dialect).WithSealer(sealer)
			ids := func(current bearer.Key, others []bearer.Key) []string {
				out := []string{current.ID}
				for _, k := range others {
					out = append(out, k.ID)
				}
				return out
			}
			keys := func() (bearer.Key, []bearer.Key) {
				current, others, err := s.SigningKeysFor(t.Context(), bearer.ES256)
				require.NoError(t, err)
				ks, err := bearer.NewKeySet(current, others...)
				require.NoError(t, err)
				assert.Len(t, ks.JWKS().Keys, 1+len(others), "every key is published")
				return current, others
			}

			k0, others := keys()
			assert.Empty(t, others)

			r, err := s.RotateSigningKey(t.Context(), bearer.ES256)
			require.NoError(t, err)
			assert.Equal(t, "staged", r.Step)
			assert.Equal(t, k0.ID, r.Current)
			current, others := keys()
			assert.Equal(t, []string{k0.ID, r.Next}, ids(current, others), "the staged key verifies; the current one still signs")
			k1 := others[0]

			r, err = s.RotateSigningKey(t.Context(), bearer.ES256)
			require.NoError(t, err)
			assert.Equal(t, sqlstore.KeyRotation{Step: "promoted", Current: k1.ID, Previous: k0.ID}, r)
			current, others = keys()
			assert.Equal(t, []string{k1.ID, k0.ID}, ids(current, others), "the staged key signs; the one before verifies")
			assert.True(t, k1.Private.(*ecdsa.PrivateKey).Equal(current.Private), "the same key, moved")

			r, err = s.RotateSigningKey(t.Context(), bearer.ES256)
			require.NoError(t, err)
			current, others = keys()
			assert.Equal(t, []string{k1.ID, r.Next, k0.ID}, ids(current, others))
			k2 := r.Next
			_, err = s.RotateSigningKey(t.Context(), bearer.ES256)
			require.NoError(t, err)
			current, others = keys()
			assert.Equal(t, []string{k2, k1.ID}, ids(current, others), "the oldest key is dropped")

			rows, err := db.QueryContext(t.Context(), `SELECT name, COALESCE(sealed_by, '') FROM oauth_keys ORDER BY name`)
			require.NoError(t, err)
			defer rows.Close()
			var names []string
			for rows.Next() {
				var name, sealedBy string
				require.NoError(t, rows.Scan(&name, &sealedBy))
				names = append(names, name)
				assert.Equal(t, secretsKey.ID(), sealedBy, name)
			}
			assert.Equal(t, []string{"signing-es256", "signing-es256.previous"}, names)

			hs, err := s.SigningKey(t.Context())
			require.NoError(t, err)
			_, err = s.RotateSigningKey(t.Context(), bearer.HS256)
			require.NoError(t, err)
			current, others, err = s.SigningKeysFor(t.Context(), bearer.HS256)
			require.NoError(t, err)
			assert.Equal(t, hs, current, "an HS256 key rotates alike")
			require.Len(t, others, 1)
			assert.Equal(t, bearer.HS256, others[0].Alg())
		})
	}
}
