package oauth_test

// A real browser through the authorization-code flow: Debian's Chromium,
// headless, driven with chromedp against an httptest server, the way a
// person signs in and answers the consent page. The server is the one
// Server.Mount serves, on sqlstore over SQLite.

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// chromiumPath is where Debian's chromium package puts the browser;
// .ci/run installs it.
const chromiumPath = "/usr/bin/chromium"

// Elements found the way a person finds them: fields by their label's
// text, buttons by their words.
const (
	emailField    = chromedp.Search(`//input[@id=//label[normalize-space()="Email"]/@for]`)
	passwordField = chromedp.Search(`//input[@id=//label[normalize-space()="Password"]/@for]`)
	orgSelect     = chromedp.Search(`//select[@id=//label[normalize-space()="Organization"]/@for]`)
	signInButton  = chromedp.Search(`//button[normalize-space()="Sign in"]`)
	approveButton = chromedp.Search(`//button[normalize-space()="Approve"]`)
	denyButton    = chromedp.Search(`//button[normalize-space()="Deny"]`)
)

// TestBrowserConsentFlow signs in and approves in a real browser, then, in
// a second tab of the same browser (still signed in), denies. Set
// WAYBILL_SCREENSHOTS to a directory to keep screenshots of the login and
// consent pages there.
func TestBrowserConsentFlow(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs it in its chromium section: %v", chromiumPath, err)
		}
		t.Skipf("%s is missing, so the browser test cannot run; install it with apt-get install chromium", chromiumPath)
	}

	// Alice belongs to two organizations, and the app is Acme's.
	const (
		alice    = "0b000000-0000-4000-8000-0000000000c1"
		acme     = "0b000000-0000-4000-8000-0000000000c2"
		globex   = "0b000000-0000-4000-8000-0000000000c3"
		password = "correct horse battery staple"
		verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	)
	store := sqlstore.New(testdb.SQLite(t), query.SQLite)
	require.NoError(t, store.Migrate(t.Context()))
	people := &directory{users: map[string]directoryUser{
		"alice@example.com": {User: oauth.User{ID: alice, Email: "alice@example.com"}, password: password,
			memberships: []oauth.Membership{{OrganizationID: acme, Name: "Acme Logistics"}, {OrganizationID: globex, Name: "Globex Freight"}}},
	}}
	srv := &oauth.Server{Issuer: "https://tms.example", Keys: mustKeySet(t, bearer.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}),
		Store: store, Directory: people, Logger: slog.New(slog.DiscardHandler)}
	mux := http.NewServeMux()
	srv.Mount(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	// The app's redirect URI is a handler on the same server, which
	// records what the browser brings back.
	redirectURI := ts.URL + "/callback"
	require.NoError(t, store.CreateApp(t.Context(), &oauth.App{
		ID: "0b000000-0000-4000-8000-0000000000c4", ClientID: "client-browser", Name: "Dispatch Board", OrganizationID: acme,
		Scopes: []string{"svc:orders:read", "svc:shipments:write"}, RedirectURIs: []string{redirectURI},
	}))
	callbacks := make(chan url.Values, 4)
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		callbacks <- r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>Dispatch Board</title><p>Back at the app.</p>"))
	})
	request := func(state string) string {
		return ts.URL + oauth.PathAuthorize + "?" + url.Values{
			"client_id": {"client-browser"}, "redirect_uri": {redirectURI}, "response_type": {"code"},
			"code_challenge": {oauth.S256Challenge(verifier)}, "code_challenge_method": {"S256"},
			"scope": {"svc:orders:read svc:shipments:write"}, "state": {state},
		}.Encode()
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	userData, err := os.MkdirTemp("", "waybill-chromium-")
	require.NoError(t, err)
	defer os.RemoveAll(userData) // after the browser has stopped (the deferred cancels run first)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1024, 900),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	screenshot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tt *chromedp.Target) error {
			dir := os.Getenv("WAYBILL_SCREENSHOTS")
			if dir == "" {
				return nil
			}
			png, err := chromedp.CaptureScreenshot()(ctx, tt)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		})
	}
	// callback waits for the browser to arrive at the app.
	callback := func(t *testing.T) url.Values {
		t.Helper()
		select {
		case q := <-callbacks:
			return q
		case <-ctx.Done():
			t.Fatal("the browser never came back to the app's redirect URI")
			return nil
		}
	}

	t.Run("sign in and approve", func(t *testing.T) {
		require.NoError(t, chromedp.Do(browser,
			chromedp.Navigate(request("state-approve")),
			chromedp.WaitVisible(emailField),
			screenshot("login"),
			chromedp.SendKeys(emailField, "alice@example.com"),
			chromedp.SendKeys(passwordField, password),
			chromedp.Click(signInButton),
			chromedp.WaitVisible(orgSelect),
		))
		text, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("main")))
		require.NoError(t, err)
		for _, want := range []string{"Dispatch Board", "Read orders", "svc:orders:read",
			"Create, change and delete shipments", "svc:shipments:write", "alice@example.com"} {
			assert.Contains(t, text, want)
		}
		require.NoError(t, chromedp.Do(browser,
			screenshot("consent"),
			chromedp.SendKeys(orgSelect, "Globex Freight"), // typing picks the option, as with a keyboard
		))
		chosen, err := chromedp.Run(browser, chromedp.Value(orgSelect))
		require.NoError(t, err)
		require.Equal(t, globex, chosen)
		require.NoError(t, chromedp.Do(browser, chromedp.Click(approveButton)))

		q := callback(t)
		assert.Equal(t, "state-approve", q.Get("state"))
		assert.False(t, q.Has("error"), "error=%s: %s", q.Get("error"), q.Get("error_description"))
		code := q.Get("code")
		require.NotEmpty(t, code)
		hash := sha256.Sum256([]byte(code)) // the store keeps a code's SHA-256
		stored, err := store.Code(t.Context(), hash[:])
		require.NoError(t, err)
		assert.Equal(t, alice, stored.UserID)
		assert.Equal(t, globex, stored.OrganizationID)
		assert.Equal(t, "client-browser", stored.ClientID)
		assert.Equal(t, redirectURI, stored.RedirectURI)
	})

	t.Run("deny in a second tab", func(t *testing.T) {
		tab, cancelTab := chromedp.NewContext(browser)
		defer cancelTab()
		require.NoError(t, chromedp.Do(tab,
			chromedp.Navigate(request("state-deny")),
			chromedp.WaitVisible(denyButton), // still signed in: no sign-in page
			chromedp.Click(denyButton),
		))
		q := callback(t)
		assert.Equal(t, "access_denied", q.Get("error"))
		assert.Equal(t, "state-deny", q.Get("state"))
		assert.False(t, q.Has("code"))
	})
}
