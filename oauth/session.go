package oauth

import "net/http"

// SessionUserID returns the id of the user that the request's session
// cookie signs in to the browser flow (the sign-in and consent pages), and
// false when it carries no valid session. It lets the host key what it
// does per user on those pages, a rate limit of the consent form say,
// without reading the cookie itself.
func (s *Server) SessionUserID(r *http.Request) (string, bool) {
	sess, ok := s.sessionFrom(r)
	return sess.UserID, ok
}
