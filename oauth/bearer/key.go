package bearer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// MinKeyLength is the shortest HMAC key accepted, in bytes: HS256 keys must
// be at least as long as the hash (RFC 7518 section 3.2).
const MinKeyLength = 32

// The signing algorithms of a Key, as the alg header of its tokens names
// them (RFC 7518 section 3.1, RFC 8037 section 3.1).
const (
	// HS256 is HMAC with SHA-256 over a shared secret: whoever verifies a
	// token can also sign one. It is the default.
	HS256 = "HS256"
	// ES256 is ECDSA on the P-256 curve with SHA-256: the token service
	// signs with the private key, and any service verifies with the public
	// key, which the JSON Web Key Set publishes.
	ES256 = "ES256"
	// EdDSA is Ed25519: like ES256, with a public key, and faster.
	EdDSA = "EdDSA"
)

// Key is one signing key, named by the kid of the tokens it signs: an
// HS256 secret, or the private key of ES256 or EdDSA. Exactly one of
// Secret and Private is set; Alg tells which algorithm the key signs
// with, and a Verifier accepts only that algorithm for the key's kid.
type Key struct {
	// ID is the key id, the kid header of every token signed with it.
	ID string
	// Secret is the raw HMAC key of an HS256 key, at least MinKeyLength
	// bytes.
	Secret []byte
	// Private is the private key of an asymmetric key: an
	// *ecdsa.PrivateKey on P-256 for ES256, an ed25519.PrivateKey for
	// EdDSA.
	Private crypto.Signer
}

// Alg returns the algorithm the key signs with (HS256, ES256 or EdDSA),
// or "" when the key is none of them.
func (k Key) Alg() string {
	switch p := k.Private.(type) {
	case nil:
		if k.Secret != nil {
			return HS256
		}
	case *ecdsa.PrivateKey:
		if len(k.Secret) == 0 && p != nil && p.Curve == elliptic.P256() {
			return ES256
		}
	case ed25519.PrivateKey:
		if len(k.Secret) == 0 && len(p) == ed25519.PrivateKeySize {
			return EdDSA
		}
	}
	return ""
}

// GenerateKey returns a new random 256-bit HS256 key. Its id is a UUIDv7,
// made the way every id of the module is: ordered by the time it was made.
func GenerateKey() (Key, error) { return GenerateKeyFor(HS256) }

// GenerateKeyFor returns a new random key for alg (HS256, ES256 or
// EdDSA), with a UUIDv7 id like GenerateKey's.
func GenerateKeyFor(alg string) (Key, error) {
	var k Key
	var err error
	switch alg {
	case HS256:
		k.Secret = make([]byte, 32)
		_, err = rand.Read(k.Secret)
	case ES256:
		k.Private, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case EdDSA:
		_, k.Private, err = ed25519.GenerateKey(rand.Reader)
	default:
		return Key{}, fmt.Errorf("bearer: generate key: unknown algorithm %q (HS256, ES256 or EdDSA)", alg)
	}
	if err != nil {
		return Key{}, fmt.Errorf("bearer: generate key: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Key{}, fmt.Errorf("bearer: generate key: %w", err)
	}
	k.ID = id.String()
	return k, nil
}

// SecretKey returns the HS256 Key of a raw shared secret, such as the
// reference server's --jwt-secret. Its id is derived from the secret ("s-"
// and the first 48 bits of its SHA-256, in hex), so that every service
// holding the secret names the key alike without agreeing on a kid.
// NewKeySet checks the secret's length.
func SecretKey(secret []byte) Key {
	sum := sha256.Sum256(secret)
	return Key{ID: "s-" + hex.EncodeToString(sum[:6]), Secret: append([]byte(nil), secret...)}
}

// VerificationKey is what verifies the tokens of one kid: the algorithm
// they must be signed with, and the key of golang-jwt's signing method
// for it ([]byte for HS256, *ecdsa.PublicKey for ES256,
// ed25519.PublicKey for EdDSA).
type VerificationKey struct {
	Alg string
	Key any
}

// verificationKey returns what verifies the tokens k signs.
func (k Key) verificationKey() VerificationKey {
	switch alg := k.Alg(); alg {
	case HS256:
		return VerificationKey{Alg: alg, Key: append([]byte(nil), k.Secret...)}
	default:
		return VerificationKey{Alg: alg, Key: k.Private.Public()}
	}
}

// signingMethod returns golang-jwt's method for alg.
func signingMethod(alg string) jwt.SigningMethod {
	switch alg {
	case ES256:
		return jwt.SigningMethodES256
	case EdDSA:
		return jwt.SigningMethodEdDSA
	}
	return jwt.SigningMethodHS256
}

// The typ headers of the tokens: RFC 9068 section 2.1 types OAuth access
// tokens as at+jwt; product user tokens, which are no OAuth access tokens,
// keep the generic JWT.
const (
	typAccessToken = "at+jwt"
	typJWT         = "JWT"
)

// KeySet is the set of signing keys: the current one signs, and every key
// in the set verifies, so keys rotate without downtime. Put the new key in
// Current and the old one in Previous until the last token it signed has
// expired (one access token lifetime). The keys may be of different
// algorithms (HS256 previous, ES256 current, say, while a service moves to
// public keys): each kid verifies only tokens of its own key's algorithm.
//
// A KeySet is immutable and safe for concurrent use.
type KeySet struct {
	current Key
	method  jwt.SigningMethod
	// signWith is what method.Sign takes: the secret or the private key.
	signWith any
	byID     map[string]VerificationKey
	// derive keys Derive: the HMAC secret, or the private key's bytes.
	derive []byte
	// headers are the encoded JOSE headers of the tokens the current key
	// signs, of OAuth access tokens and of product user tokens: the same
	// for every token, so encoded once.
	accessHeader, userHeader string
	// jwks is the public part of the set, ordered current key first.
	jwks JWKSet
}

// NewKeySet returns a key set that signs with current and verifies with
// current and previous. Every key needs an id, unique in the set, and must
// be a key of HS256 (a secret of at least MinKeyLength bytes), ES256 or
// EdDSA (see Key).
func NewKeySet(current Key, previous ...Key) (*KeySet, error) {
	ks := &KeySet{current: current, byID: map[string]VerificationKey{}, jwks: JWKSet{Keys: []JWK{}}}
	for _, k := range append([]Key{current}, previous...) {
		if k.ID == "" {
			return nil, errors.New("bearer: a key needs an id")
		}
		if k.Private == nil && len(k.Secret) < MinKeyLength {
			return nil, fmt.Errorf("bearer: key %q is %d bytes; HS256 keys need at least %d", k.ID, len(k.Secret), MinKeyLength)
		}
		if k.Alg() == "" {
			return nil, fmt.Errorf("bearer: key %q is neither an HS256 secret, an ES256 (P-256) key nor an Ed25519 key", k.ID)
		}
		if _, dup := ks.byID[k.ID]; dup {
			return nil, fmt.Errorf("bearer: key id %q is used twice", k.ID)
		}
		vk := k.verificationKey()
		ks.byID[k.ID] = vk
		if jwk, ok := publicJWK(k.ID, vk); ok {
			ks.jwks.Keys = append(ks.jwks.Keys, jwk)
		}
	}
	alg := current.Alg()
	ks.method = signingMethod(alg)
	switch p := current.Private.(type) {
	case nil:
		ks.signWith = append([]byte(nil), current.Secret...)
		ks.derive = ks.signWith.([]byte)
	case *ecdsa.PrivateKey:
		ks.signWith = p
		d, err := p.Bytes()
		if err != nil {
			return nil, fmt.Errorf("bearer: key %q: %w", current.ID, err)
		}
		ks.derive = d
	case ed25519.PrivateKey:
		ks.signWith = p
		ks.derive = p.Seed()
	}
	// What golang-jwt writes for jwt.NewWithClaims with a kid: the header
	// map's keys in sorted order.
	for _, h := range []struct {
		typ string
		out *string
	}{{typAccessToken, &ks.accessHeader}, {typJWT, &ks.userHeader}} {
		header, err := json.Marshal(map[string]string{"alg": alg, "kid": current.ID, "typ": h.typ})
		if err != nil {
			return nil, fmt.Errorf("bearer: encode the token header: %w", err)
		}
		*h.out = base64.RawURLEncoding.EncodeToString(header)
	}
	return ks, nil
}

// Alg returns the algorithm of the current key, which signs every token.
func (ks *KeySet) Alg() string { return ks.current.Alg() }

// Sign signs claims with the current key, naming it in the kid header. An
// OAuth access token (claims with a ClientID) is typed at+jwt (RFC 9068),
// a product user token JWT. It refuses claims whose grant does not fit
// them: a Grant on a token without ClientID, an unknown Grant, or
// BranchIDs on an authorization-code token.
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
	header := ks.userHeader
	if c.OAuth() {
		header = ks.accessHeader
	}
	return ks.sign(header, payload, "bearer: sign")
}

// sign returns the token of the encoded header and the payload, signed
// with the current key: header.payload.signature, its parts in base64url
// without padding. It is assembled in one buffer, large enough for the
// longest signature of the key's algorithm (ES256's 64 bytes).
func (ks *KeySet) sign(header string, payload []byte, what string) (string, error) {
	enc := base64.RawURLEncoding
	buf := make([]byte, 0, len(header)+1+enc.EncodedLen(len(payload))+1+enc.EncodedLen(64))
	buf = append(buf, header...)
	buf = enc.AppendEncode(append(buf, '.'), payload)
	sig, err := ks.method.Sign(string(buf), ks.signWith)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return string(enc.AppendEncode(append(buf, '.'), sig)), nil
}

// SignClaims signs claims that are no access token with the current key,
// typed JWT and naming the key in the kid header, as Sign does: an OpenID
// Connect id token, say, which a client verifies against the JSON Web Key
// Set. The claims are encoded with encoding/json. So that nothing it signs
// passes for a token of the API, it refuses claims whose aud holds
// Audience ("authenticated"), the audience every Verifier requires.
func (ks *KeySet) SignClaims(c jwt.Claims) (string, error) {
	aud, err := c.GetAudience()
	if err != nil {
		return "", fmt.Errorf("bearer: sign claims: %w", err)
	}
	if slices.Contains(aud, Audience) {
		return "", fmt.Errorf("bearer: sign claims: the audience %q is the API's; sign its tokens with Sign", Audience)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("bearer: sign claims: %w", err)
	}
	return ks.sign(ks.userHeader, payload, "bearer: sign claims")
}

// VerificationKey returns the key that verifies the tokens of kid, which
// makes a KeySet a KeySource. It fails for an unknown kid, and on a nil
// KeySet.
func (ks *KeySet) VerificationKey(_ context.Context, kid string) (VerificationKey, error) {
	if ks == nil {
		return VerificationKey{}, errNoKeys
	}
	vk, ok := ks.byID[kid]
	if !ok {
		return VerificationKey{}, ErrUnknownKey
	}
	return vk, nil
}

// Derive returns a 256-bit key for one purpose, such as signing the token
// server's session cookies or CSRF tokens, derived from the current signing
// key with HMAC-SHA256 over "waybill/" and purpose; so no key serves two
// purposes, and rotating the signing key rotates every derived key too. An
// asymmetric key derives from its private part (the P-256 scalar, the
// Ed25519 seed), which never leaves the token service.
func (ks *KeySet) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, ks.derive)
	m.Write([]byte("waybill/" + purpose))
	return m.Sum(nil)
}
