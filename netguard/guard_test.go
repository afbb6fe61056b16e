package netguard_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/waybillhq/waybill/netguard"
)

// hostsOnlyResolver resolves names from /etc/hosts only (localhost works)
// and fails at once for every other name instead of waiting for a DNS
// server the test machine does not have.
func hostsOnlyResolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("no DNS in tests")
		},
	}
}

func TestGuardCheckURL(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		private bool   // refused because of the address: wraps ErrPrivateAddress
		msg     string // part of the message; "" = accepted
	}{
		{"public IPv4", "https://93.184.216.34/hook", false, ""},
		{"public IPv4 with port and query", "http://93.184.216.34:8443/hooks/in?x=1", false, ""},
		{"public IPv6", "https://[2606:2800:220:1:248:1893:25c8:1946]/hook", false, ""},
		{"loopback", "http://127.0.0.1/hook", true, "the URL's host is a loopback address (127.0.0.1)"},
		{"loopback elsewhere in 127/8", "http://127.8.9.10:8080/", true, "loopback address (127.8.9.10)"},
		{"IPv6 loopback", "http://[::1]:8080/hook", true, "loopback address (::1)"},
		{"private 10/8", "https://10.1.2.3/hook", true, "private address (10.1.2.3)"},
		{"private 172.16/12", "https://172.16.0.1/hook", true, "private address (172.16.0.1)"},
		{"private 172.31", "https://172.31.255.255/hook", true, "private address"},
		{"public 172.32", "https://172.32.0.1/hook", false, ""},
		{"private 192.168/16", "https://192.168.1.1/hook", true, "private address (192.168.1.1)"},
		{"unique local fc00::/7", "https://[fd00::1]/hook", true, "private address (fd00::1)"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", true, "link-local address (169.254.169.254)"},
		{"IPv6 link-local", "http://[fe80::1]/hook", true, "link-local address (fe80::1)"},
		{"IPv6 link-local with zone", "http://[fe80::1%25eth0]/hook", true, "link-local address"},
		{"shared CGNAT", "http://100.64.0.1/hook", true, "carrier-grade NAT"},
		{"shared CGNAT upper end", "http://100.127.255.254/hook", true, "carrier-grade NAT"},
		{"public next to CGNAT", "http://100.128.0.1/hook", false, ""},
		{"unspecified", "http://0.0.0.0/hook", true, "unspecified address (0.0.0.0)"},
		{"IPv6 unspecified", "http://[::]/hook", true, "unspecified address"},
		{"this network", "http://0.1.2.3/hook", true, "this network"},
		{"multicast", "http://224.0.0.1/hook", true, "multicast address"},
		{"IPv6 multicast", "http://[ff02::1]/hook", true, "multicast address"},
		{"broadcast", "http://255.255.255.255/hook", true, "reserved address"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]/hook", true, "loopback address (::ffff:127.0.0.1)"},
		{"IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/hook", true, "link-local address (::ffff:169.254.169.254)"},
		{"IPv4-mapped private", "http://[::ffff:10.0.0.1]/hook", true, "private address (::ffff:10.0.0.1)"},
		{"NAT64 of private", "http://[64:ff9b::a00:1]/hook", true, "private address"},
		{"IPv4-compatible loopback", "http://[::127.0.0.1]/hook", true, "reserved address"},
		{"name resolving to loopback", "http://localhost:8080/hook", true, "the URL's host resolves to a loopback address"},
		{"name that does not resolve", "https://hooks.example.invalid/hook", false, `the URL's host "hooks.example.invalid" does not resolve`},
		{"ftp scheme", "ftp://93.184.216.34/hook", false, "scheme must be https or http"},
		{"javascript scheme", "javascript:alert(1)", false, "scheme must be https or http"},
		{"relative", "/hook", false, "must be absolute"},
		{"no host", "http:///hook", false, "must have a host"},
		{"opaque", "http:93.184.216.34", false, "must have a host"},
		{"port only", "http://:8080/hook", false, "must have a host"},
		{"userinfo", "https://user:pass@93.184.216.34/hook", false, "user name or password"},
		{"user only", "https://user@93.184.216.34/hook", false, "user name or password"},
		{"fragment", "https://93.184.216.34/hook#part", false, "fragment"},
		{"empty fragment", "https://93.184.216.34/hook#", false, "fragment"},
		{"port out of range", "https://93.184.216.34:70000/hook", false, "port must be a number"},
		{"port zero", "https://93.184.216.34:0/hook", false, "port must be a number"},
		{"unparsable", "http://[::1/hook", false, "not a valid URL"},
		{"too long", "https://93.184.216.34/" + strings.Repeat("a", 2048), false, "longer than 2048"},
		{"empty", "", false, "must be absolute"},
	}
	g := netguard.Guard{Resolver: hostsOnlyResolver()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURL(context.Background(), tt.url)
			if tt.msg == "" {
				must.NoError(t, err)
				return
			}
			must.Error(t, err)
			expect.Contains(t, err.Error(), tt.msg)
			expect.NotContains(t, err.Error(), "netguard:", "the message is meant for clients")
			expect.Equal(t, tt.private, errors.Is(err, netguard.ErrPrivateAddress))
		})
	}
}

func TestGuardCheckURLAllowPrivate(t *testing.T) {
	tests := []struct {
		name string
		url  string
		ok   bool
	}{
		{"loopback", "http://127.0.0.1:8080/hook", true},
		{"IPv6 loopback", "http://[::1]:8080/hook", true},
		{"localhost", "http://localhost:8080/hook", true},
		{"private", "http://10.1.2.3/hook", true},
		{"metadata", "http://169.254.169.254/", true},
		{"public", "https://93.184.216.34/hook", true},
		// The rules about the URL itself still hold.
		{"ftp scheme", "ftp://127.0.0.1/hook", false},
		{"userinfo", "http://u:p@127.0.0.1/hook", false},
		{"fragment", "http://127.0.0.1/hook#x", false},
		{"name that does not resolve", "http://hooks.example.invalid/", false},
	}
	g := netguard.Guard{AllowPrivate: true, Resolver: hostsOnlyResolver()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURL(context.Background(), tt.url)
			if tt.ok {
				must.NoError(t, err)
			} else {
				must.Error(t, err)
				expect.NotErrorIs(t, err, netguard.ErrPrivateAddress)
			}
		})
	}
}

func TestGuardClient(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	must.NoError(t, err)

	tests := []struct {
		name         string
		allowPrivate bool
		url          string
		ok           bool
	}{
		{"loopback refused", false, srv.URL, false},
		{"localhost refused", false, "http://localhost:" + port + "/", false},
		{"loopback allowed", true, srv.URL, true},
		{"localhost allowed", true, "http://localhost:" + port + "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			c := netguard.Guard{AllowPrivate: tt.allowPrivate, Resolver: hostsOnlyResolver()}.Client(5 * time.Second)
			resp, err := c.Post(tt.url, "application/json", strings.NewReader(`{}`))
			if !tt.ok {
				must.Error(t, err)
				expect.ErrorIs(t, err, netguard.ErrPrivateAddress)
				expect.Equal(t, before, hits.Load(), "the server got no request")
				return
			}
			must.NoError(t, err)
			resp.Body.Close()
			expect.Equal(t, http.StatusNoContent, resp.StatusCode)
			expect.Equal(t, before+1, hits.Load())
		})
	}
}

func TestGuardDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	must.NoError(t, err)

	tests := []struct {
		name         string
		allowPrivate bool
		addr         string
		ok           bool
	}{
		{"IP refused", false, ln.Addr().String(), false},
		{"name refused", false, "localhost:" + port, false},
		{"IPv4-mapped refused", false, "[::ffff:127.0.0.1]:" + port, false},
		{"IP allowed", true, ln.Addr().String(), true},
		{"name allowed", true, "localhost:" + port, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := netguard.Guard{AllowPrivate: tt.allowPrivate, Resolver: hostsOnlyResolver()}
			c, err := g.DialContext(context.Background(), "tcp", tt.addr)
			if !tt.ok {
				must.ErrorIs(t, err, netguard.ErrPrivateAddress)
				expect.NotContains(t, err.Error(), "ErrPrivateAddress")
				return
			}
			must.NoError(t, err)
			c.Close()
		})
	}
}

func TestGuardClientDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Bool
	c := netguard.Guard{AllowPrivate: true}.Client(5 * time.Second)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", code)
			})
			mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
				followed.Store(true)
				w.WriteHeader(http.StatusNoContent)
			})
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			resp, err := c.Post(srv.URL+"/hook", "application/json", strings.NewReader(`{}`))
			must.NoError(t, err)
			resp.Body.Close()
			expect.Equal(t, code, resp.StatusCode, "the 3xx is the answer")
			expect.False(t, followed.Load(), "the redirect was not followed")
		})
	}
}

func TestGuardClientTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
	}))
	t.Cleanup(func() { close(block); srv.Close() })

	c := netguard.Guard{AllowPrivate: true}.Client(200 * time.Millisecond)
	start := time.Now()
	_, err := c.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	must.Error(t, err)
	expect.Less(t, time.Since(start), 5*time.Second)
}

func TestGuardClientSettings(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"given", 7 * time.Second, 7 * time.Second},
		{"zero means the default", 0, 30 * time.Second},
		{"negative means the default", -time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := netguard.Guard{}.Client(tt.timeout)
			expect.Equal(t, tt.want, c.Timeout)
			tr, ok := c.Transport.(*http.Transport)
			must.True(t, ok)
			expect.Nil(t, tr.Proxy, "no proxy, not even one the environment names")
			expect.NotNil(t, tr.DialContext)
			expect.Equal(t, tt.want, tr.ResponseHeaderTimeout)
			expect.NotZero(t, tr.TLSHandshakeTimeout)
			expect.Equal(t, 8, tr.MaxIdleConnsPerHost)
			expect.Equal(t, 90*time.Second, tr.IdleConnTimeout)
		})
	}
}

// guardRanges are addresses inside and just outside each block the Guard
// refuses, with the kind of address its errors name ("" for a public
// address, which it accepts).
var guardRanges = []struct {
	addr, kind string
}{
	// IPv4.
	{"0.0.0.0", "an unspecified"},
	{"0.0.0.1", `a "this network" (0.0.0.0/8)`},
	{"0.255.255.255", `a "this network" (0.0.0.0/8)`},
	{"1.0.0.0", ""},
	{"9.255.255.255", ""},
	{"10.0.0.0", "a private"},
	{"10.255.255.255", "a private"},
	{"11.0.0.0", ""},
	{"100.63.255.255", ""},
	{"100.64.0.0", "a shared (carrier-grade NAT)"},
	{"100.127.255.255", "a shared (carrier-grade NAT)"},
	{"100.128.0.0", ""},
	{"126.255.255.255", ""},
	{"127.0.0.0", "a loopback"},
	{"127.255.255.255", "a loopback"},
	{"128.0.0.0", ""},
	{"169.253.255.255", ""},
	{"169.254.0.0", "a link-local"},
	{"169.254.255.255", "a link-local"},
	{"169.255.0.0", ""},
	{"172.15.255.255", ""},
	{"172.16.0.0", "a private"},
	{"172.31.255.255", "a private"},
	{"172.32.0.0", ""},
	{"191.255.255.255", ""},
	{"192.0.0.0", "a reserved (IETF protocol assignments, 192.0.0.0/24)"},
	{"192.0.0.9", "a reserved (IETF protocol assignments, 192.0.0.0/24)"},
	{"192.0.0.255", "a reserved (IETF protocol assignments, 192.0.0.0/24)"},
	{"192.0.1.0", ""},
	{"192.0.1.255", ""},
	{"192.0.2.0", "a documentation (TEST-NET-1, 192.0.2.0/24)"},
	{"192.0.2.255", "a documentation (TEST-NET-1, 192.0.2.0/24)"},
	{"192.0.3.0", ""},
	{"192.88.98.255", ""},
	{"192.88.99.0", "a 6to4 relay anycast (192.88.99.0/24)"},
	{"192.88.99.255", "a 6to4 relay anycast (192.88.99.0/24)"},
	{"192.88.100.0", ""},
	{"192.167.255.255", ""},
	{"192.168.0.0", "a private"},
	{"192.168.255.255", "a private"},
	{"192.169.0.0", ""},
	{"198.17.255.255", ""},
	{"198.18.0.0", "a benchmarking (198.18.0.0/15)"},
	{"198.19.255.255", "a benchmarking (198.18.0.0/15)"},
	{"198.20.0.0", ""},
	{"198.51.99.255", ""},
	{"198.51.100.0", "a documentation (TEST-NET-2, 198.51.100.0/24)"},
	{"198.51.100.255", "a documentation (TEST-NET-2, 198.51.100.0/24)"},
	{"198.51.101.0", ""},
	{"203.0.112.255", ""},
	{"203.0.113.0", "a documentation (TEST-NET-3, 203.0.113.0/24)"},
	{"203.0.113.255", "a documentation (TEST-NET-3, 203.0.113.0/24)"},
	{"203.0.114.0", ""},
	{"223.255.255.255", ""},
	{"224.0.0.0", "a multicast"},
	{"239.255.255.255", "a multicast"},
	{"240.0.0.0", "a reserved"},
	{"255.255.255.255", "a reserved"},
	// IPv4-mapped and NAT64 forms are judged as the IPv4 address.
	{"::ffff:1.1.1.1", ""},
	{"::ffff:192.0.2.1", "a documentation (TEST-NET-1, 192.0.2.0/24)"},
	{"::ffff:198.18.0.1", "a benchmarking (198.18.0.0/15)"},
	{"64:ff9b::101:101", ""},
	{"64:ff9b::c000:201", "a documentation (TEST-NET-1, 192.0.2.0/24)"},
	{"64:ff9b::a00:1", "a private"},
	{"64:ff9b::1:0:0:0", "a reserved (outside the global unicast 2000::/3)"},
	// IPv6.
	{"::", "an unspecified"},
	{"::1", "a loopback"},
	{"::2", "a reserved"},
	{"::ffff:ffff", "a reserved"},
	{"::1:0:0", "a reserved (outside the global unicast 2000::/3)"},
	{"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"64:ff9b:1::", "a local-use IPv4/IPv6 translation (64:ff9b:1::/48)"},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "a local-use IPv4/IPv6 translation (64:ff9b:1::/48)"},
	{"64:ff9b:2::", "a reserved (outside the global unicast 2000::/3)"},
	{"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"100::", "a discard-only (100::/64)"},
	{"100::ffff:ffff:ffff:ffff", "a discard-only (100::/64)"},
	{"100:0:0:1::", "a dummy (100:0:0:1::/64)"},
	{"100:0:0:1:ffff:ffff:ffff:ffff", "a dummy (100:0:0:1::/64)"},
	{"100:0:0:2::", "a reserved (outside the global unicast 2000::/3)"},
	{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"2000::", ""},
	{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001::", "a Teredo (2001::/32)"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo (2001::/32)"},
	{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "a Teredo (2001::/32)"},
	{"2001:1::", "a reserved (IETF protocol assignments, 2001::/23)"},
	{"2001:2::1", "a reserved (IETF protocol assignments, 2001::/23)"},
	{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (IETF protocol assignments, 2001::/23)"},
	{"2001:200::", ""},
	{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2001:db8::", "a documentation (2001:db8::/32)"},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "a documentation (2001:db8::/32)"},
	{"2001:db9::", ""},
	{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"2002::", "a 6to4 (2002::/16)"},
	{"2002:a00:1::1", "a 6to4 (2002::/16)"},
	{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a 6to4 (2002::/16)"},
	{"2003::", ""},
	{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"3fff::", "a documentation (3fff::/20)"},
	{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "a documentation (3fff::/20)"},
	{"3fff:1000::", ""},
	{"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
	{"4000::", "a reserved (outside the global unicast 2000::/3)"},
	{"5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"5f00::", "a segment routing (SRv6, 5f00::/16)"},
	{"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a segment routing (SRv6, 5f00::/16)"},
	{"5f01::", "a reserved (outside the global unicast 2000::/3)"},
	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"fc00::", "a private"},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a private"},
	{"fe00::", "a reserved (outside the global unicast 2000::/3)"},
	{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a reserved (outside the global unicast 2000::/3)"},
	{"fe80::", "a link-local"},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a link-local"},
	{"fec0::", "a private"},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a private"},
	{"ff00::", "a multicast"},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a multicast"},
}

// Every refused block at registration: an address inside is refused with
// the kind of its block, and one just outside is accepted or refused as
// the block next to it.
func TestGuardCheckURLRanges(t *testing.T) {
	t.Parallel()
	g := netguard.Guard{Resolver: hostsOnlyResolver()}
	allow := netguard.Guard{AllowPrivate: true, Resolver: hostsOnlyResolver()}
	for _, tt := range guardRanges {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			u := "https://" + tt.addr + "/hook"
			if ip.Is6() {
				u = "https://[" + tt.addr + "]/hook"
			}
			err := g.CheckURL(context.Background(), u)
			must.NoError(t, allow.CheckURL(context.Background(), u), "AllowPrivate allows every address")
			if tt.kind == "" {
				expect.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, netguard.ErrPrivateAddress)
			expect.Equal(t, "the URL's host is "+tt.kind+" address ("+ip.String()+")", err.Error())
		})
	}
}

// Every refused block at connection: the dialer refuses an address inside
// before connecting, and its error names the kind of address, not the
// address.
func TestGuardDialContextRanges(t *testing.T) {
	t.Parallel()
	g := netguard.Guard{Resolver: hostsOnlyResolver()}
	for _, tt := range guardRanges {
		if tt.kind == "" {
			continue // a public address would be dialled
		}
		t.Run(tt.addr, func(t *testing.T) {
			_, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(tt.addr, "443"))
			if errors.Is(err, syscall.EAFNOSUPPORT) {
				t.Skip("no IPv6 on this machine")
			}
			must.ErrorIs(t, err, netguard.ErrPrivateAddress)
			expect.Equal(t, "netguard: refused to connect to "+tt.kind+" address", err.Error())
		})
	}
}

// fakeResolver returns a resolver that answers every name with addrs (the
// IPv4 ones to A queries, the IPv6 ones to AAAA queries) without a
// network: Go's resolver speaks DNS over the stream framing of TCP to
// what Dial returns, here a pipe to serveDNS.
func fakeResolver(addrs ...string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, addrs)
		return client, nil
	}}
}

// serveDNS answers the DNS queries that come on c with addrs.
func serveDNS(c net.Conn, addrs []string) {
	defer c.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
			return
		}
		end := 12 // the question: a name, then type and class
		for end < len(q) && q[end] != 0 {
			end += int(q[end]) + 1
		}
		if end+5 > len(q) {
			return
		}
		qtype := binary.BigEndian.Uint16(q[end+1:])
		var answers [][]byte
		for _, s := range addrs {
			a := netip.MustParseAddr(s)
			if (qtype == 1 && a.Is4()) || (qtype == 28 && a.Is6()) {
				rr := []byte{0xc0, 12} // the name of the question
				rr = binary.BigEndian.AppendUint16(rr, qtype)
				rr = binary.BigEndian.AppendUint16(rr, 1) // IN
				rr = binary.BigEndian.AppendUint32(rr, 60)
				rr = binary.BigEndian.AppendUint16(rr, uint16(len(a.AsSlice())))
				answers = append(answers, append(rr, a.AsSlice()...))
			}
		}
		resp := append([]byte{}, q[:2]...)                               // the query's id
		resp = append(resp, 0x81, 0x80, 0, 1)                            // an answer, recursion available; one question
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(answers))) // answers
		resp = append(resp, 0, 0, 0, 0)                                  // no authority, no additional
		resp = append(resp, q[12:end+5]...)
		for _, rr := range answers {
			resp = append(resp, rr...)
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...)); err != nil {
			return
		}
	}
}

// A name that resolves to an address the Guard refuses is refused, at
// registration and at connection, with errors that say what kind of
// address it resolves to and never which: what names resolve to inside
// the server's network is not the client's business.
func TestGuardDoesNotTellWhatNamesResolveTo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		addrs []string
		kind  string
	}{
		{"private", []string{"10.1.2.3"}, "a private"},
		{"cloud metadata", []string{"169.254.169.254"}, "a link-local"},
		{"unique local", []string{"fd12:3456:789a::5"}, "a private"},
		{"public and private", []string{"93.184.216.34", "192.168.7.7"}, "a private"},
		{"6to4 of a private address", []string{"2002:a01:203::1"}, "a 6to4 (2002::/16)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := netguard.Guard{Resolver: fakeResolver(tt.addrs...)}
			err := g.CheckURL(context.Background(), "https://hooks.internal.example/hook")
			must.ErrorIs(t, err, netguard.ErrPrivateAddress)
			expect.Equal(t, "the URL's host resolves to "+tt.kind+" address", err.Error())
			if len(tt.addrs) == 1 {
				_, err = g.DialContext(context.Background(), "tcp", "hooks.internal.example:443")
				if errors.Is(err, syscall.EAFNOSUPPORT) {
					t.Skip("no IPv6 on this machine")
				}
				must.ErrorIs(t, err, netguard.ErrPrivateAddress)
				expect.Equal(t, "netguard: refused to connect to "+tt.kind+" address", err.Error())
			}
			for _, a := range tt.addrs {
				for _, form := range []string{a, netip.MustParseAddr(a).StringExpanded()} {
					expect.NotContains(t, err.Error(), form)
				}
			}
			must.NoError(t, netguard.Guard{AllowPrivate: true, Resolver: fakeResolver(tt.addrs...)}.
				CheckURL(context.Background(), "https://hooks.internal.example/hook"), "AllowPrivate allows it")
		})
	}
}
