package main

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/oauth/password"
)

// The hashing, verification, rehashing and the bound on hashes at once
// are package oauth/password's, and tested there; the sign-ins that use
// them are tested in hardening_test.go (TestSignInBusy, TestSignInRehashes).

// oldArgon2 is the default cost of earlier versions, whose hashes users
// may still have.
var oldArgon2 = password.Params{Memory: 64 * 1024, Time: 3, Threads: 2}

// rpHold takes the one slot of l until the returned function is called.
func rpHold(t *testing.T, l *password.Pool) (release func()) {
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
