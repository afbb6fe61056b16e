package webhook

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

// ErrPrivateAddress is the error, wrapped, of a webhook URL whose host is
// or resolves to an address that is not public — loopback, private,
// link-local, unspecified, multicast, shared (carrier-grade NAT) or
// reserved — and of a connection to such an address, when the Guard does
// not allow them.
var ErrPrivateAddress = errors.New("webhook: the address is not public")

// maxURLLength is the longest webhook URL CheckURL accepts, in bytes.
const maxURLLength = 2048

// defaultDeliveryTimeout is the timeout of Guard.Client when it is given none.
const defaultDeliveryTimeout = 30 * time.Second

// Guard keeps webhook deliveries away from the network the server runs
// in (server-side request forgery): an organization that registers
// http://169.254.169.254/ or http://10.0.0.5/admin as its endpoint must
// not make the server send requests there. CheckURL refuses such URLs at
// registration; DialContext, which Client uses, refuses to connect to
// such addresses at delivery, after a name that resolved to a public
// address at registration was changed to resolve to a private one (DNS
// rebinding).
//
// The zero Guard refuses every address that is not public and resolves
// names with net.DefaultResolver.
type Guard struct {
	// AllowPrivate allows every address: loopback, private and the rest.
	// Tests and development setups, whose receivers run on the same
	// machine or network, turn it on.
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

// CheckURL checks raw, the URL of a webhook endpoint an organization
// registers. The URL must be absolute, http or https, with a host, without
// user name, password or fragment, and at most 2048 bytes long. Its host
// — an IP address, or a name, which CheckURL resolves to all its addresses
// — must not be loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
// link-local (169.254/16, which holds the cloud metadata address
// 169.254.169.254, and fe80::/10), unspecified, multicast, shared
// (100.64/10), 0/8, reserved (240/4, ::/96), or an IPv4-mapped or NAT64
// (64:ff9b::/96) IPv6 form of one of them, unless g.AllowPrivate. A name that does not resolve is refused as
// well.
//
// The error's message says which rule failed, in words meant for the
// client (for example "the URL's host resolves to a loopback address
// (127.0.0.1)"); it does not start with the package name so that an API
// can show it as it is. For the address rules it wraps ErrPrivateAddress.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > maxURLLength {
		return refuse("the URL is longer than %d characters", maxURLLength)
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
			return &guardError{msg: fmt.Sprintf("the URL's host resolves to %s address (%s)", kind, ip.Unmap().WithZone("")), private: true}
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
// for the Transport that delivers webhooks. Unless g.AllowPrivate, it
// refuses, with an error that wraps ErrPrivateAddress, to connect to an
// address CheckURL refuses; the check is made on the address the
// connection is about to use, after resolution, so a name that resolves
// to a different address now than at registration cannot reach the
// server's own network. When a name has several addresses, the refused
// ones are skipped and the others tried.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  g.Resolver,
		Control:   g.control,
	}
	return d.DialContext(ctx, network, addr)
}

// control is the net.Dialer.Control of DialContext: it runs after the
// socket is created and before it connects, with the resolved address.
func (g Guard) control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &guardError{msg: fmt.Sprintf("webhook: refused to connect to %q, not an IP address and port", address), private: true}
	}
	if kind := nonPublicKind(ap.Addr()); kind != "" {
		return &guardError{msg: fmt.Sprintf("webhook: refused to connect to %s, %s address", ap.Addr().Unmap().WithZone(""), kind), private: true}
	}
	return nil
}

// Client returns an HTTP client for delivering webhooks: it connects
// through g.DialContext, uses no proxy (not even one the environment
// names), does not follow redirects (a 3xx answer is returned as it is,
// and counts as a failed delivery), and gives up on a request after
// timeout, which also bounds the wait for the response headers; zero or
// less means 30 seconds. TLS handshakes time out after 10 seconds, at
// most 8 idle connections are kept per host, for 90 seconds.
func (g Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = defaultDeliveryTimeout
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

// Address ranges netip's predicates do not name.
var (
	rangeThisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122 "this network"
	rangeSharedCGNAT = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598 carrier-grade NAT
	rangeReserved4   = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112 reserved, holds 255.255.255.255
	rangeSiteLocal6  = netip.MustParsePrefix("fec0::/10")     // RFC 3879 deprecated site-local
	rangeCompat6     = netip.MustParsePrefix("::/96")         // RFC 4291 deprecated IPv4-compatible
	rangeNAT64       = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052 NAT64, the IPv4 address in the last 32 bits
)

// nonPublicKind returns what kind of non-public address ip is, with its
// article ("a loopback"), or "" for a public address. IPv4-mapped IPv6
// addresses (::ffff:127.0.0.1) are judged as the IPv4 address they map,
// NAT64 ones (64:ff9b::a00:1) as the IPv4 address they embed as well.
func nonPublicKind(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if rangeNAT64.Contains(ip) {
		b := ip.As16()
		if kind := nonPublicKind(netip.AddrFrom4([4]byte(b[12:]))); kind != "" {
			return kind
		}
	}
	switch {
	case !ip.IsValid():
		return "an invalid"
	case ip.IsLoopback():
		return "a loopback"
	case ip.IsUnspecified():
		return "an unspecified"
	case rangeThisNetwork.Contains(ip):
		return `a "this network" (0.0.0.0/8)`
	case ip.IsPrivate(), rangeSiteLocal6.Contains(ip):
		return "a private"
	case ip.IsLinkLocalUnicast():
		return "a link-local"
	case ip.IsMulticast():
		return "a multicast"
	case rangeSharedCGNAT.Contains(ip):
		return "a shared (carrier-grade NAT)"
	case rangeReserved4.Contains(ip), rangeCompat6.Contains(ip):
		return "a reserved"
	}
	return ""
}
