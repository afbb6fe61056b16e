package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/ratelimit"
)

// KeyByRemoteAddr keys an IPv6 address by its /64 and an IPv4-mapped one
// as its IPv4 address.
func TestKeyByRemoteAddrGroups(t *testing.T) {
	t.Parallel()
	tests := []struct{ remoteAddr, want string }{
		{"192.0.2.7:1", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:1", "2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:1", "fe80::/64"},
		{"[::1]:1", "::/64"},
		{"2001:db8:1:2::9", "2001:db8:1:2::/64"}, // no port
		{"not an address", "not an address"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = tt.remoteAddr
		key, ok := ratelimit.KeyByRemoteAddr(req)
		assert.True(t, ok, tt.remoteAddr)
		assert.Equal(t, tt.want, key, tt.remoteAddr)
	}
}

// Two addresses of one /64 share a quota under the default key; another
// /64 has its own.
func TestDefaultKeySharesASlash64(t *testing.T) {
	t.Parallel()
	limited := ratelimit.MiddlewareWithOptions(ratelimit.Options{
		Limit: ratelimit.Limit{Name: "api", Quota: 1, Window: time.Minute},
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	status := func(remote string) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		limited.ServeHTTP(rec, req)
		return rec.Code
	}
	assert.Equal(t, http.StatusOK, status("[2001:db8:1:2::1]:5000"))
	assert.Equal(t, http.StatusTooManyRequests, status("[2001:db8:1:2:ffff::9]:5000"), "the same /64")
	assert.Equal(t, http.StatusOK, status("[2001:db8:1:3::1]:5000"), "another /64")
}
