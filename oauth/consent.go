package oauth

import (
	"bytes"
	"crypto/hmac"
	"embed"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/httpbody"
)

// This file is the browser side of the authorization-code flow: the
// authorization endpoint, the product sign-in page and the consent page, as
// plain server-rendered HTML that works without JavaScript.
//
//	GET  Paths.Authorize  check the request; no session: 303 to the login page;
//	                      session: the consent page
//	GET  Paths.Login      the sign-in form
//	POST Paths.Login      sign in, set the session cookie, 303 back to authorize
//	POST Paths.Consent    approve (code) or deny (access_denied), back to the app
//
// (by default /auth/v1/oauth/authorize, /auth/v1/login and
// /auth/v1/oauth/consent).
//
// Decisions:
//
//   - An authorization request with an unknown client or a redirect URI that
//     is not registered is answered with an HTML error page (400), never a
//     redirect; every other error goes back to the redirect URI with error,
//     error_description, state and iss (RFC 6749 section 4.1.2.1, RFC 9207).
//     The parameters are appended to the query the registered redirect URI
//     already has, which is kept byte for byte.
//   - Redirects answering GET /authorize are 302 (RFC 6749's example);
//     redirects answering a form POST are 303, so the browser follows with GET.
//   - The session is a cookie, not a server-side record: user id, email,
//     expiry (12 hours) and a random nonce, HMAC-SHA256-signed with a key
//     derived from the current signing key. Rotating the signing key thus
//     signs every browser out; nothing needs storing. It is HttpOnly,
//     SameSite=Lax (the app sends the browser to /authorize from another
//     site, a top-level GET that Lax still carries), scoped to the longest
//     directory that holds the three paths above (/auth/v1/ by default), and
//     Secure when Server.SecureCookies is set.
//   - CSRF: the consent form's token is an HMAC of the session's nonce. The
//     login form has no session yet, so it uses a double-submit cookie: a
//     random waybill_csrf cookie whose HMAC is the hidden field. Tokens are
//     compared with hmac.Equal; a POST without a valid one is a 403 page.
//   - Failed sign-in re-renders the form with 401 and one message for an
//     unknown email and a wrong password alike, so the page does not tell
//     which accounts exist. (401 without WWW-Authenticate: this is a form,
//     not HTTP authentication; the status lets logs count failed sign-ins.)
//   - After sign-in the browser goes back only to a local authorize URL,
//     rebuilt from its parsed parameters, so the login page is no open
//     redirect; any other return value ends on a "signed in" page.
//   - The hidden fields of the consent form are never trusted: the request
//     is checked again on POST, and the organization must be one of the
//     user's memberships (else a 400 page). Consent is asked at every
//     authorization, since the organization is chosen each time.
//   - With several organizations the select starts on "Choose an
//     organization", so that nobody grants the wrong tenant by accident; a
//     single one is chosen in advance.
//   - A user without an organization gets a page that says so, whose one
//     button sends the app access_denied, so the app's flow ends cleanly.
//   - An app that comes from a client metadata document (its client_id
//     is the https URL of the document; see ClientMetadataDocuments) is
//     named with the host of that URL, "Acme Agent (agent.acme.example)",
//     on the sign-in and consent pages, and the consent page says that the
//     name is the app's own claim, which nobody checked: the host is what
//     the user can trust, or not.
//   - Every decision on the consent page is logged at Info (app, user,
//     organization, scopes), never the code; sign-in failures are not
//     logged, since their only detail would be an email address.
//   - Every page is sent no-store, with X-Frame-Options DENY and a
//     Content-Security-Policy that allows inline style only, no script, no
//     framing, and form posts to this origin plus the app's redirect origin
//     (Chromium applies form-action to the redirect after a form post).

// Cookie names and lifetimes of the browser flow.
const (
	sessionCookieName   = "waybill_session"
	loginCSRFCookieName = "waybill_csrf"
	sessionTTL          = 12 * time.Hour
)

// The names of the form fields besides the authorization request's own.
const (
	fieldCSRF         = "csrf_token"
	fieldReturn       = "return"
	fieldDecision     = "decision"
	fieldOrganization = "organization_id"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the flow's HTML templates, parsed once when the package loads
// and never changed after: layout.html defines the frame every page shares,
// the others are the pages, named by their file.
var pages = template.Must(template.ParseFS(templateFS, "templates/*.html"))

// mountConsent registers the browser side of the authorization-code flow
// on mux at p: the authorization endpoint, the sign-in page and the
// consent form's target.
func (s *Server) mountConsent(mux *http.ServeMux, p Paths) {
	mux.HandleFunc("GET "+p.Authorize, s.handleAuthorize)
	mux.HandleFunc("GET "+p.Login, s.handleLogin)
	mux.HandleFunc("POST "+p.Login, s.handleLogin)
	mux.HandleFunc("POST "+p.Consent, s.handleConsent)
}

// handleAuthorize is GET Paths.Authorize (RFC 6749 section 4.1.1
// with PKCE). A valid request from a signed-in browser gets the consent
// page; one without a session goes to the sign-in page first, and comes
// back here after it. So does one whose prompt holds login, or whose
// session is older than its max_age: it comes back without them (see
// AuthorizationRequest.afterSignIn), so it cannot loop. prompt=none shows
// no page: login_required where a sign-in is needed, consent_required
// otherwise, since consent is asked at every authorization.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	req := authorizationRequestFrom(r.URL.Query())
	app, scopes, err := s.CheckAuthorization(r.Context(), req)
	if err != nil {
		s.authorizationFailed(w, r, app, req, err, http.StatusFound)
		return
	}
	sess, ok := s.sessionFrom(r)
	if ok && s.needsSignIn(req, sess) {
		ok = false
	}
	switch {
	case !ok && req.hasPrompt("none"):
		s.redirectToClient(w, req, url.Values{
			"error": {codeLoginRequired}, "error_description": {"the user must sign in, and prompt=none allows no page"},
		}, http.StatusFound)
	case !ok:
		p := s.paths()
		s.redirectLocal(w, p.loginURL(p.authorizeURL(req.afterSignIn())))
	case req.hasPrompt("none"):
		s.redirectToClient(w, req, url.Values{
			"error": {codeConsentRequired}, "error_description": {"the user must approve every authorization, and prompt=none allows no page"},
		}, http.StatusFound)
	default:
		s.renderConsent(w, r, app, req, scopes, sess)
	}
}

// handleLogin is GET and POST Paths.Login, the product sign-in form.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	p := s.paths()
	if r.Method != http.MethodPost {
		ret, _ := p.localAuthorizeURL(r.URL.Query().Get(fieldReturn))
		s.renderLogin(w, r, http.StatusOK, ret, "", "")
		return
	}
	form, ok := s.readForm(w, r)
	if !ok {
		return
	}
	ret, _ := p.localAuthorizeURL(form.Get(fieldReturn))
	if !s.loginCSRFValid(r, form.Get(fieldCSRF)) {
		s.renderMessage(w, r, http.StatusForbidden, message{
			Title:    "Your sign-in form has expired",
			Text:     "The form could not be verified: it may be too old, or this browser may not keep cookies for this site. Load the sign-in page again and try once more.",
			Link:     p.loginURL(ret),
			LinkText: "Back to sign-in",
		})
		return
	}
	email := strings.TrimSpace(form.Get("email"))
	password := form.Get("password")
	if email == "" || password == "" {
		s.renderLogin(w, r, http.StatusUnauthorized, ret, email, "Enter your email and your password.")
		return
	}
	user, err := s.Directory.Authenticate(r.Context(), email, password)
	switch {
	case errors.Is(err, ErrBadCredentials):
		s.renderLogin(w, r, http.StatusUnauthorized, ret, email, "The email or password is not correct.")
		return
	case err != nil:
		s.internalError(w, r, "authenticate user", err)
		return
	}
	s.setSession(w, s.newSession(user))
	if ret != "" {
		s.redirectLocal(w, ret)
		return
	}
	s.renderMessage(w, r, http.StatusOK, message{
		Title: "You are signed in",
		Text:  "You are signed in as " + user.Email + ". You can close this window and go back to the application you came from.",
	})
}

// handleConsent is POST Paths.Consent, the consent form's target.
// It trusts nothing of the form but the user's choice: the session and the
// CSRF token are checked, the authorization request is checked again, and
// the organization must be one of the user's.
func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request) {
	form, ok := s.readForm(w, r)
	if !ok {
		return
	}
	req := authorizationRequestFrom(form)
	p := s.paths()
	sess, ok := s.sessionFrom(r)
	if !ok {
		s.renderMessage(w, r, http.StatusForbidden, message{
			Title:    "You are no longer signed in",
			Text:     "Your sign-in has expired, so this answer was not sent. Sign in again to continue.",
			Link:     p.loginURL(p.authorizeURL(req)),
			LinkText: "Sign in again",
		})
		return
	}
	if !hmac.Equal([]byte(form.Get(fieldCSRF)), []byte(s.consentCSRF(sess))) {
		s.renderMessage(w, r, http.StatusForbidden, message{
			Title:    "This page has expired",
			Text:     "The consent form could not be verified, so nothing was sent to the application. Go back to the application and start again.",
			Link:     p.authorizeURL(req),
			LinkText: "Show the request again",
		})
		return
	}
	app, scopes, err := s.CheckAuthorization(r.Context(), req)
	if err != nil {
		s.authorizationFailed(w, r, app, req, err, http.StatusSeeOther)
		return
	}
	switch form.Get(fieldDecision) {
	case "deny":
		s.logger().InfoContext(r.Context(), "consent denied", "client_id", app.ClientID, "user_id", sess.UserID)
		s.redirectToClient(w, req, url.Values{
			"error":             {apierrors.CodeAccessDenied},
			"error_description": {"the user denied the request"},
		}, http.StatusSeeOther)
	case "approve":
		memberships, err := s.Directory.Memberships(r.Context(), sess.UserID)
		if err != nil {
			s.internalError(w, r, "list memberships", err)
			return
		}
		org := form.Get(fieldOrganization)
		if org == "" {
			s.renderMessage(w, r, http.StatusBadRequest, message{
				Title:    "Choose an organization",
				Text:     "Choose the organization to give access to, then approve again. Nothing was sent to the application.",
				Link:     p.authorizeURL(req),
				LinkText: "Show the request again",
			})
			return
		}
		if !slices.ContainsFunc(memberships, func(m Membership) bool { return m.OrganizationID == org }) {
			s.renderMessage(w, r, http.StatusBadRequest, message{
				Title:    "Choose one of your organizations",
				Text:     "The organization in this answer is not one you belong to, so nothing was sent to the application.",
				Link:     p.authorizeURL(req),
				LinkText: "Show the request again",
			})
			return
		}
		req.AuthTime = sess.authTime()
		code, err := s.IssueCode(asUser(r, sess.UserID), app, req, scopes, sess.UserID, org)
		if err != nil {
			s.internalError(w, r, "issue code", err)
			return
		}
		s.logger().InfoContext(r.Context(), "consent approved", "client_id", app.ClientID, "user_id", sess.UserID,
			"organization_id", org, "scope", formatScope(scopes))
		s.redirectToClient(w, req, url.Values{"code": {code}}, http.StatusSeeOther)
	default:
		s.renderMessage(w, r, http.StatusBadRequest, message{
			Title:    "Approve or deny",
			Text:     "The answer was neither Approve nor Deny, so nothing was sent to the application.",
			Link:     p.authorizeURL(req),
			LinkText: "Show the request again",
		})
	}
}

// authorizationFailed answers a request that CheckAuthorization refused.
// Without an app (unknown client, unregistered redirect URI) the user gets
// an error page and is never redirected; with one the error goes back to
// the app's redirect URI with status (302 or 303). A server error goes
// back to the app too, as server_error, when the app is known.
func (s *Server) authorizationFailed(w http.ResponseWriter, r *http.Request, app *App, req AuthorizationRequest, err error, status int) {
	e := apierrors.FromRequest(r, err)
	failed := e.Status >= http.StatusInternalServerError || e.Status == apierrors.StatusClientClosedRequest
	if failed {
		s.logger().Log(r.Context(), apierrors.LogLevel(e.Status), "authorization request failed", "client_id", req.ClientID, "error", err)
	}
	if app != nil {
		s.redirectToClient(w, req, url.Values{"error": {e.Code}, "error_description": {e.Description}}, status)
		return
	}
	if failed {
		s.failurePage(w, r, e)
		return
	}
	s.renderMessage(w, r, http.StatusBadRequest, message{
		Title: "This authorization link is not valid",
		Text: "The application that sent you here is not registered, or it asked to send you back to an address " +
			"it has not registered. For your safety you were not sent back. Tell the application's developer what went wrong:",
		Detail: e.Description,
	})
}

// redirectToClient sends the browser back to the request's redirect URI,
// which CheckAuthorization has verified is registered, with params, the
// request's state and the issuer (RFC 9207) appended to its query.
func (s *Server) redirectToClient(w http.ResponseWriter, req AuthorizationRequest, params url.Values, status int) {
	if req.State != "" {
		params.Set("state", req.State)
	}
	if s.Issuer != "" {
		params.Set("iss", s.Issuer)
	}
	target := req.RedirectURI
	switch {
	case !strings.Contains(target, "?"):
		target += "?"
	case !strings.HasSuffix(target, "?") && !strings.HasSuffix(target, "&"):
		target += "&"
	}
	target += params.Encode()
	h := w.Header()
	h.Set("Location", target)
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
}

// redirectLocal sends the browser to a path of this server with 303.
func (s *Server) redirectLocal(w http.ResponseWriter, path string) {
	h := w.Header()
	h.Set("Location", path)
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusSeeOther)
}

// readForm parses a urlencoded POST body of at most maxRequestBytes; on
// failure it answers with an error page and returns false. Only the body
// counts: parameters in the query string of a POST are ignored.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	httpbody.Limit(w, r, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		status := http.StatusBadRequest
		if httpbody.TooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		s.renderMessage(w, r, status, message{
			Title: "The form could not be read",
			Text:  "The browser sent a form this page does not understand. Go back and try again.",
		})
		return nil, false
	}
	return r.PostForm, true
}

// internalError logs err and answers with the error page its cause calls
// for (see failurePage).
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	e := apierrors.FromRequest(r, err)
	s.logger().Log(r.Context(), apierrors.LogLevel(e.Status), "consent flow: "+what, "path", r.URL.Path, "error", err)
	s.failurePage(w, r, e)
}

// failurePage answers a step of the flow that the server could not complete
// as apierrors.FromRequest judged e: a page that asks to try again in a moment
// (503, with e's Retry-After) when the server is overloaded or a dependency
// is down, the generic error page (500) otherwise, and only the status 499
// when the browser already went away.
func (s *Server) failurePage(w http.ResponseWriter, r *http.Request, e *apierrors.Error) {
	switch e.Status {
	case apierrors.StatusClientClosedRequest:
		w.WriteHeader(e.Status)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", e.Header.Get("Retry-After"))
		s.renderMessage(w, r, e.Status, unavailableMessage)
	default:
		s.renderMessage(w, r, http.StatusInternalServerError, serverErrorMessage)
	}
}

// authorizeURL is the local URL of the authorization endpoint for req:
// where the sign-in page sends the browser back to.
func (p Paths) authorizeURL(req AuthorizationRequest) string {
	return p.Authorize + "?" + req.values().Encode()
}

// loginURL is the sign-in page's URL, coming back to ret when it is not
// empty.
func (p Paths) loginURL(ret string) string {
	if ret == "" {
		return p.Login
	}
	return p.Login + "?" + url.Values{fieldReturn: {ret}}.Encode()
}

// localAuthorizeURL returns the URL to go back to after sign-in: raw when
// it is this server's authorization endpoint, rebuilt from the
// authorization request parameters it carries (so nothing else survives);
// false for anything else, an absolute URL, "//host/...", "/\host" or
// another path included. This is what keeps the sign-in page from being an
// open redirect.
func (p Paths) localAuthorizeURL(raw string) (string, bool) {
	rest, ok := strings.CutPrefix(raw, p.Authorize)
	if !ok || (rest != "" && rest[0] != '?') {
		return "", false
	}
	q, err := url.ParseQuery(strings.TrimPrefix(rest, "?"))
	if err != nil {
		return "", false
	}
	return p.authorizeURL(authorizationRequestFrom(q)), true
}

// loginPage is the data of login.html.
type loginPage struct {
	Title string
	// Action is the form's target, the sign-in page itself.
	Action string
	// AppName is the app the user signs in for, when the return URL names one.
	AppName string
	Email   string
	Error   string
	CSRF    string
	Return  string
}

// renderLogin renders the sign-in form. ret is the local authorize URL to
// go back to, or "". When it names a registered app and redirect URI, the
// page names the app, and its redirect origin joins form-action: the
// browser may end on it if the request fails after sign-in.
func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, ret, email, problem string) {
	p := s.paths()
	page := loginPage{Title: "Sign in", Action: p.Login, Email: email, Error: problem, Return: ret}
	page.CSRF = s.loginCSRF(s.loginCSRFCookie(w, r))
	formAction := []string{"'self'"}
	if ret != "" {
		q, _ := url.ParseQuery(strings.TrimPrefix(ret, p.Authorize+"?")) // rebuilt by localAuthorizeURL
		req := authorizationRequestFrom(q)
		if app, _, _ := s.CheckAuthorization(r.Context(), req); app != nil {
			page.AppName = app.Name
			if host := s.clientHost(app); host != "" {
				page.AppName += " (" + host + ")"
			}
			formAction = appendSource(formAction, req.RedirectURI)
		}
	}
	s.render(w, r, status, "login.html", page, formAction)
}

// consentPage is the data of consent.html.
type consentPage struct {
	Title string
	// Action is the form's target, Paths.Consent.
	Action  string
	AppName string
	// ClientHost is the host of the client id of an app that comes from a
	// client metadata document, "" for a registered app: shown beside the
	// name, which such an app claims for itself.
	ClientHost string
	// SelfRegistered marks an app that registered itself (Dynamic Client
	// Registration): its name is its own claim too.
	SelfRegistered bool
	Email          string
	// SwitchUser is the sign-in page, coming back to this request.
	SwitchUser string
	// RedirectHost is where the answer goes, shown to the user.
	RedirectHost  string
	Scopes        []scopeLine
	Organizations []Membership
	// Fields are the authorization request's parameters, sent back as
	// hidden fields.
	Fields []field
	CSRF   string
}

// scopeLine is one requested scope: in words, and its raw name.
type scopeLine struct {
	Name string
	// Description is the scope in words, or "" when there are none beyond
	// the name.
	Description string
}

// field is a hidden form field.
type field struct{ Name, Value string }

// renderConsent renders the consent page for a checked request, or the
// page of a user who belongs to no organization.
func (s *Server) renderConsent(w http.ResponseWriter, r *http.Request, app *App, req AuthorizationRequest, scopes []string, sess session) {
	memberships, err := s.Directory.Memberships(r.Context(), sess.UserID)
	if err != nil {
		s.internalError(w, r, "list memberships", err)
		return
	}
	describe := s.DescribeScope
	if describe == nil {
		describe = DescribeScope
	}
	p := s.paths()
	page := consentPage{
		Title: "Allow " + app.Name, Action: p.Consent, AppName: app.Name, ClientHost: s.clientHost(app), SelfRegistered: len(app.RegistrationTokenHash) > 0, Email: sess.Email,
		SwitchUser: p.loginURL(p.authorizeURL(req.afterSignIn())), RedirectHost: redirectHost(req.RedirectURI),
		Organizations: memberships, CSRF: s.consentCSRF(sess),
	}
	if page.ClientHost != "" {
		page.Title += " (" + page.ClientHost + ")"
	}
	if len(memberships) == 0 {
		page.Title = "No organization"
	}
	for _, sc := range scopes {
		line := scopeLine{Name: sc, Description: describe(sc)}
		if line.Description == sc && slices.Contains(identityScopes, sc) {
			line.Description = DescribeScope(sc) // a host's DescribeScope need not know them
		}
		if line.Description == sc {
			line.Description = ""
		}
		page.Scopes = append(page.Scopes, line)
	}
	values := req.values()
	for _, k := range slices.Sorted(maps.Keys(values)) {
		page.Fields = append(page.Fields, field{Name: k, Value: values.Get(k)})
	}
	s.render(w, r, http.StatusOK, "consent.html", page, appendSource([]string{"'self'"}, req.RedirectURI))
}

// redirectHost is the host (or, for a custom scheme, the scheme) of a
// redirect URI, to tell the user where the answer goes.
func redirectHost(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	switch {
	case err != nil:
		return redirectURI
	case u.Host != "":
		return u.Host
	}
	return u.Scheme + ":"
}

// appendSource adds the origin of redirectURI to a CSP source list: its
// scheme and host, or, for a custom scheme without a host, the scheme. A
// URI with characters a CSP source may not hold adds nothing.
func appendSource(sources []string, redirectURI string) []string {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme == "" {
		return sources
	}
	src := u.Scheme + ":"
	if u.Host != "" {
		src = u.Scheme + "://" + u.Host
	}
	for _, c := range src {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("+-.:/[]", c)) {
			return sources
		}
	}
	return append(sources, src)
}

// message is the data of message.html: a page that tells one thing.
type message struct {
	Title string
	Text  string
	// Detail is shown under Text in a smaller type, e.g. the technical reason.
	Detail string
	// Link, a local URL, and LinkText make an optional way on.
	Link, LinkText string
}

var serverErrorMessage = message{
	Title: "Something went wrong",
	Text:  "The server could not complete this step. Try again in a moment; if it keeps happening, tell the application's support.",
}

var unavailableMessage = message{
	Title: "The service is busy",
	Text:  "The server cannot complete this step right now. Go back and try again in a few seconds.",
}

// renderMessage renders message.html, a page without a form.
func (s *Server) renderMessage(w http.ResponseWriter, r *http.Request, status int, m message) {
	s.render(w, r, status, "message.html", m, []string{"'none'"})
}

// render executes the template name with data and sends it with status and
// the headers every page of the flow carries. formAction is the CSP
// form-action source list. The page is rendered before anything is sent,
// so a template error is a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any, formAction []string) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.logger().ErrorContext(r.Context(), "consent flow: render page", "template", name, "error", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action "+
		strings.Join(formAction, " ")+"; frame-ancestors 'none'")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes()) // a write error means the browser left
}
