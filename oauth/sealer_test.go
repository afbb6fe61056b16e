package oauth_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// newSecretsKeyText returns a new random secrets key as text.
func newSecretsKeyText(t *testing.T) string {
	t.Helper()
	b := make([]byte, oauth.SecretsKeySize)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

func TestParseSecretsKey(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte{0xfb, 0xff, 0x3e}, 11)[:32] // encodes with + / and - _
	std := base64.StdEncoding.EncodeToString(raw)
	want, err := oauth.ParseSecretsKey(std)
	require.NoError(t, err)
	assert.Regexp(t, `^k-[0-9a-f]{12}$`, want.ID())

	tests := []struct {
		name, text string
		ok         bool
	}{
		{"standard base64", std, true},
		{"standard base64 without padding", base64.RawStdEncoding.EncodeToString(raw), true},
		{"URL-safe base64", base64.URLEncoding.EncodeToString(raw), true},
		{"URL-safe base64 without padding", base64.RawURLEncoding.EncodeToString(raw), true},
		{"surrounded by white space", "  " + std + "\n", true},
		{"empty", "", false},
		{"hex of 32 bytes", hex.EncodeToString(raw), false},
		{"16 bytes", base64.StdEncoding.EncodeToString(raw[:16]), false},
		{"33 bytes", base64.StdEncoding.EncodeToString(append(raw, 1)), false},
		{"a passphrase", "correct horse battery staple and more words", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := oauth.ParseSecretsKey(tt.text)
			if !tt.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "openssl rand -base64 32")
				if tt.text != "" {
					assert.NotContains(t, err.Error(), tt.text, "the text is not echoed")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want.ID(), got.ID(), "the same key")
		})
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	oldKey, err := oauth.ParseSecretsKey(newSecretsKeyText(t))
	require.NoError(t, err)
	newKey, err := oauth.ParseSecretsKey(newSecretsKeyText(t))
	require.NoError(t, err)
	require.NotEqual(t, oldKey.ID(), newKey.ID())

	before, err := oauth.NewSealer(oldKey)
	require.NoError(t, err)
	plaintext := []byte("a signing key of thirty-two bytes")
	ad := []byte("oauth_keys/signing/kid-1")
	sealed, keyID := before.Seal(plaintext, ad)
	assert.Equal(t, oldKey.ID(), keyID)
	assert.NotContains(t, string(sealed), string(plaintext))
	again, _ := before.Seal(plaintext, ad)
	assert.NotEqual(t, sealed, again, "a fresh nonce each time")

	got, err := before.Open(sealed, ad, keyID)
	require.NoError(t, err)
	assert.Equal(t, plaintext, got)

	rotating, err := oauth.NewSealer(newKey, oldKey)
	require.NoError(t, err)
	assert.Equal(t, newKey.ID(), rotating.KeyID())
	got, err = rotating.Open(sealed, ad, keyID)
	require.NoError(t, err, "the previous key still opens")
	assert.Equal(t, plaintext, got)
	resealed, newID := rotating.Seal(got, ad)
	assert.Equal(t, newKey.ID(), newID, "the current key seals")

	after, err := oauth.NewSealer(newKey)
	require.NoError(t, err)
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	for _, tc := range []struct {
		name   string
		sealer *oauth.Sealer
		sealed []byte
		ad     string
		keyID  string
		want   error
	}{
		{"without the key that sealed it", after, sealed, string(ad), keyID, oauth.ErrUnknownSecretsKey},
		{"another row", before, sealed, "oauth_keys/signing/kid-2", keyID, oauth.ErrUnsealFailed},
		{"no additional data", before, sealed, "", keyID, oauth.ErrUnsealFailed},
		{"tampered", before, tampered, string(ad), keyID, oauth.ErrUnsealFailed},
		{"truncated", before, sealed[:10], string(ad), keyID, oauth.ErrUnsealFailed},
		{"named by another key", rotating, sealed, string(ad), newKey.ID(), oauth.ErrUnsealFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.sealer.Open(tc.sealed, []byte(tc.ad), tc.keyID)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	got, err = after.Open(resealed, ad, newID)
	require.NoError(t, err)
	assert.Equal(t, plaintext, got)

	_, err = oauth.NewSealer(newKey, newKey)
	assert.ErrorContains(t, err, "given twice")
	_, err = oauth.NewSealer(oauth.SecretsKey{})
	assert.Error(t, err, "the zero key")
	assert.True(t, strings.HasPrefix(newKey.ID(), "k-"))
}
