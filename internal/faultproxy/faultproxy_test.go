package faultproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/faultproxy"
	"github.com/waybillhq/waybill/internal/testdb"
)

const (
	// wait bounds every wait for something that must happen, so that a broken proxy
	// fails the test instead of hanging it. It is not a performance assertion.
	wait = 10 * time.Second
	// silence is how long a read waits for bytes that must not come.
	silence = 300 * time.Millisecond
)

// echo is a TCP server that writes back everything it reads and, once the client
// closes its writing half, closes the connection.
type echo struct {
	addr  string
	ended atomic.Int64 // connections that have ended
}

// startEcho starts an echo server, stopped in t.Cleanup.
func startEcho(t *testing.T) *echo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &echo{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer e.ended.Add(1)
				defer c.Close()
				_, _ = io.Copy(c, c)
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return e
}

// dial connects to addr; the connection is closed in t.Cleanup.
func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// readN reads exactly n bytes from c within timeout.
func readN(c net.Conn, n int, timeout time.Duration) ([]byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	return buf, err
}

// roundTrip writes msg to c and checks that it comes back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	got, err := readN(c, len(msg), wait)
	require.NoError(t, err)
	assert.Equal(t, msg, string(got))
}

// assertClosed checks that a read on c ends, well before its deadline, with EOF or a
// reset: the proxy closed the connection.
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := readN(c, 1, wait)
	require.Error(t, err)
	assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the connection stays open: %v", err)
}

// assertSilent checks that nothing arrives on c for a while and that c stays open.
func assertSilent(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := readN(c, 1, silence)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

func TestForward(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	tests := []struct {
		name string
		size int
	}{
		{"one byte", 1},
		{"one chunk", 1000},
		{"many chunks", 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, p.Addr())
			msg := make([]byte, tt.size)
			_, _ = rand.Read(msg)
			written := make(chan error, 1)
			go func() { // the echo answers while the rest is written
				_, err := c.Write(msg)
				written <- err
			}()
			got, err := readN(c, len(msg), wait)
			require.NoError(t, err)
			require.NoError(t, <-written)
			assert.True(t, bytes.Equal(msg, got), "the bytes differ")
		})
	}
}

// A client that closes its writing half still reads the whole answer, and then EOF.
func TestHalfClose(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	c := dial(t, p.Addr())
	_, err := c.Write([]byte("last words"))
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "the answer ends with EOF")
	assert.Equal(t, "last words", string(got))
	// The echo counts its connection as ended just after closing it, so
	// the client may see EOF first: wait for both.
	require.Eventually(t, func() bool { return p.Open() == 0 && e.ended.Load() == 1 }, wait, 10*time.Millisecond,
		"the proxy closes both sides, and the target's connection ends")
}

func TestCut(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	c := dial(t, p.Addr())
	roundTrip(t, c, "before")

	p.Cut()
	assert.Equal(t, 0, p.Open())
	assertClosed(t, c)
	require.Eventually(t, func() bool { return e.ended.Load() == 1 }, wait, 10*time.Millisecond,
		"the target's side is closed too")

	// A new connection is accepted and closed at once.
	refused := dial(t, p.Addr())
	assertClosed(t, refused)
	assert.Equal(t, int64(2), p.Accepted())
	assert.Equal(t, 0, p.Open())

	p.Resume()
	roundTrip(t, dial(t, p.Addr()), "after")
	assert.Equal(t, int64(3), p.Accepted())
}

// A Blackhole holds the bytes of open and new connections, closes nothing, and Resume
// delivers what it held.
func TestBlackhole(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	open := dial(t, p.Addr())
	roundTrip(t, open, "before")

	p.Blackhole()
	_, err := open.Write([]byte("held"))
	require.NoError(t, err)
	assertSilent(t, open)

	// A new connection is accepted and held.
	held := dial(t, p.Addr())
	_, err = held.Write([]byte("new"))
	require.NoError(t, err)
	assertSilent(t, held)

	// A client that gives up closes only its own side.
	gone := dial(t, p.Addr())
	_, err = gone.Write([]byte("lost"))
	require.NoError(t, err)
	require.NoError(t, gone.Close())
	assertSilent(t, open)
	assert.Equal(t, 3, p.Open())
	assert.Equal(t, int64(3), p.Accepted())
	assert.Zero(t, e.ended.Load(), "the target saw a connection end during the Blackhole")

	p.Resume()
	got, err := readN(open, len("held"), wait)
	require.NoError(t, err)
	assert.Equal(t, "held", string(got))
	got, err = readN(held, len("new"), wait)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	roundTrip(t, open, "after")
	roundTrip(t, dial(t, p.Addr()), "fresh")
	require.Eventually(t, func() bool { return p.Open() == 3 && e.ended.Load() == 1 }, wait, 10*time.Millisecond,
		"the connection closed during the Blackhole ends after it")
}

// Cut during a Blackhole closes the held connections.
func TestBlackholeThenCut(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	open := dial(t, p.Addr())
	roundTrip(t, open, "before")
	p.Blackhole()
	held := dial(t, p.Addr())
	require.Eventually(t, func() bool { return p.Open() == 2 }, wait, 10*time.Millisecond)

	p.Cut()
	assertClosed(t, open)
	assertClosed(t, held)
	p.Resume()
	roundTrip(t, dial(t, p.Addr()), "after")
}

func TestSetDelay(t *testing.T) {
	t.Parallel()
	const d = 100 * time.Millisecond
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	open := dial(t, p.Addr())
	roundTrip(t, open, "warm")

	timed := func(c net.Conn) time.Duration {
		start := time.Now()
		roundTrip(t, c, "ping")
		return time.Since(start)
	}
	p.SetDelay(d)
	// Each direction waits d.
	assert.GreaterOrEqual(t, timed(open), 2*d, "an open connection")
	assert.GreaterOrEqual(t, timed(dial(t, p.Addr())), 2*d, "a new connection")

	p.SetDelay(0)
	t.Logf("without delay: %v", timed(open))
}

func TestCounters(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := faultproxy.New(t, e.addr)
	assert.Zero(t, p.Accepted())
	assert.Zero(t, p.Open())

	conns := make([]net.Conn, 3)
	for i := range conns {
		conns[i] = dial(t, p.Addr())
		roundTrip(t, conns[i], "hello")
	}
	assert.Equal(t, int64(3), p.Accepted())
	assert.Equal(t, 3, p.Open())

	require.NoError(t, conns[0].Close())
	require.Eventually(t, func() bool { return p.Open() == 2 }, wait, 10*time.Millisecond)
	assert.Equal(t, int64(3), p.Accepted())

	require.NoError(t, p.Close())
	assert.Zero(t, p.Open())
	require.NoError(t, p.Close(), "a second Close")
}

// A target that refuses connections closes the client's at once.
func TestTargetDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := faultproxy.New(t, down)
	assertClosed(t, dial(t, p.Addr()))
	require.Eventually(t, func() bool { return p.Open() == 0 }, wait, 10*time.Millisecond)
}

// Close ends every goroutine of the proxy, whatever its connections are doing. Not
// parallel: it counts the goroutines of the process.
func TestCloseEndsEverything(t *testing.T) {
	e := startEcho(t)
	before := runtime.NumGoroutine()

	p, err := faultproxy.Start(e.addr)
	require.NoError(t, err)
	forwarding := dial(t, p.Addr())
	roundTrip(t, forwarding, "hello")
	p.SetDelay(time.Hour)
	delayed := dial(t, p.Addr())
	_, err = delayed.Write([]byte("waits an hour"))
	require.NoError(t, err)
	p.Blackhole()
	blackholed := dial(t, p.Addr())
	require.Eventually(t, func() bool { return p.Open() == 3 }, wait, 10*time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
	for _, c := range []net.Conn{forwarding, delayed, blackholed} {
		assertClosed(t, c)
	}
	_, err = net.DialTimeout("tcp", p.Addr(), wait)
	assert.Error(t, err, "the proxy still listens")
	// Only the echo server's goroutines of the connections may still be ending.
	// A plain loop: require.Eventually runs its condition in a goroutine of its own.
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left after Close")
}

// A pool on PostgreSQL through the proxy: a Cut makes a ping fail at once, not by its
// timeout, and after Resume a ping succeeds again on a new connection.
func TestPostgres(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.PostgresURL(t))
	require.NoError(t, err)
	p := faultproxy.New(t, u.Host)
	u.Host = p.Addr()
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	ping := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		err := db.PingContext(ctx)
		return time.Since(start), err
	}
	_, err = ping()
	require.NoError(t, err)
	require.Equal(t, 1, p.Open())

	p.Cut()
	took, err := ping()
	t.Logf("ping after Cut: %v, %v", took, err)
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the ping waited for its timeout")

	p.Resume()
	took, err = ping()
	t.Logf("ping after Resume: %v", took)
	require.NoError(t, err)

	p.Blackhole()
	took, err = ping()
	t.Logf("ping during Blackhole: %v, %v", took, err)
	require.Error(t, err)
	p.Resume()
	took, err = ping()
	t.Logf("ping after the Blackhole: %v", took)
	require.NoError(t, err)
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
