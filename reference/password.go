package main

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

// argon2Params are the cost parameters of an argon2id password hash.
type argon2Params struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Time is the number of passes over the memory.
	Time uint32
	// Threads is the degree of parallelism.
	Threads uint8
}

// defaultArgon2 is the cost of new password hashes: 64 MiB, 3 passes, 2
// lanes, within the range RFC 9106 section 4 recommends for a server.
var defaultArgon2 = argon2Params{Memory: 64 * 1024, Time: 3, Threads: 2}

// Sizes of new password hashes.
const (
	saltLen = 16 // bytes of random salt
	keyLen  = 32 // bytes of derived key
)

// Bounds that verifyPassword enforces on the parameters it reads from a
// stored hash, so that a damaged or hostile string cannot make one
// verification take gigabytes or minutes.
const (
	maxMemoryKiB = 1024 * 1024 // 1 GiB
	maxTime      = 64
	minSaltLen   = 8
	minKeyLen    = 16
	maxKeyLen    = 64
)

// phcPrefix starts every hash this file writes: the algorithm and its
// version (0x13 = 19) in the PHC string format.
var phcPrefix = "$argon2id$v=" + strconv.Itoa(argon2.Version) + "$"

// dummyPasswordHash is a valid hash, with the default parameters, of a
// random password nobody knows. Authentication verifies against it when the
// email is unknown, so that the time taken does not reveal which emails
// exist.
const dummyPasswordHash = "$argon2id$v=19$m=65536,t=3,p=2$XUUVpt03GWnX52OYjJKT3Q$OldHvSbW3CeWV+LCoLdUpdiU2CvvWM/4WKZavGhqYPE"

// hashPassword returns the argon2id hash of password with the default
// parameters, in the PHC string format:
//
//	$argon2id$v=19$m=65536,t=3,p=2$<salt>$<key>
//
// where salt (16 random bytes) and key (32 bytes) are in unpadded standard
// base64.
func hashPassword(password string) (string, error) {
	return hashPasswordWith(defaultArgon2, password)
}

// hashPasswordWith is hashPassword with the parameters p.
func hashPasswordWith(p argon2Params, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	return encodeHash(p, salt, key), nil
}

// encodeHash returns the PHC string of an argon2id hash.
func encodeHash(p argon2Params, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", phcPrefix, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verifyPassword reports whether password matches hash, a PHC string written
// by hashPassword, using the parameters, salt and key length in hash. The
// comparison takes constant time. A hash that does not parse, or whose
// parameters are out of bounds, is an error.
func verifyPassword(hash, password string) (bool, error) {
	p, salt, key, err := decodeHash(hash)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// errMalformedHash is the error of a hash that verifyPassword cannot read.
var errMalformedHash = errors.New("password: malformed argon2id hash")

// decodeHash parses a PHC string of argon2id and checks its parameters.
func decodeHash(hash string) (p argon2Params, salt, key []byte, err error) {
	rest, ok := strings.CutPrefix(hash, phcPrefix)
	if !ok {
		return p, nil, nil, fmt.Errorf("%w: want prefix %s", errMalformedHash, phcPrefix)
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return p, nil, nil, fmt.Errorf("%w: want parameters, salt and key", errMalformedHash)
	}
	if p, err = parseParams(parts[0]); err != nil {
		return p, nil, nil, err
	}
	b64 := base64.RawStdEncoding.Strict()
	if salt, err = b64.DecodeString(parts[1]); err != nil || len(salt) < minSaltLen {
		return p, nil, nil, fmt.Errorf("%w: bad salt", errMalformedHash)
	}
	if key, err = b64.DecodeString(parts[2]); err != nil || len(key) < minKeyLen || len(key) > maxKeyLen {
		return p, nil, nil, fmt.Errorf("%w: bad key", errMalformedHash)
	}
	return p, salt, key, nil
}

// parseParams parses "m=65536,t=3,p=2". Only the canonical form is
// accepted: the three parameters in this order, in decimal without sign or
// leading zeros, within bounds.
func parseParams(s string) (argon2Params, error) {
	var p argon2Params
	fields := strings.Split(s, ",")
	if len(fields) != 3 {
		return p, fmt.Errorf("%w: want m=,t=,p= parameters", errMalformedHash)
	}
	m, errM := paramValue(fields[0], "m=", 32)
	t, errT := paramValue(fields[1], "t=", 32)
	threads, errP := paramValue(fields[2], "p=", 8)
	if err := errors.Join(errM, errT, errP); err != nil {
		return p, err
	}
	p = argon2Params{Memory: uint32(m), Time: uint32(t), Threads: uint8(threads)}
	switch {
	case p.Time < 1 || p.Time > maxTime:
		return p, fmt.Errorf("%w: t out of range", errMalformedHash)
	case p.Threads < 1:
		return p, fmt.Errorf("%w: p out of range", errMalformedHash)
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxMemoryKiB:
		return p, fmt.Errorf("%w: m out of range", errMalformedHash)
	}
	if got := fmt.Sprintf("m=%d,t=%d,p=%d", p.Memory, p.Time, p.Threads); got != s {
		return p, fmt.Errorf("%w: parameters not in canonical form", errMalformedHash)
	}
	return p, nil
}

// paramValue returns the unsigned value of field, which must be prefix and
// a decimal that fits in bits.
func paramValue(field, prefix string, bits int) (uint64, error) {
	digits, ok := strings.CutPrefix(field, prefix)
	if !ok {
		return 0, fmt.Errorf("%w: want %sN", errMalformedHash, prefix)
	}
	v, err := strconv.ParseUint(digits, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: bad %s", errMalformedHash, prefix)
	}
	return v, nil
}
