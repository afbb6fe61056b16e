package oauth

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCookiePath(t *testing.T) {
	tests := []struct {
		name                      string
		authorize, login, consent string
		want                      string
	}{
		{"defaults", PathAuthorize, PathLogin, PathConsent, "/auth/v1/"},
		{"one directory", "/oauth2/authorize", "/oauth2/login", "/oauth2/consent", "/oauth2/"},
		{"a common name prefix is no directory", "/oauth2/auth", "/oauth2/authn", "/oauth2/authz", "/oauth2/"},
		{"nested", "/a/b/authorize", "/a/b/c/login", "/a/b/consent", "/a/b/"},
		{"nothing in common", "/authorize", "/account/login", "/consent", "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, cookiePath(tt.authorize, tt.login, tt.consent))
		})
	}
}

func TestPathsCheck(t *testing.T) {
	assert.NoError(t, Paths{}.Check())
	assert.NoError(t, Paths{Token: "/oauth2/token"}.Check())
	err := Paths{Token: "oauth2/token"}.Check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Paths.Token")
	assert.ErrorContains(t, Paths{ConnectedApps: "/orgs/apps"}.Check(), "{organization_id}")
	assert.Panics(t, func() { (&Server{Paths: Paths{Login: "login"}}).Mount(http.NewServeMux()) })
}

// The browser flow follows Server.Paths: the authorization endpoint sends
// the browser to the sign-in page at its path, the forms post to theirs,
// and the cookies reach every page that reads them (the client's cookie
// jar applies their paths, as a browser does).
func TestBrowserFlowAtOtherPaths(t *testing.T) {
	tests := []struct {
		name       string
		paths      Paths
		cookiePath string
	}{
		{"one directory", Paths{Authorize: "/oauth2/authorize", Login: "/oauth2/login", Consent: "/oauth2/consent"}, "/oauth2/"},
		{"apart", Paths{Authorize: "/connect/authorize", Login: "/account/sign-in", Consent: "/connect/consent"}, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t, func(s *Server) { s.Paths = tt.paths })
			p := f.srv.paths()
			c := f.client(t)
			req := validRequest()

			assert.Equal(t, http.StatusNotFound, f.get(t, c, defaultPaths.authorizeURL(req)).StatusCode, "nothing at the default path")
			start := f.get(t, c, p.authorizeURL(req))
			require.Equal(t, http.StatusSeeOther, start.StatusCode, start.body)
			loc := start.location(t)
			assert.Equal(t, tt.paths.Login, loc.Path)
			assert.Equal(t, p.authorizeURL(req), loc.Query().Get("return"))

			login := f.get(t, c, loc.RequestURI())
			require.Equal(t, http.StatusOK, login.StatusCode)
			assert.Contains(t, login.body, `<form method="post" action="`+tt.paths.Login+`">`)
			require.Len(t, login.Cookies(), 1)
			assert.Equal(t, tt.paths.Login, login.Cookies()[0].Path, "the CSRF cookie")

			signedIn := f.post(t, c, tt.paths.Login, map[string][]string{
				"csrf_token": {csrfOf(t, login)}, "email": {"alice@example.com"}, "password": {consentPassword},
				"return": {fieldOf(t, login, "return")},
			})
			require.Equal(t, http.StatusSeeOther, signedIn.StatusCode, signedIn.body)
			assert.Equal(t, p.authorizeURL(req), signedIn.Header.Get("Location"))
			require.Len(t, signedIn.Cookies(), 1)
			assert.Equal(t, tt.cookiePath, signedIn.Cookies()[0].Path, "the session cookie")

			consent := f.get(t, c, p.authorizeURL(req))
			require.Equal(t, http.StatusOK, consent.StatusCode, "the session reaches the authorization endpoint")
			assert.Contains(t, consent.body, `<form method="post" action="`+tt.paths.Consent+`">`)
			form := req.values()
			form.Set("csrf_token", csrfOf(t, consent))
			form.Set("decision", "approve")
			form.Set("organization_id", consentAcme)
			done := f.post(t, c, tt.paths.Consent, form)
			require.Equal(t, http.StatusSeeOther, done.StatusCode, "the session reaches the consent form's target: %s", done.body)
			assert.NotEmpty(t, done.location(t).Query().Get("code"))
		})
	}
}
