// Package password hashes and verifies the passwords of a password sign-in
// with argon2id, in the PHC string format:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
//
// It is a package of its own so that an importer of package oauth links
// golang.org/x/crypto/argon2 only when it signs users in with passwords.
//
// [Hash] writes a hash at the default cost ([DefaultParams]), [Verify]
// checks a password against a hash using the parameters written in it, so
// that hashes of an earlier cost keep verifying, and [NeedsRehash] tells
// the hashes to write again at the default cost after a successful
// sign-in. A [Pool] bounds the hashes a process computes at once, since
// each holds its memory and one core until it is done, and
// [Pool.VerifyUnknown] spends the time of a verification for an unknown
// user, so that the time a sign-in takes does not reveal which users
// exist.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are the cost parameters of an argon2id password hash.
type Params struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Time is the number of passes over the memory.
	Time uint32
	// Threads is the degree of parallelism.
	Threads uint8
}

// DefaultParams returns the cost of new password hashes: argon2id with 19
// MiB of memory, 2 passes and 1 lane, the first of the configurations that
// OWASP's Password Storage Cheat Sheet gives as the minimum for argon2id
// (m=19 MiB, t=2, p=1; m=46 MiB, t=1, p=1; m=12 MiB, t=3, p=1 and so on,
// each as strong as the others). Of those, this one keeps the memory of
// one hash small, and memory is what a server verifying many sign-ins at
// once runs out of first: at 64 MiB a hash, thirty concurrent sign-ins
// took 2 GB. Its two passes keep a guess as costly for an attacker's
// hardware as the larger variants. One lane means one core per hash, so
// that a Pool, which allows one hash per core, keeps every core busy and
// no more. Hashes of another cost (the 64 MiB, 3 passes, 2 lanes of
// earlier versions of Waybill) still verify with the parameters written in
// them; NeedsRehash reports them.
func DefaultParams() Params { return defaultParams }

// defaultParams is DefaultParams.
var defaultParams = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

// Sizes of new password hashes.
const (
	saltLen = 16 // bytes of random salt
	keyLen  = 32 // bytes of derived key
)

// Bounds that Verify enforces on the parameters it reads from a stored
// hash, so that a damaged or hostile string cannot make one verification
// take gigabytes or minutes.
const (
	maxMemoryKiB = 1024 * 1024 // 1 GiB
	maxTime      = 64
	minSaltLen   = 8
	minKeyLen    = 16
	maxKeyLen    = 64
)

// phcPrefix starts every hash of this package: the algorithm and its
// version (0x13 = 19) in the PHC string format.
var phcPrefix = "$argon2id$v=" + strconv.Itoa(argon2.Version) + "$"

// DummyHash is a valid hash, at the default cost, of a random password
// nobody knows. A sign-in whose user does not exist verifies the password
// against it (Pool.VerifyUnknown does), so that the time taken does not
// reveal which users exist; it also serves as the hash of an account that
// cannot sign in with a password.
const DummyHash = "$argon2id$v=19$m=19456,t=2,p=1$XUUVpt03GWnX52OYjJKT3Q$OldHvSbW3CeWV+LCoLdUpdiU2CvvWM/4WKZavGhqYPE"

// Hash returns the argon2id hash of password at the default cost
// (DefaultParams), in the PHC string format:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
//
// where salt (16 random bytes) and key (32 bytes) are in unpadded standard
// base64. It does not wait for a Pool: a server hashing the passwords of
// sign-ins computes it inside Pool.Do.
func Hash(password string) (string, error) {
	return HashWith(defaultParams, password)
}

// HashWith is Hash at the cost p; an error when p is out of the bounds
// that Verify accepts.
func HashWith(p Params, password string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	return encodeHash(p, salt, key), nil
}

// encodeHash returns the PHC string of an argon2id hash.
func encodeHash(p Params, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", phcPrefix, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether password matches hash, a PHC string of argon2id
// (version 19) such as Hash writes, using the parameters, salt and key
// length in hash. The comparison takes constant time. A hash that does not
// parse, or whose parameters are out of bounds (more than 1 GiB of memory,
// more than 64 passes, a salt under 8 bytes, a key under 16 or over 64),
// is an error that is ErrMalformedHash.
func Verify(hash, password string) (bool, error) {
	p, salt, key, err := decodeHash(hash)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// NeedsRehash reports whether hash, which verified, was written at another
// cost than the default, or with another salt or key length: the hash to
// replace by Hash of the same password. A hash that does not parse needs
// none.
func NeedsRehash(hash string) bool {
	p, salt, key, err := decodeHash(hash)
	return err == nil && (p != defaultParams || len(salt) != saltLen || len(key) != keyLen)
}

// ErrMalformedHash is the error of a hash that Verify cannot read.
var ErrMalformedHash = errors.New("password: malformed argon2id hash")

// decodeHash parses a PHC string of argon2id and checks its parameters.
func decodeHash(hash string) (p Params, salt, key []byte, err error) {
	rest, ok := strings.CutPrefix(hash, phcPrefix)
	if !ok {
		return p, nil, nil, fmt.Errorf("%w: want prefix %s", ErrMalformedHash, phcPrefix)
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return p, nil, nil, fmt.Errorf("%w: want parameters, salt and key", ErrMalformedHash)
	}
	if p, err = parseParams(parts[0]); err != nil {
		return p, nil, nil, err
	}
	b64 := base64.RawStdEncoding.Strict()
	if salt, err = b64.DecodeString(parts[1]); err != nil || len(salt) < minSaltLen {
		return p, nil, nil, fmt.Errorf("%w: bad salt", ErrMalformedHash)
	}
	if key, err = b64.DecodeString(parts[2]); err != nil || len(key) < minKeyLen || len(key) > maxKeyLen {
		return p, nil, nil, fmt.Errorf("%w: bad key", ErrMalformedHash)
	}
	return p, salt, key, nil
}

// parseParams parses "m=65536,t=3,p=2". Only the canonical form is
// accepted: the three parameters in this order, in decimal without sign or
// leading zeros, within bounds.
func parseParams(s string) (Params, error) {
	var p Params
	fields := strings.Split(s, ",")
	if len(fields) != 3 {
		return p, fmt.Errorf("%w: want m=,t=,p= parameters", ErrMalformedHash)
	}
	m, errM := paramValue(fields[0], "m=", 32)
	t, errT := paramValue(fields[1], "t=", 32)
	threads, errP := paramValue(fields[2], "p=", 8)
	if err := errors.Join(errM, errT, errP); err != nil {
		return p, err
	}
	p = Params{Memory: uint32(m), Time: uint32(t), Threads: uint8(threads)}
	if err := p.check(); err != nil {
		return p, err
	}
	if got := fmt.Sprintf("m=%d,t=%d,p=%d", p.Memory, p.Time, p.Threads); got != s {
		return p, fmt.Errorf("%w: parameters not in canonical form", ErrMalformedHash)
	}
	return p, nil
}

// check returns an error that is ErrMalformedHash when p is out of the
// bounds that Verify accepts.
func (p Params) check() error {
	switch {
	case p.Time < 1 || p.Time > maxTime:
		return fmt.Errorf("%w: t out of range", ErrMalformedHash)
	case p.Threads < 1:
		return fmt.Errorf("%w: p out of range", ErrMalformedHash)
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxMemoryKiB:
		return fmt.Errorf("%w: m out of range", ErrMalformedHash)
	}
	return nil
}

// paramValue returns the unsigned value of field, which must be prefix and
// a decimal that fits in bits.
func paramValue(field, prefix string, bits int) (uint64, error) {
	digits, ok := strings.CutPrefix(field, prefix)
	if !ok {
		return 0, fmt.Errorf("%w: want %sN", ErrMalformedHash, prefix)
	}
	v, err := strconv.ParseUint(digits, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: bad %s", ErrMalformedHash, prefix)
	}
	return v, nil
}
