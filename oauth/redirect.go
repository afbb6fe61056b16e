package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/waybillhq/waybill/internal/excerpt"
)

// maxRedirectURILength is the longest redirect URI accepted, in bytes.
const maxRedirectURILength = 2000

// CheckRedirectURI returns nil if raw may be registered as a redirect URI,
// and otherwise an error that says why not. The rules are those of OAuth 2.1
// and RFC 8252 (OAuth for native apps):
//
//   - https with a host: https://app.example.com/callback;
//   - http only on a loopback host, for a native app that listens on the
//     device: http://127.0.0.1:8080/cb, http://[::1]:8080/cb,
//     http://localhost:8080/cb;
//   - a private-use scheme in reverse-domain form, followed by a single
//     slash (RFC 8252 section 7.1): com.example.app:/callback.
//
// Every redirect URI is absolute, has no fragment and no user information
// (user@), and is at most 2000 printable ASCII characters; its scheme is in
// lower case; a host is a DNS name or an IP address (no wildcards), and a
// port is 1 to 65535. Every other scheme (javascript:, data:, file:, ...) is
// refused. Authorization requests must then name a registered redirect URI
// exactly.
func CheckRedirectURI(raw string) error {
	if raw == "" {
		return errors.New("a redirect URI is empty")
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("redirect URI %q %s", excerpt.Cut(raw, 200), fmt.Sprintf(format, args...))
	}
	if len(raw) > maxRedirectURILength {
		return refuse("is longer than %d bytes", maxRedirectURILength)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f {
			return refuse("holds a space, a control character or a non-ASCII character; percent-encode it")
		}
	}
	if strings.Contains(raw, "#") {
		return refuse("has a fragment (#); a redirect URI may not have one")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refuse("is not a URI")
	}
	switch {
	case u.Scheme == "":
		return refuse("is relative; it must be absolute: https://..., http://127.0.0.1:PORT/... or com.example.app:/...")
	case raw[:len(u.Scheme)] != u.Scheme:
		return refuse("has a scheme in upper case; write it in lower case")
	case u.User != nil:
		return refuse("carries user information (user@host); it may not")
	}
	switch u.Scheme {
	case "https":
		return checkRedirectHost(u, refuse)
	case "http":
		if err := checkRedirectHost(u, refuse); err != nil {
			return err
		}
		if !loopbackHost(u.Hostname()) {
			return refuse("uses http on a host that is not a loopback address; use https, or http on 127.0.0.1, [::1] or localhost")
		}
		return nil
	}
	if !reverseDomainScheme(u.Scheme) {
		return refuse("has the scheme %q; a redirect URI must use https, http on a loopback host, or a private-use scheme in reverse-domain form such as com.example.app", u.Scheme)
	}
	if u.Opaque != "" || u.Host != "" || strings.HasPrefix(raw[len(u.Scheme)+1:], "//") || !strings.HasPrefix(u.Path, "/") {
		return refuse("must have exactly one slash after its private-use scheme and a path, as in %s:/callback (RFC 8252 section 7.1)", u.Scheme)
	}
	return nil
}

// checkRedirectHost checks the host and port of an http or https redirect
// URI.
func checkRedirectHost(u *url.URL, refuse func(string, ...any) error) error {
	host := u.Hostname()
	if u.Opaque != "" || host == "" {
		return refuse("has no host")
	}
	if strings.HasSuffix(u.Host, ":") {
		return refuse("has an empty port")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return refuse("has the port %s; a port is 1 to 65535", p)
		}
	}
	if strings.HasPrefix(u.Host, "[") {
		if net.ParseIP(host) == nil {
			return refuse("has a host that is not an IPv6 address in brackets (zones are not allowed)")
		}
		return nil
	}
	if !dnsName(host) {
		return refuse("has the host %q, which is neither a DNS name nor an IP address (wildcards are not allowed)", host)
	}
	return nil
}

// loopbackHost reports whether host (without brackets or port) is
// localhost or a loopback IP address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dnsName reports whether s is a DNS name (or a dotted IPv4 address): at
// most 253 characters of labels of letters, digits and inner hyphens,
// separated by single dots.
func dnsName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !dnsLabel(label, false) {
			return false
		}
	}
	return true
}

// reverseDomainScheme reports whether scheme is a private-use scheme in
// reverse-domain form (RFC 8252 section 7.1): at least two labels of
// lower-case letters, digits and inner hyphens, separated by dots, the
// first starting with a letter, as URI schemes must.
func reverseDomainScheme(scheme string) bool {
	labels := strings.Split(scheme, ".")
	if len(labels) < 2 || scheme[0] < 'a' || scheme[0] > 'z' {
		return false
	}
	for _, l := range labels {
		if !dnsLabel(l, true) {
			return false
		}
	}
	return true
}

// dnsLabel reports whether l is a DNS label: 1 to 63 letters, digits and
// hyphens, neither first nor last a hyphen; lower case only when lower.
func dnsLabel(l string, lower bool) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		case 'A' <= c && c <= 'Z' && !lower:
		default:
			return false
		}
	}
	return true
}
