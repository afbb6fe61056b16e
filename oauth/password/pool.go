package password

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Defaults of PoolOptions. At some 25 ms of one core a hash at the default
// cost, a burst of a few dozen sign-ins per core is served within the
// wait.
const (
	// DefaultQueuePerSlot is how many hashes may wait per slot.
	DefaultQueuePerSlot = 32
	// DefaultWait bounds the wait of one hash for a slot.
	DefaultWait = time.Second
)

// retryAfter is the Retry-After, in seconds, of a sign-in refused for want
// of a slot.
const retryAfter = "1"

// PoolOptions configures NewPool. The zero value is one slot per core and
// DefaultQueuePerSlot waiting hashes per slot, each waiting DefaultWait at
// most.
type PoolOptions struct {
	// Slots is how many hashes run at once; 0 means runtime.GOMAXPROCS.
	Slots int
	// Queue is how many more may wait for a slot; 0 means
	// DefaultQueuePerSlot per slot, less than 0 none.
	Queue int
	// Wait bounds the wait of one hash for a slot; 0 means DefaultWait.
	Wait time.Duration
}

// Pool bounds the password hashes a process computes at once. Each
// argon2id hash holds its memory (19 MiB at the default cost) and one core
// until it is done; without a bound, thirty concurrent sign-ins held thirty
// hashes' memory at once. With one hash per core the cores stay busy and
// the memory stays that of a few hashes. A hash that finds every slot
// taken waits in a queue, which costs no hash memory; one that finds the
// queue full, or gets no slot within the wait, fails with ErrBusy.
//
// Share one Pool between everything of a process that hashes passwords. A
// Pool is safe for concurrent use.
type Pool struct {
	slots   chan struct{} // one element per hash in flight
	tickets chan struct{} // one element per hash in flight or waiting
	wait    time.Duration
}

// NewPool returns a Pool of opts.
func NewPool(opts PoolOptions) *Pool {
	slots := opts.Slots
	if slots <= 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	queue := opts.Queue
	switch {
	case queue == 0:
		queue = DefaultQueuePerSlot * slots
	case queue < 0:
		queue = 0
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Pool{slots: make(chan struct{}, slots), tickets: make(chan struct{}, slots+queue), wait: wait}
}

// ErrBusy is the cause of a hash refused because every slot was taken,
// and the queue full or too slow. It wraps context.DeadlineExceeded, so
// that package errors answers it 503 temporarily_unavailable wherever it
// is wrapped.
var ErrBusy = fmt.Errorf("password: every slot for password hashes is taken: %w", context.DeadlineExceeded)

// Do runs f, which computes one hash, when a slot is free. It returns
// ErrBusy without running f when the queue is full or no slot came free
// within the wait, and ctx's error when ctx ended first.
func (p *Pool) Do(ctx context.Context, f func()) error {
	select {
	case p.tickets <- struct{}{}:
	default:
		return ErrBusy
	}
	defer func() { <-p.tickets }()
	select {
	case p.slots <- struct{}{}:
	default:
		timer := time.NewTimer(p.wait)
		defer timer.Stop()
		select {
		case p.slots <- struct{}{}:
		case <-timer.C:
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-p.slots }()
	f()
	return nil
}

// busy returns the error of a sign-in refused for want of a slot: 503
// temporarily_unavailable with Retry-After, whose cause is ErrBusy.
func busy() error {
	return apierrors.Unavailable("the server is busy checking other sign-ins; retry in a moment").
		WithHeader("Retry-After", retryAfter).Wrap(ErrBusy)
}

// Verify is the package's Verify within the Pool's bound. When password
// matches a hash that NeedsRehash, rehash is a new Hash of it at the
// default cost, computed in the same slot, to be stored in place of hash
// (only where hash is still the one stored, so that a password changed
// meanwhile stays changed); otherwise it is "". A sign-in that gets no
// slot fails with a 503 temporarily_unavailable with Retry-After: 1 (an
// *errors.Error) whose cause is ErrBusy.
func (p *Pool) Verify(ctx context.Context, hash, password string) (ok bool, rehash string, err error) {
	var verr, herr error
	derr := p.Do(ctx, func() {
		ok, verr = Verify(hash, password)
		if ok && verr == nil && NeedsRehash(hash) {
			rehash, herr = Hash(password)
		}
	})
	switch {
	case errors.Is(derr, ErrBusy):
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

// VerifyUnknown spends on password what Verify spends on a hash at the
// default cost, against DummyHash, for a sign-in whose user does not
// exist: answered as fast as one whose password is wrong, it does not
// reveal which users exist. The caller answers it as a wrong password; the
// error is that of a sign-in that got no slot (see Verify) or whose ctx
// ended.
func (p *Pool) VerifyUnknown(ctx context.Context, password string) error {
	_, _, err := p.Verify(ctx, DummyHash, password)
	return err
}
