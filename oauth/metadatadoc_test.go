package oauth

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/netguard"
)

func TestCheckClientIDURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url string
		says      string // part of the reason; "" = accepted
	}{
		{"document", "https://agent.acme.example/oauth/client.json", ""},
		{"with port and query", "https://agent.acme.example:8443/client?v=2", ""},
		{"percent-encoded path", "https://agent.acme.example/a%20b", ""},
		{"http", "http://agent.acme.example/client.json", "must be an https URL"},
		{"upper-case scheme", "HTTPS://agent.acme.example/client.json", "must be an https URL"},
		{"no path", "https://agent.acme.example", "must have a path"},
		{"root path", "https://agent.acme.example/", "must have a path"},
		{"fragment", "https://agent.acme.example/client.json#x", "fragment"},
		{"empty fragment", "https://agent.acme.example/client.json#", "fragment"},
		{"user", "https://me@agent.acme.example/client.json", "user name or password"},
		{"user and password", "https://me:pw@agent.acme.example/client.json", "user name or password"},
		{"dot segment", "https://agent.acme.example/./client.json", `"." or ".."`},
		{"dot-dot segment", "https://agent.acme.example/a/../client.json", `"." or ".."`},
		{"encoded dot-dot", "https://agent.acme.example/a/%2e%2e/client.json", `"." or ".."`},
		{"trailing dot-dot", "https://agent.acme.example/a/..", `"." or ".."`},
		{"no host", "https:///client.json", "must have a host"},
		{"port only", "https://:443/client.json", "must have a host"},
		{"space", "https://agent.acme.example/a b", "space"},
		{"non-ASCII", "https://agent.acme.example/ä", "non-ASCII"},
		{"too long", "https://agent.acme.example/" + strings.Repeat("a", 2048), "longer than 2048"},
		{"not a URL", "https://[::1/client.json", "not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkClientIDURL(tt.url)
			if tt.says == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrClientMetadataDocument)
			var docErr *ClientMetadataError
			require.ErrorAs(t, err, &docErr)
			assert.Contains(t, docErr.Reason, tt.says)
		})
	}
}

// metadataDoc returns a valid document for clientID, changed by change.
func metadataDoc(clientID string, change func(map[string]any)) []byte {
	doc := map[string]any{
		"client_id": clientID, "client_name": "Acme Agent", "redirect_uris": []string{"https://agent.acme.example/cb", "http://127.0.0.1:7777/cb"},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "logo_uri": "https://agent.acme.example/logo.png",
	}
	if change != nil {
		change(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseMetadataDocument(t *testing.T) {
	t.Parallel()
	const id = "https://agent.acme.example/client.json"
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	del := func(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }
	tests := []struct {
		name   string
		body   []byte
		says   string // part of the reason; "" = accepted
		scopes []string
	}{
		{"valid", metadataDoc(id, nil), "", nil},
		{"minimal", metadataDoc(id, func(m map[string]any) { delete(m, "grant_types"); delete(m, "response_types") }), "", nil},
		{"with scope", metadataDoc(id, set("scope", "svc:orders:read  svc:vehicles:read")), "", []string{"svc:orders:read", "svc:vehicles:read"}},
		{"authorization code alone", metadataDoc(id, set("grant_types", []string{"authorization_code"})), "", nil},
		{"unknown members ignored", metadataDoc(id, set("jwks", map[string]any{"keys": []any{}})), "", nil},
		{"leading space", append([]byte("  \n"), metadataDoc(id, nil)...), "", nil},
		{"not JSON", []byte("<html>hello</html>"), "not a JSON object", nil},
		{"JSON array", []byte(`[{"client_id": "x"}]`), "not a JSON object", nil},
		{"JSON string", []byte(`"https://agent.acme.example/client.json"`), "not a JSON object", nil},
		{"truncated", metadataDoc(id, nil)[:40], "not a JSON object", nil},
		{"empty", nil, "not a JSON object", nil},
		{"trailing garbage", append(metadataDoc(id, nil), []byte("{}")...), "not a JSON object", nil},
		{"no client_id", metadataDoc(id, del("client_id")), "no client_id", nil},
		{"other client_id", metadataDoc(id, set("client_id", "https://evil.example/client.json")), `client_id "https://evil.example/client.json" is not the URL`, nil},
		{"client_id differs by a slash", metadataDoc(id, set("client_id", id+"/")), "is not the URL", nil},
		{"client_id differs in case", metadataDoc(id, set("client_id", strings.Replace(id, "acme", "ACME", 1))), "is not the URL", nil},
		{"client_id not a string", metadataDoc(id, set("client_id", 7)), "client_id must be a string", nil},
		{"no client_name", metadataDoc(id, del("client_name")), "client_name is required", nil},
		{"blank client_name", metadataDoc(id, set("client_name", "   ")), "client_name is required", nil},
		{"long client_name", metadataDoc(id, set("client_name", strings.Repeat("n", 201))), "longer than 200", nil},
		{"control character in client_name", metadataDoc(id, set("client_name", "Acme\nAgent")), "control character", nil},
		{"no redirect_uris", metadataDoc(id, del("redirect_uris")), "at least one redirect URI", nil},
		{"empty redirect_uris", metadataDoc(id, set("redirect_uris", []string{})), "at least one redirect URI", nil},
		{"redirect_uris not a list", metadataDoc(id, set("redirect_uris", "https://agent.acme.example/cb")), "list of strings", nil},
		{"http redirect URI", metadataDoc(id, set("redirect_uris", []string{"http://agent.acme.example/cb"})), "redirect URI", nil},
		{"javascript redirect URI", metadataDoc(id, set("redirect_uris", []string{"javascript:alert(1)"})), "redirect URI", nil},
		{"redirect URI with fragment", metadataDoc(id, set("redirect_uris", []string{"https://agent.acme.example/cb#x"})), "fragment", nil},
		{"too many redirect URIs", metadataDoc(id, set("redirect_uris", manyRedirects(21))), "more than 20", nil},
		{"no auth method", metadataDoc(id, del("token_endpoint_auth_method")), `token_endpoint_auth_method is required and must be "none"`, nil},
		{"client_secret_basic", metadataDoc(id, set("token_endpoint_auth_method", "client_secret_basic")), `must be "none", not "client_secret_basic"`, nil},
		{"private_key_jwt", metadataDoc(id, set("token_endpoint_auth_method", "private_key_jwt")), `must be "none", not "private_key_jwt"`, nil},
		{"client_secret", metadataDoc(id, set("client_secret", "s3cret")), "client_secret", nil},
		{"client_secret_expires_at", metadataDoc(id, set("client_secret_expires_at", 0)), "client_secret", nil},
		{"client credentials grant", metadataDoc(id, set("grant_types", []string{"authorization_code", "client_credentials"})), `not "client_credentials"`, nil},
		{"implicit", metadataDoc(id, set("response_types", []string{"token"})), "response_types may name code alone", nil},
		{"code and token", metadataDoc(id, set("response_types", []string{"code", "token"})), "response_types may name code alone", nil},
		{"empty scope", metadataDoc(id, set("scope", " ")), "scope is empty", nil},
		{"scope not a string", metadataDoc(id, set("scope", []string{"svc:orders:read"})), "scope must be a string", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseMetadataDocument(id, tt.body)
			if tt.says == "" {
				require.NoError(t, err)
				assert.Equal(t, id, doc.ClientID)
				assert.Equal(t, "Acme Agent", doc.ClientName)
				assert.NotEmpty(t, doc.RedirectURIs)
				assert.Equal(t, tt.scopes, doc.Scopes)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrClientMetadataDocument)
			var docErr *ClientMetadataError
			require.ErrorAs(t, err, &docErr)
			assert.Contains(t, docErr.Reason, tt.says)
		})
	}
}

func manyRedirects(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://agent.acme.example/cb/%d", i)
	}
	return out
}

func TestClientMetadataApp(t *testing.T) {
	t.Parallel()
	supported := []string{"svc:orders:read", "svc:vehicles:read", "svc:orders:write"}
	doc := &MetadataDocument{ClientID: "https://agent.acme.example/c", ClientName: "Acme Agent", RedirectURIs: []string{"https://agent.acme.example/cb"}}
	app, err := doc.app(supported)
	require.NoError(t, err)
	assert.Equal(t, &App{
		ID: doc.ClientID, ClientID: doc.ClientID, Name: "Acme Agent", Scopes: supported, BranchIDs: []string{},
		RedirectURIs: doc.RedirectURIs, SecretHash: []byte{}, Public: true,
	}, app, "no scope member: every supported scope; no organization, no branch, no secret")

	doc.Scopes = []string{"svc:orders:read"}
	app, err = doc.app(supported)
	require.NoError(t, err)
	assert.Equal(t, []string{"svc:orders:read"}, app.Scopes)

	doc.Scopes = []string{"svc:orders:read", "admin:everything"}
	_, err = doc.app(supported)
	require.ErrorIs(t, err, ErrClientMetadataDocument)
	assert.Contains(t, err.Error(), "admin:everything, which this server does not know")

	doc.Scopes = []string{"svc:orders:read", `bad"scope`}
	_, err = doc.app(supported)
	require.ErrorIs(t, err, ErrClientMetadataDocument)
	assert.Contains(t, err.Error(), "malformed")
}

func TestCacheLifetime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cacheControl []string
		want         time.Duration
	}{
		{nil, 5 * time.Minute},
		{[]string{"max-age=3600"}, time.Hour},
		{[]string{"public, max-age=7200"}, 2 * time.Hour},
		{[]string{`max-age="600"`}, 10 * time.Minute},
		{[]string{"max-age=60"}, 5 * time.Minute},
		{[]string{"max-age=0"}, 5 * time.Minute},
		{[]string{"max-age=-5"}, 5 * time.Minute},
		{[]string{"max-age=9999999"}, 24 * time.Hour},
		{[]string{"max-age=99999999999999999999999"}, 5 * time.Minute},
		{[]string{"no-store"}, 5 * time.Minute},
		{[]string{"max-age=3600, no-cache"}, 5 * time.Minute},
		{[]string{"public", "max-age=3600"}, time.Hour},
		{[]string{"Max-Age=1800"}, 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.cacheControl, "|"), func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.cacheControl {
				h.Add("Cache-Control", v)
			}
			assert.Equal(t, tt.want, cacheLifetime(h))
		})
	}
}

// docServer is an httptest TLS server on loopback that serves client
// metadata documents and counts the requests of each path.
type docServer struct {
	*httptest.Server
	mu    sync.Mutex
	hits  map[string]int
	roots *x509.CertPool
}

func newDocServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *docServer {
	t.Helper()
	s := &docServer{hits: map[string]int{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	s.roots = x509.NewCertPool()
	s.roots.AddCert(s.Certificate())
	return s
}

func (s *docServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// documents returns a resolver that trusts s and allows its loopback
// address, on clock.
func (s *docServer) documents(clock *consentClock) *ClientMetadataDocuments {
	return &ClientMetadataDocuments{Guard: netguard.Guard{AllowPrivate: true}, RootCAs: s.roots, Timeout: 500 * time.Millisecond, Now: clock.Now}
}

func TestClientMetadataDocumentsFetch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var srv *docServer
	srv = newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		id := srv.URL + r.URL.Path
		switch r.URL.Path {
		case "/good", "/good-octet":
			assert.Equal(t, "application/json", r.Header.Get("Accept"))
			if r.URL.Path == "/good-octet" {
				w.Header().Set("Content-Type", "application/octet-stream")
			} else {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
			}
			_, _ = w.Write(metadataDoc(id, nil))
		case "/huge":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(metadataDoc(id, func(m map[string]any) { m["padding"] = strings.Repeat("x", 1<<20) }))
		case "/huge-chunked":
			w.Header().Set("Content-Type", "application/json")
			for range 64 {
				_, _ = w.Write([]byte(strings.Repeat(" ", 1024)))
				w.(http.Flusher).Flush()
			}
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/redirect":
			http.Redirect(w, r, "/good", http.StatusFound)
		case "/not-found":
			http.NotFound(w, r)
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(metadataDoc(id, nil))
		case "/not-json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("Hello, world"))
		case "/mismatch":
			_, _ = w.Write(metadataDoc(srv.URL+"/good", nil))
		}
	})
	clock := &consentClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	d := srv.documents(clock)
	tests := []struct {
		path  string
		says  string // "" = accepted
		cause error
	}{
		{"/good", "", nil},
		{"/good-octet", "", nil},
		{"/huge", "larger than 5120 bytes", nil},
		{"/huge-chunked", "larger than 5120 bytes", nil},
		{"/slow", "not served within 500ms", context.DeadlineExceeded},
		{"/redirect", "answered 302, a redirect, which is not followed", nil},
		{"/not-found", "answered 404 instead of 200", nil},
		{"/html", `served as "text/html", not as JSON`, nil},
		{"/not-json", "not a JSON object", nil},
		{"/mismatch", "is not the URL it is served at", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			doc, err := d.Resolve(t.Context(), srv.URL+tt.path)
			if tt.says == "" {
				require.NoError(t, err)
				assert.Equal(t, srv.URL+tt.path, doc.ClientID)
				assert.Equal(t, "Acme Agent", doc.ClientName)
				assert.Equal(t, clock.Now().Add(5*time.Minute), doc.ExpiresAt)
				return
			}
			require.ErrorIs(t, err, ErrClientMetadataDocument)
			if tt.cause != nil {
				assert.ErrorIs(t, err, tt.cause)
			}
			var docErr *ClientMetadataError
			require.ErrorAs(t, err, &docErr)
			assert.Contains(t, docErr.Reason, tt.says)
			if tt.path != "/mismatch" { // which quotes the document
				assert.NotContains(t, docErr.Reason, "127.0.0.1", "the reason never tells the address")
			}
		})
	}
	t.Run("redirect target not fetched", func(t *testing.T) {
		t.Parallel()
		_, _ = d.Resolve(t.Context(), srv.URL+"/redirect")
		assert.Equal(t, 0, srv.count("/elsewhere"))
	})
}

func TestClientMetadataDocumentsGuard(t *testing.T) {
	t.Parallel()
	srv := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(metadataDoc("https://"+r.Host+r.URL.Path, nil))
	})
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	d := &ClientMetadataDocuments{RootCAs: srv.roots, Guard: netguard.Guard{Resolver: hostsOnly}}
	for _, id := range []string{
		srv.URL + "/client.json",
		"https://localhost:" + u.Port() + "/client.json",
		"https://[::1]:" + u.Port() + "/client.json",
		"https://169.254.169.254/latest/meta-data/client.json",
		"https://10.0.0.1/client.json",
	} {
		_, err := d.Resolve(t.Context(), id)
		require.ErrorIs(t, err, netguard.ErrPrivateAddress, id)
		assert.Contains(t, err.Error(), "address", id)
	}
	assert.Equal(t, 0, srv.count("/client.json"), "nothing was fetched")
	_, err = d.Resolve(t.Context(), "http://agent.acme.example/client.json")
	assert.ErrorContains(t, err, "must be an https URL")
}

// hostsOnly resolves names from /etc/hosts alone (localhost) and fails at
// once for every other name.
var hostsOnly = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no DNS in tests")
}}

func TestClientMetadataDocumentsCache(t *testing.T) {
	t.Parallel()
	var srv *docServer
	cacheControl := map[string]string{"/hour": "max-age=3600", "/minute": "max-age=60", "/week": "max-age=604800", "/no-store": "no-store"}
	srv = newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.NotFound(w, r)
			return
		}
		if cc := cacheControl[r.URL.Path]; cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		_, _ = w.Write(metadataDoc(srv.URL+r.URL.Path, nil))
	})
	tests := []struct {
		path string
		kept time.Duration
	}{
		{"/hour", time.Hour},
		{"/minute", 5 * time.Minute},
		{"/week", 24 * time.Hour},
		{"/no-store", 5 * time.Minute},
		{"/none", 5 * time.Minute},
		{"/broken", 10 * time.Second}, // a failure
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			clock := &consentClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			d := srv.documents(clock)
			resolve := func() {
				_, err := d.Resolve(t.Context(), srv.URL+tt.path)
				assert.Equal(t, tt.path == "/broken", err != nil, "%v", err)
			}
			resolve()
			before := srv.count(tt.path)
			clock.Advance(tt.kept - time.Second)
			resolve()
			assert.Equal(t, before, srv.count(tt.path), "kept until its lifetime ends")
			clock.Advance(time.Second)
			resolve()
			assert.Equal(t, before+1, srv.count(tt.path), "fetched again when it ends")
		})
	}
}

func TestClientMetadataDocumentsCacheBound(t *testing.T) {
	t.Parallel()
	var srv *docServer
	srv = newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(metadataDoc(srv.URL+r.URL.Path, nil))
	})
	clock := &consentClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	d := srv.documents(clock)
	d.MaxEntries = 2
	resolve := func(path string) {
		t.Helper()
		_, _ = d.Resolve(t.Context(), srv.URL+path)
		clock.Advance(time.Second)
	}
	resolve("/a")
	resolve("/b")
	resolve("/c") // drops /a, the oldest
	d.mu.Lock()
	assert.Len(t, d.entries, 2)
	d.mu.Unlock()
	resolve("/b")
	resolve("/c")
	assert.Equal(t, 1, srv.count("/b"), "kept")
	assert.Equal(t, 1, srv.count("/c"), "kept")
	resolve("/a")
	assert.Equal(t, 2, srv.count("/a"), "fetched again: it was dropped")

	resolve("/broken") // drops /c, the oldest document
	resolve("/d")      // drops the failure before any document
	resolve("/a")
	assert.Equal(t, 2, srv.count("/a"), "a document outlives a newer failure")
}

func TestClientMetadataDocumentsShareFetch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var srv *docServer
	srv = newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write(metadataDoc(srv.URL+r.URL.Path, nil))
	})
	clock := &consentClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	d := srv.documents(clock)
	d.Timeout = 10 * time.Second
	const callers = 20
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range callers {
		wg.Go(func() {
			if doc, err := d.Resolve(context.Background(), srv.URL+"/shared"); err == nil && doc.ClientName == "Acme Agent" {
				ok.Add(1)
			}
		})
	}
	// A caller whose request ends stops waiting; the fetch goes on for
	// the others.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := d.Resolve(ctx, srv.URL+"/shared")
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	wg.Wait()
	assert.Equal(t, int64(callers), ok.Load())
	assert.Equal(t, 1, srv.count("/shared"), "one fetch for every caller")
}

func TestClientMetadataErrorUnwrap(t *testing.T) {
	t.Parallel()
	err := error(&ClientMetadataError{ClientID: "https://a.example/c", Reason: "r", Err: netguard.ErrPrivateAddress})
	assert.ErrorIs(t, err, ErrClientMetadataDocument)
	assert.ErrorIs(t, err, netguard.ErrPrivateAddress)
	assert.False(t, errors.Is(&ClientMetadataError{}, netguard.ErrPrivateAddress))
	assert.Equal(t, "oauth: the client metadata document at https://a.example/c cannot be used: r", err.Error())
}

// A client of a metadata document goes through the browser flow like a
// registered public client: the sign-in and consent pages name it with the
// host of its client_id and say the name is its own claim, and its code is
// bound to the URL. One whose document is not valid gets the error page,
// with the reason, and nothing is stored.
func TestClientMetadataDocumentConsent(t *testing.T) {
	t.Parallel()
	var srv *docServer
	srv = newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		id := srv.URL + r.URL.Path
		if r.URL.Path == "/mismatch" {
			id = srv.URL + "/client.json"
		}
		_, _ = w.Write(metadataDoc(id, func(m map[string]any) {
			m["redirect_uris"] = []string{consentRedirect}
			m["scope"] = "svc:orders:read svc:shipments:write"
		}))
	})
	host := strings.TrimPrefix(srv.URL, "https://")
	f := newConsentFixture(t, func(s *Server) {
		s.ScopesSupported = []string{"svc:orders:read", "svc:shipments:write", "svc:vehicles:read"}
		s.ClientMetadataDocuments = &ClientMetadataDocuments{Guard: netguard.Guard{AllowPrivate: true}, RootCAs: srv.roots}
	})
	req := validRequest()
	req.ClientID = srv.URL + "/client.json"
	c := f.client(t)

	login := f.get(t, c, defaultPaths.loginURL(defaultPaths.authorizeURL(req)))
	require.Equal(t, http.StatusOK, login.StatusCode)
	assert.Contains(t, login.body, "<strong>Acme Agent ("+host+")</strong>")
	f.signIn(t, c, "alice@example.com", consentPassword, defaultPaths.authorizeURL(req))
	consent := f.get(t, c, defaultPaths.authorizeURL(req))
	require.Equal(t, http.StatusOK, consent.StatusCode, consent.body)
	assert.Contains(t, consent.body, "<strong>Acme Agent</strong> ("+host+") wants to use Waybill")
	assert.Contains(t, consent.body, "is the name this application gives itself; Waybill has not checked it")
	assert.Contains(t, consent.body, "approve only if you trust "+host)
	assert.Contains(t, consent.body, "<title>Allow Acme Agent ("+host+")")

	form := req.values()
	form.Set("csrf_token", csrfOf(t, consent))
	form.Set("organization_id", consentAcme)
	form.Set("decision", "approve")
	back := f.post(t, c, PathConsent, form).location(t)
	code := f.store.codeFor(back.Query().Get("code"))
	require.NotNil(t, code)
	assert.Equal(t, req.ClientID, code.ClientID, "the URL is the client id")
	assert.Equal(t, []Grant{{ClientID: req.ClientID, UserID: consentAlice, OrganizationID: consentAcme,
		Scopes: []string{"svc:orders:read", "svc:shipments:write"}, CreatedAt: f.clock.Now()}}, f.store.savedGrants())

	// Scopes beyond the document's are refused back at the client.
	wide := req
	wide.Scope = "svc:vehicles:read"
	p := f.get(t, c, defaultPaths.authorizeURL(wide))
	assert.Equal(t, "invalid_scope", p.location(t).Query().Get("error"))

	bad := req
	bad.ClientID = srv.URL + "/mismatch"
	p = f.get(t, c, defaultPaths.authorizeURL(bad))
	assert.Equal(t, http.StatusBadRequest, p.StatusCode)
	assert.Empty(t, p.Header.Get("Location"))
	assert.Contains(t, p.body, "unknown client_id: its client metadata document cannot be used")
	assert.Contains(t, p.body, "is not the URL it is served at")
	assert.Equal(t, 1, f.store.codeCount(), "nothing more stored")
	assert.Len(t, f.store.savedGrants(), 1)
}
