// Package faultproxy is a TCP proxy for fault tests: it sits between a client (the
// reference server, a test's own pool) and a service such as PostgreSQL or Redis, and
// on demand cuts, partitions, heals or slows the traffic between them.
//
// A test starts one with [New] (or [Start]), points its client at [Proxy.Addr] instead
// of the service, and then calls:
//
//   - [Proxy.Cut]: the service went away. Every open connection is closed, on both
//     sides, and every new one is closed as soon as it is accepted.
//   - [Proxy.Blackhole]: a network partition. Connections are accepted and kept, nothing
//     is closed, and no byte passes in either direction: clients hang until their own
//     timeouts.
//   - [Proxy.Resume]: back to normal. After a Blackhole, the bytes that were held are
//     delivered, in order, on the connections that are still open, as TCP would once a
//     partition heals; call Cut before Resume for a clean slate instead.
//   - [Proxy.SetDelay]: every chunk of bytes waits before it is forwarded.
//
// Every method is safe for concurrent use, and [Proxy.Close] returns only once every
// goroutine of the proxy has ended.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// bufferSize is the largest chunk one read takes from a connection.
	bufferSize = 32 << 10
	// dialTimeout bounds each connection to the target.
	dialTimeout = 10 * time.Second
	// acceptRetryDelay is the pause after a failed Accept (out of file descriptors)
	// before the next one.
	acceptRetryDelay = 10 * time.Millisecond
)

// mode is what the proxy does with traffic.
type mode int

const (
	forwarding mode = iota // normal forwarding
	cut                    // close everything, refuse new connections
	blackholed             // accept, hold, forward nothing
)

// Proxy is a TCP proxy from a local address to one target. Create it with [Start] or
// [New].
type Proxy struct {
	target   string
	ln       net.Listener
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop and every goroutine of every link
	accepted atomic.Int64
	delay    atomic.Int64 // a time.Duration

	mu     sync.Mutex
	mode   mode
	healed chan struct{} // closed when a Blackhole ends; nil when none is on
	links  map[*link]struct{}
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// Start listens on 127.0.0.1:0 and forwards every accepted connection to target
// (host:port), which is dialled anew for each.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, links: map[*link]struct{}{}}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// New is [Start] for tests: it fails t on error and closes the proxy in t.Cleanup.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("faultproxy: close: %v", err)
		}
	})
	return p
}

// Addr returns the address, host:port, that clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Cut closes every open connection at once, on both sides, and closes every connection
// accepted from now on as soon as it is accepted, like a server that went away. It
// lasts until [Proxy.Resume].
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.setMode(cut)
	links := p.takeLinks()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Blackhole starts a network partition: connections are still accepted, open ones are
// kept, nothing is closed, and no byte is forwarded in either direction. Bytes are held:
// each direction of a connection stops reading once it holds one chunk, the rest waits
// in the kernel's buffers. A new connection is not dialled to the target until the
// partition ends. Clients hang until their own timeouts. Unlike a real partition, the
// TCP handshake with the proxy still completes, so a client's connect succeeds and it
// hangs in its first read instead (its dial timeout is not exercised). It lasts until
// [Proxy.Resume] or [Proxy.Cut].
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.setMode(blackholed)
	p.mu.Unlock()
}

// Resume returns to normal forwarding. After a Blackhole, the connections that are still
// open are kept and their held bytes delivered in order (those their clients closed in
// the meantime are closed once that shows); after a Cut, only new connections exist.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.setMode(forwarding)
	p.mu.Unlock()
}

// SetDelay delays every chunk forwarded, in both directions, by d: a request and its
// answer take at least 2d longer. 0 means no delay. It applies at once to open and new
// connections.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// Accepted returns how many connections the proxy has accepted so far, including those
// it closed at once during a Cut.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Open returns how many connections are open now: forwarding, or held by a Blackhole.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, closes every connection, and waits for every goroutine of the
// proxy to end. Later calls return the first call's result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		links := p.takeLinks()
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		for _, l := range links {
			l.close()
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// setMode switches to m. p.mu must be held.
func (p *Proxy) setMode(m mode) {
	if p.mode == blackholed && m != blackholed {
		close(p.healed)
		p.healed = nil
	}
	if m == blackholed && p.mode != blackholed {
		p.healed = make(chan struct{})
	}
	p.mode = m
}

// takeLinks empties the set of open links and returns them. p.mu must be held.
func (p *Proxy) takeLinks() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
		delete(p.links, l)
	}
	return links
}

// acceptLoop accepts connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select { // e.g. out of file descriptors: try again shortly
			case <-p.ctx.Done():
				return
			case <-time.After(acceptRetryDelay):
			}
			continue
		}
		p.accepted.Add(1)

		p.mu.Lock()
		if p.closed || p.mode == cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		ctx, cancel := context.WithCancel(p.ctx)
		l := &link{client: c, ctx: ctx, cancel: cancel}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(l) })
	}
}

// serve dials the target for l, once no Blackhole holds it, and starts forwarding.
func (p *Proxy) serve(l *link) {
	if !p.waitHealed(l) {
		p.drop(l)
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(l.ctx, "tcp", p.target)
	if err != nil || !l.setServer(server) {
		p.drop(l)
		return
	}
	var open atomic.Int32 // directions that have not reached EOF
	open.Store(2)
	pump := func(dst, src net.Conn) {
		// A failure ends both directions; EOF ends one, and l with the second.
		if !p.pump(l, dst, src) || open.Add(-1) == 0 {
			p.drop(l)
		}
	}
	p.wg.Go(func() { pump(server, l.client) })
	p.wg.Go(func() { pump(l.client, server) })
}

// pump forwards src to dst until src reaches EOF, which it passes on by closing dst's
// writing half, and reports true; it reports false when a read or write fails or l is
// closed. Like a chunk, the end of src waits for a Blackhole to end before it has any
// effect on dst.
func (p *Proxy) pump(l *link, dst, src net.Conn) bool {
	buf := make([]byte, bufferSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(l) {
				return false
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return false
			}
		}
		if err != nil {
			if !p.waitHealed(l) || !errors.Is(err, io.EOF) {
				return false
			}
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			return true
		}
	}
}

// hold waits, before a chunk of l is written, for the delay and for any Blackhole to
// end. It reports false when l is closed meanwhile.
func (p *Proxy) hold(l *link) bool {
	if d := time.Duration(p.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.ctx.Done():
			return false
		}
	}
	return p.waitHealed(l)
}

// waitHealed waits until no Blackhole is on. It reports false when l is closed
// meanwhile.
func (p *Proxy) waitHealed(l *link) bool {
	for {
		p.mu.Lock()
		healed := p.healed
		p.mu.Unlock()
		if healed == nil {
			return !l.isDone()
		}
		select {
		case <-healed:
		case <-l.ctx.Done():
			return false
		}
	}
}

// drop closes l and forgets it.
func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close()
}

// link is one proxied connection: the client's side and, once dialled, the target's.
type link struct {
	client net.Conn
	ctx    context.Context // cancelled by close; ends dials and waits
	cancel context.CancelFunc

	mu     sync.Mutex
	server net.Conn
	done   bool
}

// setServer records the connection to the target. It closes server and reports false
// when l is closed already.
func (l *link) setServer(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		_ = server.Close()
		return false
	}
	l.server = server
	return true
}

// isDone reports whether l is closed.
func (l *link) isDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// close closes both sides of l; later calls do nothing.
func (l *link) close() {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	l.done = true
	server := l.server
	l.mu.Unlock()
	l.cancel()
	_ = l.client.Close()
	if server != nil {
		_ = server.Close()
	}
}
