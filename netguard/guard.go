// Package netguard keeps the HTTP requests a server makes on behalf of
// its clients — to a webhook endpoint an organization registered, to the
// metadata document of an OAuth client whose client_id is a URL — away
// from the network the server itself runs in: server-side request
// forgery (SSRF). A client that gives http://169.254.169.254/ (the cloud
// metadata service), http://10.0.0.5/admin or a name that resolves to
// 127.0.0.1 must not make the server send requests there.
//
// Guard.CheckURL refuses such URLs when a client gives them, with a
// message meant for that client; Guard.DialContext, and Guard.Client,
// which connects through it, refuse to connect to such addresses when
// the request is made, so a name changed to resolve to a private address
// after it was checked (DNS rebinding) reaches nothing either. The
// refused addresses are every block of the IANA IPv4 and IPv6
// special-purpose address registries that is not globally reachable
// (loopback, private, link-local, shared, documentation, benchmarking,
// reserved, ...), multicast, 6to4, Teredo and site-local; Guard.AllowPrivate
// turns the address rules off for tests and development setups. Errors
// about addresses wrap ErrPrivateAddress and never tell what a name
// resolves to.
//
// The package uses the standard library only.
package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrPrivateAddress is the error, wrapped, of a URL whose host is or
// resolves to an address that is not public — loopback, private,
// link-local, unspecified, multicast, shared (carrier-grade NAT),
// documentation, benchmarking, 6to4, Teredo or otherwise reserved — and of
// a connection to such an address, when the Guard does not allow them.
var ErrPrivateAddress = errors.New("netguard: the address is not public")

// MaxURLLength is the longest URL CheckURL accepts, in bytes.
const MaxURLLength = 2048

// defaultTimeout is the timeout of Guard.Client when it is given none.
const defaultTimeout = 30 * time.Second

// Guard keeps the requests a server makes to URLs its clients give it —
// webhook deliveries, fetches of client metadata documents — away from
// the network the server runs in (server-side request forgery): an
// organization that registers http://169.254.169.254/ or
// http://10.0.0.5/admin as its webhook endpoint must not make the server
// send requests there. CheckURL refuses such URLs when they are given;
// DialContext, which Client uses, refuses to connect to such addresses
// when the request is made, after a name that resolved to a public
// address when it was checked was changed to resolve to a private one
// (DNS rebinding).
//
// The zero Guard refuses every address that is not public and resolves
// names with net.DefaultResolver.
type Guard struct {
	// AllowPrivate allows every address: loopback, private and the rest.
	// Tests and development setups, whose receivers and servers run on
	// the same machine or network, turn it on.
	AllowPrivate bool
	// Resolver resolves the host names of URLs and of connections; nil
	// means net.DefaultResolver.
	Resolver *net.Resolver
}

// guardError is an error of the guard with its own message (one meant for
// the client that registered a URL, in CheckURL). It wraps
// ErrPrivateAddress when the rule that failed is about the address.
type guardError struct {
	msg     string
	private bool
}

func (e *guardError) Error() string { return e.msg }

func (e *guardError) Unwrap() error {
	if e.private {
		return ErrPrivateAddress
	}
	return nil
}

func refuse(format string, args ...any) error {
	return &guardError{msg: fmt.Sprintf(format, args...)}
}

// CheckURL checks raw, a URL a client gives the server to send requests
// to (the URL of a webhook endpoint an organization registers, for
// example). The URL must be absolute, http or https, with a host, without
// user name, password or fragment, and at most 2048 bytes long. Its host
// — an IP address, or a name, which CheckURL resolves to all its addresses
// — must be globally reachable, unless g.AllowPrivate: not in a block of
// the IANA IPv4 and IPv6 special-purpose address registries that is not
// (loopback, private 10/8, 172.16/12, 192.168/16 and fc00::/7, link-local
// 169.254/16 — which holds the cloud metadata address 169.254.169.254 —
// and fe80::/10, shared 100.64/10, 0/8, 192.0.0/24, the documentation
// blocks 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32 and
// 3fff::/20, benchmarking 198.18/15, reserved 240/4, ::/96, 100::/64,
// 100:0:0:1::/64, 64:ff9b:1::/48, 2001::/23 with Teredo 2001::/32, and
// 5f00::/16), nor multicast, site-local (fec0::/10), 6to4 (2002::/16 and
// its relays 192.88.99/24), an IPv6 address outside the global unicast
// space 2000::/3 (the rest is reserved), or an IPv4-mapped or NAT64
// (64:ff9b::/96) IPv6 form of a refused IPv4 address. A name that does not
// resolve is refused as well.
//
// The error's message says which rule failed, in words meant for the
// client (for example "the URL's host resolves to a loopback address"); it
// does not start with the package name so that an API can show it as it
// is. It shows the address of a host given as one, never the addresses a
// name resolves to: those are the server's network's business. For the
// address rules it wraps ErrPrivateAddress.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > MaxURLLength {
		return refuse("the URL is longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refuse("the URL is not a valid URL")
	}
	switch {
	case u.Scheme == "":
		return refuse("the URL must be absolute, starting with https:// or http://")
	case u.Scheme != "http" && u.Scheme != "https":
		return refuse("the URL's scheme must be https or http, not %q", u.Scheme)
	case u.Opaque != "":
		return refuse("the URL must have a host, as in https://example.com/hook")
	case u.User != nil:
		return refuse("the URL must not contain a user name or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return refuse("the URL must not have a fragment (#...)")
	case u.Hostname() == "":
		return refuse("the URL must have a host, as in https://example.com/hook")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return refuse("the URL's port must be a number from 1 to 65535")
		}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if kind := nonPublicKind(ip); kind != "" && !g.AllowPrivate {
			return &guardError{msg: fmt.Sprintf("the URL's host is %s address (%s)", kind, ip), private: true}
		}
		return nil
	}
	ips, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		if ctx.Err() != nil {
			return refuse("the URL's host %q could not be resolved in time", host)
		}
		return refuse("the URL's host %q does not resolve to an address", host)
	}
	if g.AllowPrivate {
		return nil
	}
	for _, ip := range ips {
		if kind := nonPublicKind(ip); kind != "" {
			return &guardError{msg: fmt.Sprintf("the URL's host resolves to %s address", kind), private: true}
		}
	}
	return nil
}

func (g Guard) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// DialContext connects to addr on the named network as net.Dialer does,
// for the Transport of requests to the URLs clients give. Unless g.AllowPrivate, it
// refuses, with an error that wraps ErrPrivateAddress, to connect to an
// address CheckURL refuses; the check is made on the address the
// connection is about to use, after resolution, so a name that resolves
// to a different address now than when it was checked cannot reach the
// server's own network. When a name has several addresses, the refused
// ones are skipped and the others tried. The error of a refusal names the
// kind of address, not the address: a server may show it to the client
// that gave the URL (a webhook delivery's attempts show it to the
// organization), which has no business knowing what its URL's name
// resolves to inside the server's network.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  g.Resolver,
		Control:   g.control,
	}
	c, err := d.DialContext(ctx, network, addr)
	var refused *guardError
	if errors.As(err, &refused) {
		// Not the *net.OpError around it, whose text has the address.
		return nil, refused
	}
	return c, err
}

// control is the net.Dialer.Control of DialContext: it runs after the
// socket is created and before it connects, with the resolved address.
func (g Guard) control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &guardError{msg: "netguard: refused to connect to an address that is not an IP address and port", private: true}
	}
	if kind := nonPublicKind(ap.Addr()); kind != "" {
		return &guardError{msg: fmt.Sprintf("netguard: refused to connect to %s address", kind), private: true}
	}
	return nil
}

// Client returns an HTTP client for requests to the URLs clients give
// (webhook deliveries, for example): it connects through g.DialContext,
// uses no proxy (not even one the environment names), does not follow
// redirects (a 3xx answer is returned as it is, for the caller to treat
// as a failure), and gives up on a request after
// timeout, which also bounds the wait for the response headers; zero or
// less means 30 seconds. TLS handshakes time out after 10 seconds, at
// most 8 idle connections are kept per host, for 90 seconds.
func (g Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    min(10*time.Second, timeout),
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// nonPublic are the blocks of addresses the Guard refuses,
// with the words of an error for each ("the URL's host is a loopback
// address"): those of the IANA special-purpose address registries for
// IPv4 (RFC 6890 and its updates) and IPv6 that are not globally
// reachable, and multicast, 6to4 and site-local. A block inside another
// comes first, so that the error names the narrower.
var nonPublic = []struct {
	prefix netip.Prefix
	kind   string
}{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified"},
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" (0.0.0.0/8)`},     // RFC 791
	{netip.MustParsePrefix("10.0.0.0/8"), "a private"},                       // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT)"}, // RFC 6598
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private"},
	// RFC 6890: DS-Lite, NAT64 discovery, PCP and TURN anycast; the
	// anycast ones (192.0.0.9, 192.0.0.10) are reachable, and no one's
	// server a client would name.
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved (IETF protocol assignments, 192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation (TEST-NET-1, 192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay anycast (192.88.99.0/24)"}, // RFC 7526
	{netip.MustParsePrefix("192.168.0.0/16"), "a private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking (198.18.0.0/15)"}, // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation (TEST-NET-2, 198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation (TEST-NET-3, 203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved"}, // RFC 1112, holds 255.255.255.255
	// IPv6. IPv4-mapped addresses (::ffff:0:0/96) are judged as the IPv4
	// address they map, NAT64 ones (64:ff9b::/96) as the one they embed.
	{netip.MustParsePrefix("::/128"), "an unspecified"},
	{netip.MustParsePrefix("::1/128"), "a loopback"},
	{netip.MustParsePrefix("::/96"), "a reserved"},                                                  // RFC 4291, the deprecated IPv4-compatible addresses
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use IPv4/IPv6 translation (64:ff9b:1::/48)"}, // RFC 8215
	{netip.MustParsePrefix("100::/64"), "a discard-only (100::/64)"},                                // RFC 6666
	{netip.MustParsePrefix("100:0:0:1::/64"), "a dummy (100:0:0:1::/64)"},                           // the dummy IPv6 prefix
	{netip.MustParsePrefix("2001::/32"), "a Teredo (2001::/32)"},                                    // RFC 4380, embeds an IPv4 address
	// RFC 2928; the few reachable blocks inside (anycast services, AMT,
	// AS112, ORCHIDv2, drone identifiers) are no one's server either.
	{netip.MustParsePrefix("2001::/23"), "a reserved (IETF protocol assignments, 2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation (2001:db8::/32)"}, // RFC 3849
	{netip.MustParsePrefix("2002::/16"), "a 6to4 (2002::/16)"},                  // RFC 3056, embeds an IPv4 address
	{netip.MustParsePrefix("3fff::/20"), "a documentation (3fff::/20)"},         // RFC 9637
	{netip.MustParsePrefix("5f00::/16"), "a segment routing (SRv6, 5f00::/16)"}, // RFC 9602
	{netip.MustParsePrefix("fc00::/7"), "a private"},                            // RFC 4193, unique local
	{netip.MustParsePrefix("fe80::/10"), "a link-local"},
	{netip.MustParsePrefix("fec0::/10"), "a private"}, // RFC 3879, the deprecated site-local addresses
	{netip.MustParsePrefix("ff00::/8"), "a multicast"},
}

// rangeNAT64 holds the IPv6 forms of IPv4 addresses that NAT64 gateways
// translate (RFC 6052): the IPv4 address is in the last 32 bits.
var rangeNAT64 = netip.MustParsePrefix("64:ff9b::/96")

// rangeGlobalUnicast6 is the IPv6 global unicast space (RFC 4291): the
// rest of the IPv6 space (but for the blocks of nonPublic and NAT64) is
// reserved by the IETF and reaches no one's public server.
var rangeGlobalUnicast6 = netip.MustParsePrefix("2000::/3")

// nonPublicKind returns what kind of non-public address ip is, with its
// article ("a loopback"), or "" for a public address. IPv4-mapped IPv6
// addresses (::ffff:127.0.0.1) are judged as the IPv4 address they map,
// NAT64 ones (64:ff9b::a00:1) as the IPv4 address they embed.
func nonPublicKind(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "an invalid"
	}
	if rangeNAT64.Contains(ip) {
		b := ip.As16()
		return nonPublicKind(netip.AddrFrom4([4]byte(b[12:])))
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	if ip.Is6() && !rangeGlobalUnicast6.Contains(ip) {
		return "a reserved (outside the global unicast 2000::/3)"
	}
	return ""
}
