package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cheapArgon2 keeps the tests that do not check the default cost fast.
var cheapArgon2 = argon2Params{Memory: 64, Time: 1, Threads: 1}

func TestHashPasswordDefault(t *testing.T) {
	t.Parallel()
	hash, err := hashPassword("correct horse battery staple")
	require.NoError(t, err)
	assert.Regexp(t, `^\$argon2id\$v=19\$m=65536,t=3,p=2\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, hash,
		"PHC string, 16-byte salt, 32-byte key, unpadded standard base64")

	ok, err := verifyPassword(hash, "correct horse battery staple")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestVerifyPassword(t *testing.T) {
	t.Parallel()
	const password = "pässwörd-123"
	hash, err := hashPasswordWith(cheapArgon2, password)
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
			ok, err := verifyPassword(tt.hash, tt.password)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ok)
		})
	}
}

func TestVerifyPasswordHonoursParameters(t *testing.T) {
	t.Parallel()
	for _, p := range []argon2Params{
		{Memory: 64, Time: 1, Threads: 1},
		{Memory: 256, Time: 2, Threads: 4},
		{Memory: 1024, Time: 1, Threads: 2},
	} {
		hash, err := hashPasswordWith(p, "secret-password")
		require.NoError(t, err)
		got, _, _, err := decodeHash(hash)
		require.NoError(t, err)
		assert.Equal(t, p, got)
		ok, err := verifyPassword(hash, "secret-password")
		require.NoError(t, err)
		assert.True(t, ok, "hash %s", hash)
	}
}

func TestVerifyPasswordMalformed(t *testing.T) {
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
			ok, err := verifyPassword(tt.hash, "password")
			require.ErrorIs(t, err, errMalformedHash)
			assert.False(t, ok)
		})
	}
}

// TestDummyPasswordHash checks that the hash that Authenticate verifies for
// unknown emails parses and costs what a real hash costs.
func TestDummyPasswordHash(t *testing.T) {
	t.Parallel()
	p, salt, key, err := decodeHash(dummyPasswordHash)
	require.NoError(t, err)
	assert.Equal(t, defaultArgon2, p)
	assert.Len(t, salt, saltLen)
	assert.Len(t, key, keyLen)
}
