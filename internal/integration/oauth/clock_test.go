package oauth_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// Every token the server checks, it checks on its own clock (Server.Now):
// the product user token of app registration, and the token of revocation
// and of introspection. Tokens valid by the wall clock are expired by the
// server's once it is past their exp.
func TestServerClockVerifiesTokens(t *testing.T) {
	e := newEnv(t, backends[1])
	auth := &[2]string{e.app.ClientID, e.secret}
	admin := e.signIn(t, "admin@example.com", "correct horse")
	cc := e.post(t, oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, auth, false)
	require.Equal(t, 200, cc.status, cc.raw)
	access := cc.str("access_token")

	type want struct {
		status int
		check  func(t *testing.T, r response)
	}
	errorCode := func(code string) func(*testing.T, response) {
		return func(t *testing.T, r response) { assert.Equal(t, code, r.str("error"), r.raw) }
	}
	active := func(a bool) func(*testing.T, response) {
		return func(t *testing.T, r response) { assert.Equal(t, a, r.body["active"], r.raw) }
	}
	cases := []struct {
		name           string
		call           func() response
		fresh, expired want
	}{
		{
			name: "app registration with a product user token",
			call: func() response {
				return e.postJSON(t, oauth.PathApps, map[string]any{
					"organization_id": orgID, "name": "Clocked", "scopes": []string{"svc:orders:read"},
					"branch_ids": []string{branch1},
				}, admin)
			},
			fresh:   want{201, nil},
			expired: want{401, errorCode("invalid_token")},
		},
		{
			name:    "introspection",
			call:    func() response { return e.post(t, oauth.PathIntrospect, url.Values{"token": {access}}, auth, false) },
			fresh:   want{200, active(true)},
			expired: want{200, active(false)},
		},
		{
			// A client-credentials token cannot be revoked; an expired one
			// is no token at all, and revoking it is a no-op.
			name:    "revocation",
			call:    func() response { return e.post(t, oauth.PathRevoke, url.Values{"token": {access}}, auth, false) },
			fresh:   want{400, errorCode("unsupported_token_type")},
			expired: want{200, nil},
		},
	}
	check := func(t *testing.T, w want, r response) {
		assert.Equal(t, w.status, r.status, r.raw)
		if w.check != nil {
			w.check(t, r)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name+", fresh", func(t *testing.T) { check(t, tc.fresh, tc.call()) })
	}
	e.clock.Advance(2 * time.Hour) // past the access tokens' hour, by the server's clock only
	for _, tc := range cases {
		t.Run(tc.name+", expired by the server's clock", func(t *testing.T) { check(t, tc.expired, tc.call()) })
	}
}
