package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// rvSecretsKey returns a new secrets key as an operator makes one
// (openssl rand -base64 32), and its id.
func rvSecretsKey(t *testing.T) (text, id string) {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	text = base64.StdEncoding.EncodeToString(b)
	key, err := oauth.ParseSecretsKey(text)
	require.NoError(t, err)
	return text, key.ID()
}

// rvStoredKey is the signing key's row in oauth_keys.
type rvStoredKey struct {
	id, sealedBy string
	secret       []byte
}

// rvReadStoredKey reads the signing key's row of the database dbURL.
func rvReadStoredKey(t *testing.T, dbURL string) rvStoredKey {
	t.Helper()
	db, _, err := openDB(t.Context(), dbURL, 1)
	require.NoError(t, err)
	defer db.Close()
	var k rvStoredKey
	var sealedBy sql.NullString
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT id, secret, sealed_by FROM oauth_keys WHERE name = 'signing'`).
		Scan(&k.id, &k.secret, &sealedBy))
	k.sealedBy = sealedBy.String
	return k
}

// rvIssuer is the issuer of the servers that a test starts one after the
// other on a database, so that each accepts the tokens of the others.
const rvIssuer = "http://waybill.rv.test"

// rvServe starts serve on dbURL with the environment vars, checks that the
// token of tenant c still lists its vehicles, and stops it. It returns the
// server's log lines.
func rvServe(t *testing.T, dbURL string, vars map[string]string, c rlTenant, token string) []map[string]any {
	t.Helper()
	base, logs, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--issuer", rvIssuer}, env(vars))
	res := rlVehicles(t, base, c.org, token)
	assert.Equal(t, http.StatusOK, res.status, "a token signed before: %v", res.body)
	require.NoError(t, stop())
	return logLines(t, logs.String())
}

// rvWarned reports whether lines hold the warning of a signing key kept
// unencrypted.
func rvWarned(lines []map[string]any) bool {
	for _, l := range lines {
		if msg, _ := l["msg"].(string); l["level"] == "WARN" && strings.Contains(msg, "unencrypted") && strings.Contains(msg, "--secrets-key") {
			return true
		}
	}
	return false
}

// TestSecretsKey runs serve on a database through the life of its signing
// key: kept in plain text with a warning, encrypted on the first start with
// --secrets-key, refused with a wrong or missing secrets key, readable
// during a rotation with --previous-secrets-key, re-encrypted by "admin
// keys reencrypt", and then readable with the new secrets key alone. A
// token signed at the start is accepted throughout: the key never changes.
func TestSecretsKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRLTenant(t, db, "Secrets Freight")
			keyA, idA := rvSecretsKey(t)
			keyB, idB := rvSecretsKey(t)

			// No secrets key: the key is kept in plain text, with a warning.
			base, logs, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--issuer", rvIssuer}, env(nil))
			token := rlToken(t, base, c)
			require.NoError(t, stop())
			assert.True(t, rvWarned(logLines(t, logs.String())), "logs:\n%s", logs)
			plain := rvReadStoredKey(t, db)
			require.Empty(t, plain.sealedBy)

			// The first start with a secrets key encrypts it in place.
			lines := rvServe(t, db, map[string]string{"WAYBILL_SECRETS_KEY": keyA}, c, token)
			assert.False(t, rvWarned(lines), "no warning with a secrets key")
			sealed := rvReadStoredKey(t, db)
			assert.Equal(t, plain.id, sealed.id)
			assert.Equal(t, idA, sealed.sealedBy)
			assert.NotContains(t, string(sealed.secret), string(plain.secret), "the stored value is not the key")

			// A wrong or missing secrets key fails at start, and says so.
			for _, tc := range []struct {
				name string
				vars map[string]string
			}{
				{"another secrets key", map[string]string{"WAYBILL_SECRETS_KEY": keyB}},
				{"no secrets key", nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, err := runCommand(t, tc.vars, "serve", "--addr", "127.0.0.1:0", "--database-url", db)
					require.Error(t, err)
					assert.Contains(t, err.Error(), "serve: signing key: the signing key in the database is encrypted with another secrets key")
					assert.Contains(t, err.Error(), idA, "names the secrets key it needs")
					assert.NotContains(t, err.Error(), keyA)
				})
			}
			assert.Equal(t, sealed, rvReadStoredKey(t, db), "a failed start changes nothing")

			// Rotation: the new key with the old one as previous.
			rotating := map[string]string{"WAYBILL_SECRETS_KEY": keyB, "WAYBILL_PREVIOUS_SECRETS_KEY": keyA}
			rvServe(t, db, rotating, c, token)
			assert.Equal(t, idA, rvReadStoredKey(t, db).sealedBy, "serve leaves the re-encryption to the admin command")

			out, err := runCommand(t, rotating, "admin", "keys", "reencrypt", "--database-url", db)
			require.NoError(t, err)
			assert.JSONEq(t, `{"reencrypted":1,"secrets_key_id":"`+idB+`"}`, out)
			assert.Equal(t, idB, rvReadStoredKey(t, db).sealedBy)
			out, err = runCommand(t, nil, "admin", "keys", "reencrypt", "--secrets-key", keyB, "--database-url", db)
			require.NoError(t, err)
			assert.JSONEq(t, `{"reencrypted":0,"secrets_key_id":"`+idB+`"}`, out, "nothing left to re-encrypt")

			rvServe(t, db, map[string]string{"WAYBILL_SECRETS_KEY": keyB}, c, token)
			_, err = runCommand(t, map[string]string{"WAYBILL_SECRETS_KEY": keyA}, "serve", "--addr", "127.0.0.1:0", "--database-url", db)
			assert.ErrorContains(t, err, idB, "the old secrets key no longer opens the key")
			_, err = runCommand(t, nil, "admin", "keys", "reencrypt", "--secrets-key", keyA, "--database-url", db)
			assert.ErrorContains(t, err, "admin keys reencrypt: the signing key in the database is encrypted with another secrets key")
		})
	}
}

// TestSecretsKeyFlags checks the secrets keys that serve and "admin keys
// reencrypt" refuse before they open the database.
func TestSecretsKeyFlags(t *testing.T) {
	t.Parallel()
	key, _ := rvSecretsKey(t)
	hexKey := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		args    []string
		vars    map[string]string
		wantErr string
	}{
		{"serve with a short key", []string{"serve", "--secrets-key", "short"}, nil, "serve: --secrets-key: oauth: a secrets key is 32 random bytes in base64 (openssl rand -base64 32)"},
		{"serve with a hex key", []string{"serve"}, map[string]string{"WAYBILL_SECRETS_KEY": hexKey}, "--secrets-key: oauth: a secrets key is 32 random bytes"},
		{"serve with a bad previous key", []string{"serve", "--secrets-key", key, "--previous-secrets-key", "x"}, nil, "--previous-secrets-key: oauth: a secrets key is 32 random bytes"},
		{"serve with a previous key alone", []string{"serve"}, map[string]string{"WAYBILL_PREVIOUS_SECRETS_KEY": key}, "serve: --previous-secrets-key needs --secrets-key"},
		{"serve with the same key twice", []string{"serve", "--secrets-key", key, "--previous-secrets-key", key}, nil, "is given twice"},
		{"reencrypt without a key", []string{"admin", "keys", "reencrypt"}, nil, "admin keys reencrypt: --secrets-key is required"},
		{"reencrypt with a bad key", []string{"admin", "keys", "reencrypt", "--secrets-key", hexKey}, nil, "admin keys reencrypt: --secrets-key: oauth: a secrets key is 32 random bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := t.TempDir() + "/w.db"
			args := append(tc.args, "--database-url", "sqlite://"+path)
			if tc.args[0] == "serve" {
				args = append(args, "--addr", "127.0.0.1:0")
			}
			_, err := runCommand(t, tc.vars, args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), hexKey, "keys are not echoed")
			assert.NoFileExists(t, path, "refused before the database is opened")
		})
	}

	out, err := runCommand(t, nil, "serve", "-h")
	require.NoError(t, err)
	assert.Contains(t, out, "--secrets-key key")
	assert.Contains(t, out, "env WAYBILL_SECRETS_KEY")
	assert.Contains(t, out, "env WAYBILL_PREVIOUS_SECRETS_KEY")
	out, err = runCommand(t, nil, "admin", "-h")
	require.NoError(t, err)
	assert.Contains(t, out, "waybill admin keys reencrypt --secrets-key KEY [--previous-secrets-key KEY]")
}
