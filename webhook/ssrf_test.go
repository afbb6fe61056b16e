package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook"
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
	g := webhook.Guard{Resolver: hostsOnlyResolver()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURL(context.Background(), tt.url)
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
			assert.NotContains(t, err.Error(), "webhook:", "the message is meant for clients")
			assert.Equal(t, tt.private, errors.Is(err, webhook.ErrPrivateAddress))
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
	g := webhook.Guard{AllowPrivate: true, Resolver: hostsOnlyResolver()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURL(context.Background(), tt.url)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.NotErrorIs(t, err, webhook.ErrPrivateAddress)
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
	require.NoError(t, err)

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
			c := webhook.Guard{AllowPrivate: tt.allowPrivate, Resolver: hostsOnlyResolver()}.Client(5 * time.Second)
			resp, err := c.Post(tt.url, "application/json", strings.NewReader(`{}`))
			if !tt.ok {
				require.Error(t, err)
				assert.ErrorIs(t, err, webhook.ErrPrivateAddress)
				assert.Equal(t, before, hits.Load(), "the server got no request")
				return
			}
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusNoContent, resp.StatusCode)
			assert.Equal(t, before+1, hits.Load())
		})
	}
}

func TestGuardDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
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
	require.NoError(t, err)

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
			g := webhook.Guard{AllowPrivate: tt.allowPrivate, Resolver: hostsOnlyResolver()}
			c, err := g.DialContext(context.Background(), "tcp", tt.addr)
			if !tt.ok {
				require.ErrorIs(t, err, webhook.ErrPrivateAddress)
				assert.NotContains(t, err.Error(), "ErrPrivateAddress")
				return
			}
			require.NoError(t, err)
			c.Close()
		})
	}
}

func TestGuardClientDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Bool
	c := webhook.Guard{AllowPrivate: true}.Client(5 * time.Second)
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
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, code, resp.StatusCode, "the 3xx is the answer")
			assert.False(t, followed.Load(), "the redirect was not followed")
		})
	}
}

func TestGuardClientTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
	}))
	t.Cleanup(func() { close(block); srv.Close() })

	c := webhook.Guard{AllowPrivate: true}.Client(200 * time.Millisecond)
	start := time.Now()
	_, err := c.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
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
			c := webhook.Guard{}.Client(tt.timeout)
			assert.Equal(t, tt.want, c.Timeout)
			tr, ok := c.Transport.(*http.Transport)
			require.True(t, ok)
			assert.Nil(t, tr.Proxy, "no proxy, not even one the environment names")
			assert.NotNil(t, tr.DialContext)
			assert.Equal(t, tt.want, tr.ResponseHeaderTimeout)
			assert.NotZero(t, tr.TLSHandshakeTimeout)
			assert.Equal(t, 8, tr.MaxIdleConnsPerHost)
			assert.Equal(t, 90*time.Second, tr.IdleConnTimeout)
		})
	}
}
