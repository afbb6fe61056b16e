package password

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoolOptions(t *testing.T) {
	t.Parallel()
	cores := runtime.GOMAXPROCS(0)
	tests := []struct {
		name           string
		opts           PoolOptions
		slots, tickets int
		wait           time.Duration
	}{
		{"zero value", PoolOptions{}, cores, cores + DefaultQueuePerSlot*cores, DefaultWait},
		{"slots only", PoolOptions{Slots: 2}, 2, 2 + 2*DefaultQueuePerSlot, DefaultWait},
		{"no queue", PoolOptions{Slots: 3, Queue: -1, Wait: time.Minute}, 3, 3, time.Minute},
		{"a queue", PoolOptions{Slots: 1, Queue: 5}, 1, 6, DefaultWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewPool(tt.opts)
			assert.Equal(t, tt.slots, cap(p.slots))
			assert.Equal(t, tt.tickets, cap(p.tickets))
			assert.Equal(t, tt.wait, p.wait)
		})
	}
}

// VerifyUnknown costs a verification at the default cost and reports no
// error of its own; with no slot it is busy, as Verify is.
func TestVerifyUnknown(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolOptions{Slots: 1, Queue: -1, Wait: time.Hour})
	ran := false
	require.NoError(t, p.Do(t.Context(), func() { ran = true }))
	require.True(t, ran)
	require.NoError(t, p.VerifyUnknown(t.Context(), "anything"))

	hold(t, p)
	err := p.VerifyUnknown(t.Context(), "anything")
	require.ErrorIs(t, err, ErrBusy)
}

// HashWith refuses parameters that Verify would refuse to read, rather
// than write a hash that never verifies (or panic in argon2).
func TestHashWithOutOfBounds(t *testing.T) {
	t.Parallel()
	for _, p := range []Params{
		{},
		{Memory: 64, Time: 1, Threads: 0},
		{Memory: 64, Time: 0, Threads: 1},
		{Memory: 64, Time: maxTime + 1, Threads: 1},
		{Memory: 8, Time: 1, Threads: 2},
		{Memory: maxMemoryKiB + 1, Time: 1, Threads: 1},
	} {
		_, err := HashWith(p, "password")
		assert.ErrorIs(t, err, ErrMalformedHash, "%+v", p)
	}
}

// Hashes as stored (literal strings, at a cheap cost and at the cost of
// earlier versions, m=64 MiB, t=3, p=2) keep verifying: the stored format
// does not change.
func TestStoredHashesVerify(t *testing.T) {
	t.Parallel()
	const password = "correct horse battery staple"
	for _, hash := range []string{
		"$argon2id$v=19$m=64,t=1,p=1$PneFTHLN2Z+atHBe/K0RHQ$VXHkVACE8wy5gIR9yJME8jBbs416X5echUFcyqH7Tgk",
		"$argon2id$v=19$m=65536,t=3,p=2$exLrpkncwhJBL5KtO7u44w$To4H2duygJ9mOg2d1VJ4WTeto0oG4cUah+WHSk2Ku48",
	} {
		ok, err := Verify(hash, password)
		require.NoError(t, err)
		assert.True(t, ok, hash)
		ok, err = Verify(hash, password+"!")
		require.NoError(t, err)
		assert.False(t, ok, hash)
		assert.True(t, NeedsRehash(hash), hash)
	}
	ok, err := Verify(DummyHash, "")
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestDefaultParams(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Params{Memory: 19456, Time: 2, Threads: 1}, DefaultParams())
}
