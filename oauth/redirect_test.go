package oauth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/oauth"
)

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		uri  string
		// says is a part of the error, "" when the URI is accepted.
		says string
	}{
		// Accepted.
		{"https", "https://app.example.com/callback", ""},
		{"https with a port", "https://app.example.com:8443/cb", ""},
		{"https with a query", "https://app.example.com/cb?tenant=7", ""},
		{"https without a path", "https://app.example.com", ""},
		{"https with an upper-case host", "https://App.Example.COM/cb", ""},
		{"https on an IPv4 address", "https://192.0.2.10/cb", ""},
		{"https on an IPv6 address", "https://[2001:db8::1]:8443/cb", ""},
		{"http on 127.0.0.1", "http://127.0.0.1/cb", ""},
		{"http on 127.0.0.1 with a port", "http://127.0.0.1:49152/cb", ""},
		{"http on another loopback address", "http://127.0.0.2:8080/cb", ""},
		{"http on IPv6 loopback", "http://[::1]:8080/cb", ""},
		{"http on IPv6 loopback without a port", "http://[::1]/cb", ""},
		{"http on localhost", "http://localhost:3000/callback", ""},
		{"http on LOCALHOST", "http://LOCALHOST:3000/callback", ""},
		{"private-use scheme", "com.example.app:/callback", ""},
		{"private-use scheme, root path", "com.example.app:/", ""},
		{"private-use scheme with digits and hyphens", "io.my-company2.app:/oauth2redirect/provider", ""},
		{"private-use scheme with a query", "com.example.app:/cb?x=1", ""},

		// Refused.
		{"empty", "", "empty"},
		{"relative path", "/callback", "is relative"},
		{"relative name", "callback", "is relative"},
		{"scheme-relative", "//app.example.com/cb", "is relative"},
		{"fragment", "https://app.example.com/cb#frag", "fragment"},
		{"empty fragment", "https://app.example.com/cb#", "fragment"},
		{"javascript", "javascript://app.example.com/%0aalert(1)", `scheme "javascript"`},
		{"javascript without slashes", "javascript:alert(1)", `scheme "javascript"`},
		{"data", "data:text/html,<script>alert(1)</script>", `scheme "data"`},
		{"file", "file:///etc/passwd", `scheme "file"`},
		{"vbscript", "vbscript:msgbox", `scheme "vbscript"`},
		{"ftp", "ftp://files.example.com/cb", `scheme "ftp"`},
		{"single-label private scheme", "myapp:/callback", `scheme "myapp"`},
		{"private scheme with a plus", "com.example+app:/cb", "reverse-domain"},
		{"private scheme with an empty label", "com..app:/cb", "reverse-domain"},
		{"private scheme with a hyphen at a label's end", "com.example-.app:/cb", "reverse-domain"},
		{"private scheme with an authority", "com.example.app://callback", "exactly one slash"},
		{"private scheme without a slash", "com.example.app:callback", "exactly one slash"},
		{"private scheme without a path", "com.example.app:", "exactly one slash"},
		{"http to another host", "http://app.example.com/cb", "not a loopback"},
		{"http to a private address", "http://192.168.1.10/cb", "not a loopback"},
		{"http to localhost as a subdomain", "http://localhost.evil.example/cb", "not a loopback"},
		{"http to a name that starts with 127", "http://127.0.0.1.evil.example/cb", "not a loopback"},
		{"http to localhost with a trailing dot", "http://localhost./cb", "neither a DNS name"},
		{"upper-case scheme", "HTTPS://app.example.com/cb", "upper case"},
		{"mixed-case scheme", "Https://app.example.com/cb", "upper case"},
		{"upper-case private scheme", "Com.Example.App:/cb", "upper case"},
		{"userinfo", "https://user@app.example.com/cb", "user information"},
		{"userinfo with a password", "https://user:pass@app.example.com/cb", "user information"},
		{"userinfo that looks like a host", "http://127.0.0.1@evil.example/cb", "user information"},
		{"empty host", "https:///cb", "no host"},
		{"empty host with a port", "https://:443/cb", "no host"},
		{"opaque https", "https:app.example.com/cb", "no host"},
		{"http without a host", "http:///cb", "no host"},
		{"empty port", "https://app.example.com:/cb", "empty port"},
		{"port 0", "http://127.0.0.1:0/cb", "port 0"},
		{"port out of range", "https://app.example.com:65536/cb", "port 65536"},
		{"port not a number", "https://app.example.com:https/cb", "not a URI"},
		{"wildcard host", "https://*.example.com/cb", "wildcards"},
		{"wildcard label", "https://app.*.com/cb", "wildcards"},
		{"underscore in host", "https://my_app.example.com/cb", "neither a DNS name"},
		{"IPv4 in brackets", "https://[127.0.0.1]/cb", "not a URI"},
		{"IPv6 with a zone", "http://[fe80::1%25en0]:8080/cb", "zones are not allowed"},
		{"space", "https://app.example.com/call back", "space"},
		{"tab", "https://app.example.com/\tcb", "space"},
		{"newline", "https://app.example.com/cb\n", "space"},
		{"non-ASCII", "https://app.example.com/caf\u00e9", "non-ASCII"},
		{"percent-encoded host", "https://app%2eexample.com/cb", "not a URI"},
		{"too long", "https://app.example.com/" + strings.Repeat("a", 2000), "longer than 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := oauth.CheckRedirectURI(tt.uri)
			if tt.says == "" {
				assert.NoError(t, err, tt.uri)
				return
			}
			if assert.Error(t, err, tt.uri) {
				assert.Contains(t, err.Error(), tt.says, tt.uri)
			}
		})
	}
}
