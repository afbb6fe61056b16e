package password

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
)

// cheapArgon2 keeps the tests that do not check the default cost fast.
var cheapArgon2 = Params{Memory: 64, Time: 1, Threads: 1}

func TestHashDefault(t *testing.T) {
	t.Parallel()
	hash, err := Hash("correct horse battery staple")
	require.NoError(t, err)
	assert.Regexp(t, `^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, hash,
		"PHC string, 16-byte salt, 32-byte key, unpadded standard base64")

	ok, err := Verify(hash, "correct horse battery staple")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	const password = "pässwörd-123"
	hash, err := HashWith(cheapArgon2, password)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(hash, "$argon2id$v=19$m=64,t=1,p=1$"), "the parameters are written: %s", hash)
	parts := strings.Split(hash, "$") // "", argon2id, v=19, params, salt, key
	require.Len(t, parts, 6)
	salt, key := parts[4], parts[5]

	// flip changes the first character of a base64 field to another valid
	// one.
	flip := func(s string) string {
		if s[0] == 'A' {
			return "B" + s[1:]
		}
		return "A" + s[1:]
	}
	with := func(params, salt, key string) string {
		return "$argon2id$v=19$" + params + "$" + salt + "$" + key
	}

	tests := []struct {
		name     string
		hash     string
		password string
		want     bool
	}{
		{"round trip", hash, password, true},
		{"wrong password", hash, "pässwörd-124", false},
		{"empty password", hash, "", false},
		{"case matters", hash, strings.ToUpper(password), false},
		{"tampered key", with("m=64,t=1,p=1", salt, flip(key)), password, false},
		{"tampered salt", with("m=64,t=1,p=1", flip(salt), key), password, false},
		// The parameters are read from the string: another cost derives
		// another key, so a changed parameter no longer verifies.
		{"tampered memory", with("m=72,t=1,p=1", salt, key), password, false},
		{"tampered time", with("m=64,t=2,p=1", salt, key), password, false},
		{"tampered threads", with("m=64,t=1,p=2", salt, key), password, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, err := Verify(tt.hash, tt.password)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ok)
		})
	}
}

func TestVerifyHonoursParameters(t *testing.T) {
	t.Parallel()
	for _, p := range []Params{
		{Memory: 64, Time: 1, Threads: 1},
		{Memory: 256, Time: 2, Threads: 4},
		{Memory: 1024, Time: 1, Threads: 2},
	} {
		hash, err := HashWith(p, "secret-password")
		require.NoError(t, err)
		got, _, _, err := decodeHash(hash)
		require.NoError(t, err)
		assert.Equal(t, p, got)
		ok, err := Verify(hash, "secret-password")
		require.NoError(t, err)
		assert.True(t, ok, "hash %s", hash)
	}
}

func TestVerifyMalformed(t *testing.T) {
	t.Parallel()
	const (
		salt = "c2FsdHNhbHRzYWx0c2FsdA"                      // 16 bytes
		key  = "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U" // 32 bytes
	)
	tests := []struct {
		name, hash string
	}{
		{"empty", ""},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"argon2i", "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"old version", "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + key},
		{"no version", "$argon2id$m=64,t=1,p=1$" + salt + "$" + key},
		{"missing key", "$argon2id$v=19$m=64,t=1,p=1$" + salt},
		{"extra field", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key + "$x"},
		{"parameters out of order", "$argon2id$v=19$t=1,m=64,p=1$" + salt + "$" + key},
		{"missing parameter", "$argon2id$v=19$m=64,t=1$" + salt + "$" + key},
		{"leading zero", "$argon2id$v=19$m=064,t=1,p=1$" + salt + "$" + key},
		{"plus sign", "$argon2id$v=19$m=+64,t=1,p=1$" + salt + "$" + key},
		{"spaces", "$argon2id$v=19$m=64, t=1, p=1$" + salt + "$" + key},
		{"zero time", "$argon2id$v=19$m=64,t=0,p=1$" + salt + "$" + key},
		{"zero threads", "$argon2id$v=19$m=64,t=1,p=0$" + salt + "$" + key},
		{"too many threads", "$argon2id$v=19$m=64,t=1,p=256$" + salt + "$" + key},
		{"memory below 8 per thread", "$argon2id$v=19$m=8,t=1,p=2$" + salt + "$" + key},
		{"huge memory", "$argon2id$v=19$m=4194304,t=1,p=1$" + salt + "$" + key},
		{"huge time", "$argon2id$v=19$m=64,t=1000,p=1$" + salt + "$" + key},
		{"padded salt", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + key},
		{"url base64", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + strings.ReplaceAll(key, "a", "-")},
		{"short salt", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + key},
		{"short key", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$a2V5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, err := Verify(tt.hash, "password")
			require.ErrorIs(t, err, ErrMalformedHash)
			assert.False(t, ok)
		})
	}
}

// TestDummyHash checks that the hash that VerifyUnknown verifies for
// unknown users parses and costs what a real hash costs.
func TestDummyHash(t *testing.T) {
	t.Parallel()
	p, salt, key, err := decodeHash(DummyHash)
	require.NoError(t, err)
	assert.Equal(t, defaultParams, p)
	assert.Len(t, salt, saltLen)
	assert.Len(t, key, keyLen)
}

// oldArgon2 is the default cost of earlier versions, whose hashes users
// may still have.
var oldArgon2 = Params{Memory: 64 * 1024, Time: 3, Threads: 2}

func TestNeedsRehash(t *testing.T) {
	t.Parallel()
	current, err := Hash("password")
	require.NoError(t, err)
	old, err := HashWith(oldArgon2, "password")
	require.NoError(t, err)
	cheap, err := HashWith(cheapArgon2, "password")
	require.NoError(t, err)
	tests := []struct {
		name, hash string
		want       bool
	}{
		{"default cost", current, false},
		{"the dummy hash", DummyHash, false},
		{"the old default cost", old, true},
		{"another cost", cheap, true},
		{"a shorter key", current[:strings.LastIndexByte(current, '$')+1] + "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5", true},
		{"malformed", "$argon2id$v=19$m=0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, NeedsRehash(tt.hash))
		})
	}
}

// A hash of the old cost still verifies, and a right password gets a new
// hash at the default cost; a wrong one gets none.
func TestVerifyRehashes(t *testing.T) {
	t.Parallel()
	old, err := HashWith(oldArgon2, "correct horse")
	require.NoError(t, err)
	l := NewPool(PoolOptions{Slots: 1, Queue: -1, Wait: time.Second})

	ok, rehash, err := l.Verify(t.Context(), old, "wrong horse")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Empty(t, rehash)

	ok, rehash, err = l.Verify(t.Context(), old, "correct horse")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NotEmpty(t, rehash)
	p, _, _, err := decodeHash(rehash)
	require.NoError(t, err)
	assert.Equal(t, defaultParams, p)
	ok, rehash, err = l.Verify(t.Context(), rehash, "correct horse")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, rehash, "a hash of the default cost stays")
}

// hold takes the one slot of l until the returned function is called.
func hold(t *testing.T, l *Pool) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		assert.NoError(t, l.Do(context.Background(), func() { close(held); <-done }))
	}()
	<-held
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release)
	return release
}

func TestPool(t *testing.T) {
	t.Parallel()
	t.Run("no slot within the wait", func(t *testing.T) {
		t.Parallel()
		l := NewPool(PoolOptions{Slots: 1, Queue: 1, Wait: time.Millisecond})
		hold(t, l)
		ran := false
		assert.ErrorIs(t, l.Do(t.Context(), func() { ran = true }), ErrBusy)
		assert.False(t, ran)
	})
	t.Run("the queue is full", func(t *testing.T) {
		t.Parallel()
		l := NewPool(PoolOptions{Slots: 1, Queue: 1, Wait: time.Hour})
		release := hold(t, l)
		waited := make(chan error, 1)
		go func() { waited <- l.Do(t.Context(), func() {}) }()
		require.Eventually(t, func() bool { return len(l.tickets) == 2 }, 10*time.Second, time.Millisecond, "the second hash waits")
		assert.ErrorIs(t, l.Do(t.Context(), func() { t.Error("ran past a full queue") }), ErrBusy)
		release()
		assert.NoError(t, <-waited, "the waiting hash runs once the slot is free")
	})
	t.Run("the request ends while it waits", func(t *testing.T) {
		t.Parallel()
		l := NewPool(PoolOptions{Slots: 1, Queue: 1, Wait: time.Hour})
		hold(t, l)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.ErrorIs(t, l.Do(ctx, func() {}), context.Canceled)
	})
	t.Run("busy is a 503 with Retry-After", func(t *testing.T) {
		t.Parallel()
		l := NewPool(PoolOptions{Slots: 1, Queue: -1, Wait: time.Hour})
		hold(t, l)
		_, _, err := l.Verify(t.Context(), DummyHash, "x")
		e := apierrors.From(err)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, apierrors.CodeUnavailable, e.Code)
		assert.Equal(t, "1", e.Header.Get("Retry-After"))
		// As the password grant sees it: wrapped in a server_error.
		e = apierrors.From(apierrors.Internal(fmt.Errorf("oauth: authenticate user: %w", err)))
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, "1", e.Header.Get("Retry-After"))
	})
}

// BenchmarkVerify measures one verification at the default cost
// and at the cost of earlier versions.
func BenchmarkVerify(b *testing.B) {
	for _, c := range []struct {
		name string
		p    Params
	}{{"default m=19MiB t=2 p=1", defaultParams}, {"old m=64MiB t=3 p=2", oldArgon2}} {
		hash, err := HashWith(c.p, "correct horse")
		require.NoError(b, err)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Verify(hash, "wrong horse")
			}
		})
	}
}
