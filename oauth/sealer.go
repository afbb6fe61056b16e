package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SecretsKeySize is the size of a secrets key in bytes: an AES-256 key.
const SecretsKeySize = 32

// Errors of Sealer.Open, which callers test with errors.Is.
var (
	// ErrUnknownSecretsKey is returned for a value sealed with a secrets
	// key that the Sealer does not hold (or by a Store without a Sealer).
	ErrUnknownSecretsKey = errors.New("oauth: sealed with a secrets key that was not given")
	// ErrUnsealFailed is returned for a value that does not decrypt with
	// the secrets key that sealed it: it was altered, or moved from
	// another record.
	ErrUnsealFailed = errors.New("oauth: sealed value does not decrypt: altered, or moved from another record")
)

// SecretsKey is a key-encryption key: the secret that keeps secrets stored
// at rest, such as the signing key in the database, encrypted (see Sealer).
type SecretsKey struct {
	id  string
	key []byte
}

// ParseSecretsKey reads a secrets key from its text: 32 random bytes in
// base64, standard or URL-safe, padded or not, as `openssl rand -base64 32`
// prints them. White space around it is ignored. Anything else, a
// passphrase above all, is refused: the key must be random.
func ParseSecretsKey(text string) (SecretsKey, error) {
	text = strings.TrimSpace(text)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(text); err == nil && len(key) == SecretsKeySize {
			return newSecretsKey(key), nil
		}
	}
	return SecretsKey{}, fmt.Errorf("oauth: a secrets key is %d random bytes in base64 (openssl rand -base64 %d), not %d characters of something else",
		SecretsKeySize, SecretsKeySize, len(text))
}

// newSecretsKey returns the secrets key of 32 bytes.
func newSecretsKey(key []byte) SecretsKey {
	sum := sha256.Sum256(append([]byte("waybill secrets key id\x00"), key...))
	return SecretsKey{id: "k-" + hex.EncodeToString(sum[:6]), key: append([]byte(nil), key...)}
}

// ID returns the key's id: "k-" and 48 bits, in hex, of a SHA-256 of the
// key. It is stored beside what the key seals and names the key in
// messages; it reveals nothing of the key.
func (k SecretsKey) ID() string { return k.id }

// Sealer encrypts secrets kept at rest with AES-256-GCM under the current
// secrets key, and decrypts what the current or a previous secrets key
// sealed, so that the secrets key can rotate: give the new key as current
// and the old one as previous until everything is sealed again with the
// new one.
type Sealer struct {
	current string
	aeads   map[string]cipher.AEAD
}

// NewSealer returns a Sealer that seals with current and opens what
// current or any of previous sealed.
func NewSealer(current SecretsKey, previous ...SecretsKey) (*Sealer, error) {
	s := &Sealer{current: current.id, aeads: map[string]cipher.AEAD{}}
	for _, k := range append([]SecretsKey{current}, previous...) {
		if len(k.key) != SecretsKeySize {
			return nil, errors.New("oauth: a secrets key must come from ParseSecretsKey")
		}
		if _, dup := s.aeads[k.id]; dup {
			return nil, fmt.Errorf("oauth: secrets key %s is given twice", k.id)
		}
		block, err := aes.NewCipher(k.key)
		if err != nil {
			return nil, fmt.Errorf("oauth: secrets key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("oauth: secrets key: %w", err)
		}
		s.aeads[k.id] = aead
	}
	return s, nil
}

// KeyID returns the id of the current secrets key, the one Seal uses.
func (s *Sealer) KeyID() string { return s.current }

// Seal encrypts plaintext with the current secrets key and returns the
// sealed value, a random 96-bit nonce followed by the ciphertext and its
// tag, and the id of the key. additionalData binds the value to where it
// is stored (a table and a row, say): Open must be given the same.
func (s *Sealer) Seal(plaintext, additionalData []byte) (sealed []byte, keyID string) {
	aead := s.aeads[s.current]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand.Read documents it)
	return aead.Seal(nonce, nonce, plaintext, additionalData), s.current
}

// Open decrypts a value that Seal sealed with the secrets key keyID and
// additionalData. It fails with ErrUnknownSecretsKey when the Sealer does
// not hold that key, and with ErrUnsealFailed when the value does not
// decrypt.
func (s *Sealer) Open(sealed, additionalData []byte, keyID string) ([]byte, error) {
	aead, ok := s.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("secrets key %s: %w", keyID, ErrUnknownSecretsKey)
	}
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, ErrUnsealFailed
	}
	plaintext, err := aead.Open(nil, sealed[:n], sealed[n:], additionalData)
	if err != nil {
		return nil, ErrUnsealFailed
	}
	return plaintext, nil
}
