package bearer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// MinKeyLength is the shortest HMAC key accepted, in bytes: HS256 keys must
// be at least as long as the hash (RFC 7518 section 3.2).
const MinKeyLength = 32

// Key is one HS256 signing key, named by the kid of the tokens it signs.
type Key struct {
	// ID is the key id, the kid header of every token signed with it.
	ID string
	// Secret is the raw HMAC key, at least MinKeyLength bytes.
	Secret []byte
}

// GenerateKey returns a new random 256-bit key. Its id is a UUIDv7, made
// the way every id of the module is: ordered by the time it was made.
func GenerateKey() (Key, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("bearer: generate key: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Key{}, fmt.Errorf("bearer: generate key: %w", err)
	}
	return Key{ID: id.String(), Secret: secret}, nil
}

// SecretKey returns the Key of a raw shared secret, such as the reference
// server's --jwt-secret. Its id is derived from the secret ("s-" and the
// first 48 bits of its SHA-256, in hex), so that every service holding the
// secret names the key alike without agreeing on a kid. NewKeySet checks
// the secret's length.
func SecretKey(secret []byte) Key {
	sum := sha256.Sum256(secret)
	return Key{ID: "s-" + hex.EncodeToString(sum[:6]), Secret: append([]byte(nil), secret...)}
}

// KeySet is the set of HS256 keys: the current one signs, and every key in
// the set verifies, so keys rotate without downtime. Put the new key in
// Current and the old one in Previous until the last token it signed has
// expired (one access token lifetime).
type KeySet struct {
	current Key
	byID    map[string][]byte
	// header is the encoded JOSE header of the tokens the current key
	// signs: the same for every token, so encoded once.
	header string
}

// NewKeySet returns a key set that signs with current and verifies with
// current and previous. Every key needs an id, unique in the set, and a
// secret of at least MinKeyLength bytes.
func NewKeySet(current Key, previous ...Key) (*KeySet, error) {
	ks := &KeySet{current: current, byID: map[string][]byte{}}
	for _, k := range append([]Key{current}, previous...) {
		if k.ID == "" {
			return nil, errors.New("bearer: a key needs an id")
		}
		if len(k.Secret) < MinKeyLength {
			return nil, fmt.Errorf("bearer: key %q is %d bytes; HS256 keys need at least %d", k.ID, len(k.Secret), MinKeyLength)
		}
		if _, dup := ks.byID[k.ID]; dup {
			return nil, fmt.Errorf("bearer: key id %q is used twice", k.ID)
		}
		ks.byID[k.ID] = append([]byte(nil), k.Secret...)
	}
	// What golang-jwt writes for jwt.NewWithClaims with a kid: the header
	// map's keys in sorted order.
	header, err := json.Marshal(map[string]string{"alg": jwt.SigningMethodHS256.Alg(), "kid": current.ID, "typ": "JWT"})
	if err != nil {
		return nil, fmt.Errorf("bearer: encode the token header: %w", err)
	}
	ks.header = base64.RawURLEncoding.EncodeToString(header)
	return ks, nil
}

// Sign signs claims with the current key, naming it in the kid header. It
// refuses claims whose grant does not fit them: a Grant on a token without
// ClientID, an unknown Grant, or BranchIDs on an authorization-code token.
func (ks *KeySet) Sign(c *Claims) (string, error) {
	if problem := c.checkGrant(c.grant() == GrantClientCredentials || c.BranchIDs != nil); problem != "" {
		return "", fmt.Errorf("bearer: sign: %s", problem)
	}
	// As jwt.Token.SignedString does, without encoding the constant header
	// again and without json.Marshal's second pass over the claims.
	payload, err := c.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("bearer: sign: %w", err)
	}
	signing := ks.header + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig, err := jwt.SigningMethodHS256.Sign(signing, ks.current.Secret)
	if err != nil {
		return "", fmt.Errorf("bearer: sign: %w", err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Derive returns a 256-bit key for one purpose, such as signing the token
// server's session cookies or CSRF tokens, derived from the current signing
// key with HMAC-SHA256 over "waybill/" and purpose; so no key serves two
// purposes, and rotating the signing key rotates every derived key too.
func (ks *KeySet) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, ks.current.Secret)
	m.Write([]byte("waybill/" + purpose))
	return m.Sum(nil)
}
