package main

import (
	"net/http"

	"github.com/waybillhq/waybill/oauth"
)

// sessionUsers tells the user a request's session cookie signs in; an
// *oauth.Server does.
type sessionUsers interface {
	SessionUserID(r *http.Request) (string, bool)
}

// Consent puts the "token" limit (--rate-token, 30 a minute by default) in
// front of POST /auth/v1/oauth/consent, the consent form's target, and
// leaves every other request to next as it is. Each approval records a
// consent and issues a code, so that a signed-in user posting the form in
// a loop would fill the database: a request is counted under the user its
// session signs in, "user:<id>", and without a valid session under its
// remote address, like the password sign-ins. Over the quota it is answered
// 429 rate_limited with Retry-After, as every limit does.
func (l *rateLimits) Consent(next http.Handler, sessions sessionUsers) http.Handler {
	limited := l.middleware(l.token, keyBySessionUser(sessions))(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == oauth.PathConsent {
			limited.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// keyBySessionUser keys a request by the user its session cookie signs
// in, "user:<id>", else by its remote address (see keyByAddr).
func keyBySessionUser(sessions sessionUsers) func(r *http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		if id, ok := sessions.SessionUserID(r); ok {
			return "user:" + id, true
		}
		return keyByAddr(r)
	}
}
