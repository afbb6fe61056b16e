package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	apierrors "github.com/waybillhq/waybill/errors"
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

// defaultArgon2 is the cost of new password hashes: argon2id with 19 MiB
// of memory, 2 passes and 1 lane, the first of the configurations that
// OWASP's Password Storage Cheat Sheet gives as the minimum for argon2id
// (m=19 MiB, t=2, p=1; m=46 MiB, t=1, p=1; m=12 MiB, t=3, p=1 and so on,
// each as strong as the others). Of those, this one keeps the memory of
// one hash small, and memory is what a server verifying many sign-ins at
// once runs out of first: at the 64 MiB of the hashes before it, thirty
// concurrent sign-ins took 2 GB. Its two passes keep a guess as costly for
// an attacker's hardware as the larger variants. One lane means one core
// per hash, so that passwordHashes, which allows one hash per core, keeps
// every core busy and no more. Hashes of another cost (the 64 MiB, 3
// passes, 2 lanes of earlier versions) still verify with the parameters
// written in them, and are rehashed at this cost at the next successful
// sign-in (see directory.Authenticate).
var defaultArgon2 = argon2Params{Memory: 19 * 1024, Time: 2, Threads: 1}

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
const dummyPasswordHash = "$argon2id$v=19$m=19456,t=2,p=1$XUUVpt03GWnX52OYjJKT3Q$OldHvSbW3CeWV+LCoLdUpdiU2CvvWM/4WKZavGhqYPE"

// hashPassword returns the argon2id hash of password with the default
// parameters, in the PHC string format:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
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

// How many password hashes the server computes at once, and how long a
// sign-in may wait for its turn. Each argon2id hash holds its memory (19
// MiB at the default cost) and one core until it is done; without a bound,
// thirty concurrent sign-ins held thirty hashes' memory at once. With one
// hash per core the cores stay busy and the memory stays that of a few
// hashes. A sign-in that finds every slot taken waits in a queue, which
// costs no hash memory; one that finds the queue full, or gets no slot
// within hashQueueWait, is answered 503 temporarily_unavailable with
// Retry-After.
const (
	// hashQueuePerSlot is how many sign-ins may wait per slot: at some 25
	// ms of one core a hash, a burst of a few dozen is served within the
	// wait.
	hashQueuePerSlot = 32
	// hashQueueWait bounds the wait for a slot.
	hashQueueWait = time.Second
	// hashRetryAfter is the Retry-After, in seconds, of a sign-in refused
	// for want of a slot.
	hashRetryAfter = "1"
)

// passwordHashes bounds the password hashes of the whole process: one per
// core (GOMAXPROCS).
var passwordHashes = newHashLimiter(runtime.GOMAXPROCS(0), hashQueuePerSlot*runtime.GOMAXPROCS(0), hashQueueWait)

// errHashBusy is the cause of a sign-in refused because every slot for
// password hashes was taken, and the queue full or too slow. It is an
// overload: apierrors.From answers it 503 temporarily_unavailable with
// Retry-After, wherever it is wrapped.
var errHashBusy = fmt.Errorf("password: every slot for password hashes is taken: %w", context.DeadlineExceeded)

// hashLimiter bounds the password hashes computed at once.
type hashLimiter struct {
	slots   chan struct{} // one element per hash in flight
	tickets chan struct{} // one element per hash in flight or waiting
	wait    time.Duration
}

// newHashLimiter allows slots hashes at once, and queue more to wait for
// one at most wait each.
func newHashLimiter(slots, queue int, wait time.Duration) *hashLimiter {
	return &hashLimiter{slots: make(chan struct{}, slots), tickets: make(chan struct{}, slots+queue), wait: wait}
}

// do runs f, which computes one hash, when a slot is free. It returns
// errHashBusy without running f when the queue is full or no slot came
// free within the wait, and ctx's error when ctx ended first.
func (l *hashLimiter) do(ctx context.Context, f func()) error {
	select {
	case l.tickets <- struct{}{}:
	default:
		return errHashBusy
	}
	defer func() { <-l.tickets }()
	select {
	case l.slots <- struct{}{}:
	default:
		timer := time.NewTimer(l.wait)
		defer timer.Stop()
		select {
		case l.slots <- struct{}{}:
		case <-timer.C:
			return errHashBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-l.slots }()
	f()
	return nil
}

// busy returns the error of a sign-in refused for want of a slot: 503
// temporarily_unavailable with Retry-After, whose cause is errHashBusy.
func busy() error {
	return apierrors.Unavailable("the server is busy checking other sign-ins; retry in a moment").
		WithHeader("Retry-After", hashRetryAfter).Wrap(errHashBusy)
}

// verify is verifyPassword within l's bound; a sign-in that gets no slot
// fails with busy(). When password matches a hash of another cost than
// the default, rehash is a new hash of it at the default cost, computed in
// the same slot, to be stored in place of hash; otherwise it is "".
func (l *hashLimiter) verify(ctx context.Context, hash, password string) (ok bool, rehash string, err error) {
	var verr, herr error
	derr := l.do(ctx, func() {
		ok, verr = verifyPassword(hash, password)
		if ok && verr == nil && needsRehash(hash) {
			rehash, herr = hashPassword(password)
		}
	})
	switch {
	case errors.Is(derr, errHashBusy):
		return false, "", busy()
	case derr != nil:
		return false, "", derr
	case verr != nil:
		return false, "", verr
	case herr != nil:
		return false, "", herr
	}
	return ok, rehash, nil
}

// needsRehash reports whether hash, which verified, was written at another
// cost than the default, or with another salt or key length.
func needsRehash(hash string) bool {
	p, salt, key, err := decodeHash(hash)
	return err == nil && (p != defaultArgon2 || len(salt) != saltLen || len(key) != keyLen)
}
