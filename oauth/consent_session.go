package oauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// This file keeps the consent flow's browser state: the signed session
// cookie and the CSRF tokens of the sign-in and consent forms.

// session is a signed-in browser, carried in the session cookie.
type session struct {
	UserID string `json:"u"`
	// Email is shown on the consent page ("Signed in as").
	Email string `json:"m"`
	// Expires is the Unix time at which the session ends.
	Expires int64 `json:"e"`
	// Nonce is random per sign-in; the consent form's CSRF token is its HMAC.
	Nonce string `json:"n"`
	// AuthTime is the Unix time of the sign-in (OpenID Connect's
	// auth_time); 0 in a cookie set before it was recorded (see authTime).
	AuthTime int64 `json:"t,omitempty"`
}

// newSession starts a session for user, signed in now.
func (s *Server) newSession(user User) session {
	now := s.now()
	return session{UserID: user.ID, Email: user.Email, Expires: now.Add(sessionTTL).Unix(), Nonce: NewSecret(), AuthTime: now.Unix()}
}

// authTime is when the user signed in to sess. A cookie set before the
// sign-in time was recorded counts as signed in when it was set: sessionTTL
// before it expires.
func (sess session) authTime() time.Time {
	if sess.AuthTime != 0 {
		return time.Unix(sess.AuthTime, 0).UTC()
	}
	return time.Unix(sess.Expires, 0).Add(-sessionTTL).UTC()
}

// mac returns the HMAC-SHA256 of msg under the key derived for purpose.
func (s *Server) mac(purpose, msg string) []byte {
	m := hmac.New(sha256.New, s.Keys.Derive(purpose))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// sealSession encodes sess as a cookie value: base64url(JSON) "."
// base64url(HMAC of the first part).
func (s *Server) sealSession(sess session) string {
	payload, _ := json.Marshal(sess) // strings and ints cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac("session", p))
}

// openSession decodes a cookie value made by sealSession; false when its
// signature does not verify, it has expired, or it is malformed.
func (s *Server) openSession(value string) (session, bool) {
	p, sig, ok := strings.Cut(value, ".")
	if !ok {
		return session{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("session", p)) {
		return session{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return session{}, false
	}
	var sess session
	if err := json.Unmarshal(payload, &sess); err != nil || sess.UserID == "" || sess.Nonce == "" {
		return session{}, false
	}
	if !s.now().Before(time.Unix(sess.Expires, 0)) {
		return session{}, false
	}
	return sess, true
}

// sessionFrom returns the request's session, if it has a valid one. Of
// several cookies of that name (set for other paths, say) the first valid
// one counts.
func (s *Server) sessionFrom(r *http.Request) (session, bool) {
	for _, c := range r.CookiesNamed(sessionCookieName) {
		if sess, ok := s.openSession(c.Value); ok {
			return sess, true
		}
	}
	return session{}, false
}

// setSession sets the session cookie.
func (s *Server) setSession(w http.ResponseWriter, sess session) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName, Value: s.sealSession(sess), Path: s.sessionCookiePath(),
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, Secure: s.SecureCookies,
		SameSite: http.SameSiteLaxMode,
	})
}

// sessionCookiePath is the path of the session cookie: the longest
// directory that holds the pages of the browser flow, which read it.
func (s *Server) sessionCookiePath() string {
	p := s.paths()
	return cookiePath(p.Authorize, p.Login, p.Consent)
}

// consentCSRF is the consent form's CSRF token for sess.
func (s *Server) consentCSRF(sess session) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", "consent\x00"+sess.Nonce))
}

// loginCSRF is the login form's CSRF token for the value of its
// double-submit cookie.
func (s *Server) loginCSRF(cookie string) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", "login\x00"+cookie))
}

// loginCSRFCookie returns the value of the login form's double-submit
// cookie, setting a new one when the browser has none. The cookie is kept
// across page loads so that two open sign-in tabs both work.
func (s *Server) loginCSRFCookie(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCSRFCookieName); err == nil && validChallenge(c.Value) {
		return c.Value // 43 base64url characters, as NewSecret makes them
	}
	v := NewSecret()
	http.SetCookie(w, &http.Cookie{
		Name: loginCSRFCookieName, Value: v, Path: s.paths().Login,
		HttpOnly: true, Secure: s.SecureCookies, SameSite: http.SameSiteLaxMode,
	})
	return v
}

// loginCSRFValid reports whether token is the login form's token for the
// request's double-submit cookie.
func (s *Server) loginCSRFValid(r *http.Request, token string) bool {
	c, err := r.Cookie(loginCSRFCookieName)
	if err != nil || c.Value == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(token), []byte(s.loginCSRF(c.Value)))
}
