package oauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/netguard"
)

// Limits of client metadata documents, unless the fields of
// ClientMetadataDocuments say otherwise.
const (
	// DefaultMetadataDocumentTimeout bounds one fetch of a document:
	// connecting, TLS, the answer's headers and its body. A user waits
	// for it on the authorization endpoint, and a client that cannot
	// serve a few kilobytes in this time is broken or hostile.
	DefaultMetadataDocumentTimeout = 5 * time.Second
	// DefaultMetadataDocumentMaxBytes is the largest document accepted,
	// the 5 KiB that the Client ID Metadata Document draft suggests
	// authorization servers accept at least: a document is a name, a few
	// redirect URIs and a few words of metadata. A longer answer fails
	// without the rest being read.
	DefaultMetadataDocumentMaxBytes = 5 << 10
	// DefaultMetadataDocumentCacheEntries bounds how many documents are
	// kept: beyond it, the one fetched longest ago is dropped.
	DefaultMetadataDocumentCacheEntries = 1000
	// MinMetadataDocumentCache and MaxMetadataDocumentCache clamp how
	// long a document is kept: its Cache-Control max-age, at least 5
	// minutes (a document without one, or with no-store or no-cache, is
	// kept this long: fetching it on every step of a flow would let any
	// client make this server send requests at will) and at most 24
	// hours (so that a client's change of its redirect URIs, or the end
	// of a compromised document, takes effect within a day).
	MinMetadataDocumentCache = 5 * time.Minute
	MaxMetadataDocumentCache = 24 * time.Hour
	// MetadataDocumentFailureCache is how long a failed fetch or an
	// invalid document is remembered: a flood of requests naming the same
	// broken or slow URL makes one fetch every 10 seconds, not one per
	// request, while a client that fixes its document waits no longer.
	MetadataDocumentFailureCache = 10 * time.Second
	// maxConcurrentMetadataFetches bounds the fetches in flight at once,
	// over every URL, so that requests naming many distinct URLs cannot
	// make this server open connections without bound; a request beyond
	// it waits for a free slot within its fetch timeout.
	maxConcurrentMetadataFetches = 64
)

// errTooManyFetches is the cause of a fetch that found no free slot within
// its timeout: the server's load, not the document's fault, so it is not
// remembered, and the callers answer 503.
var errTooManyFetches = errors.New("oauth: too many client metadata documents are being fetched")

// ErrClientMetadataDocument is wrapped by every error of a client id whose
// metadata document cannot be used (see ClientMetadataError).
var ErrClientMetadataDocument = errors.New("oauth: the client metadata document cannot be used")

// ClientMetadataError says why the metadata document of a client id that is
// a URL cannot be used: it could not be fetched, or it is not a valid
// document for that client id. Reason is meant for the client's developer
// (the authorization endpoint's error page shows it, the token endpoint's
// invalid_client carries it); it never holds what the URL's host resolves
// to. It wraps ErrClientMetadataDocument and its cause, if any
// (netguard.ErrPrivateAddress for an address that is not public,
// context.DeadlineExceeded for a timeout).
type ClientMetadataError struct {
	// ClientID is the client id, the document's URL.
	ClientID string
	// Reason says what is wrong, in words.
	Reason string
	// Err is the cause, or nil.
	Err error
}

func (e *ClientMetadataError) Error() string {
	return "oauth: the client metadata document at " + excerpt.Cut(e.ClientID, 200) + " cannot be used: " + e.Reason
}

// Unwrap returns ErrClientMetadataDocument and the cause.
func (e *ClientMetadataError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrClientMetadataDocument}
	}
	return []error{ErrClientMetadataDocument, e.Err}
}

// MetadataDocument is a validated client metadata document: the registration
// of a public client that identifies itself by the URL of the document
// (draft-ietf-oauth-client-id-metadata-document).
type MetadataDocument struct {
	// ClientID is the document's URL, which the document names as its
	// client_id.
	ClientID string
	// ClientName is the client's name, as the client claims it.
	ClientName string
	// RedirectURIs are its redirect URIs, each of which passes
	// CheckRedirectURI.
	RedirectURIs []string
	// Scopes are the scopes of its scope member, nil when it has none.
	Scopes []string
	// FetchedAt is when the document was fetched, ExpiresAt until when it
	// is used without being fetched again.
	FetchedAt, ExpiresAt time.Time
}

// ClientMetadataDocuments resolves client ids that are https URLs to the
// client metadata documents they point to (the OAuth Client ID Metadata
// Document draft): a client that nobody registered identifies itself by the
// URL of a JSON document that holds its metadata, which the authorization
// server fetches. Set one as Server.ClientMetadataDocuments to accept such
// clients. Its zero value is ready to use and refuses documents at
// addresses that are not public.
//
// A fetch is a GET of the URL with Accept: application/json, through
// Guard: it connects only to public addresses (unless Guard.AllowPrivate),
// uses no proxy and follows no redirect, so that a client id cannot make
// this server reach its own network (SSRF). Only a 200 answer counts (a
// 3xx is a failure, not followed), of at most MaxBytes bytes (a longer one
// fails without being read further), within Timeout. The Content-Type is
// not checked beyond refusing one that is not JSON-like text, since static
// hosts label JSON variously; the body must be a JSON object.
//
// A document is valid when, as the draft and this server require:
// client_id equals the URL exactly (no normalization); client_name is
// given, at most 200 bytes of UTF-8 without control characters;
// redirect_uris is a non-empty list (at most 20) of redirect URIs that pass
// CheckRedirectURI; token_endpoint_auth_method is "none" (such a client is
// public: a document anyone can read can hold no secret, and this server
// does not take private_key_jwt); grant_types, if given, holds only
// authorization_code and refresh_token; response_types, if given, is
// ["code"]; client_secret and client_secret_expires_at are absent; scope,
// if given, is a space-separated list of scopes. Other members are
// ignored.
//
// The client id URL itself must be https, with a host and a path other
// than "/", without user information, fragment or dot segments ("." or
// ".."), at most 2048 bytes, and pass Guard.CheckURL.
//
// Documents are cached in memory, keyed by the exact URL, for their
// Cache-Control max-age clamped to [MinMetadataDocumentCache,
// MaxMetadataDocumentCache]; at most MaxEntries are kept (the oldest fetch
// is dropped first). Concurrent resolutions of one URL share one fetch,
// whose time is bounded by Timeout, not by the first caller's request. A
// failure is remembered for MetadataDocumentFailureCache. Each replica of a
// server keeps its own cache.
//
// A ClientMetadataDocuments is safe for concurrent use; set its fields
// before its first use.
type ClientMetadataDocuments struct {
	// Guard decides which addresses a fetch may connect to; the zero Guard
	// allows public addresses only.
	Guard netguard.Guard
	// RootCAs, when set, are the certificate authorities trusted for the
	// documents' TLS certificates instead of the system's: for tests,
	// whose document servers have self-signed certificates.
	RootCAs *x509.CertPool
	// Client, when set, fetches the documents instead of the client made
	// from Guard, RootCAs and Timeout; it should follow no redirect and
	// connect through a guard, as that one does.
	Client *http.Client
	// Timeout bounds one fetch; zero means DefaultMetadataDocumentTimeout.
	Timeout time.Duration
	// MaxBytes is the largest document accepted; zero means
	// DefaultMetadataDocumentMaxBytes.
	MaxBytes int64
	// MaxEntries bounds the cache; zero means
	// DefaultMetadataDocumentCacheEntries.
	MaxEntries int
	// Now is the cache's clock; nil means the clock of the Server it
	// serves (Server.Now), or time.Now when used alone.
	Now func() time.Time

	initOnce sync.Once
	client   *http.Client
	slots    chan struct{}

	mu      sync.Mutex
	entries map[string]*metadataEntry
}

// metadataEntry is a cached resolution of one URL: a document or a
// failure, or a fetch in flight (done not yet closed).
type metadataEntry struct {
	done      chan struct{}
	doc       *MetadataDocument
	err       error
	expiresAt time.Time
	fetchedAt time.Time
}

func (d *ClientMetadataDocuments) init() {
	d.initOnce.Do(func() {
		d.slots = make(chan struct{}, maxConcurrentMetadataFetches)
		d.entries = map[string]*metadataEntry{}
		if d.Client != nil {
			d.client = d.Client
			return
		}
		c := d.Guard.Client(d.timeout())
		if t, ok := c.Transport.(*http.Transport); ok {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: d.RootCAs}
			t.MaxIdleConnsPerHost = 2
			t.IdleConnTimeout = 30 * time.Second
		}
		d.client = c
	})
}

func (d *ClientMetadataDocuments) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultMetadataDocumentTimeout
}

func (d *ClientMetadataDocuments) maxBytes() int64 {
	if d.MaxBytes > 0 {
		return d.MaxBytes
	}
	return DefaultMetadataDocumentMaxBytes
}

func (d *ClientMetadataDocuments) maxEntries() int {
	if d.MaxEntries > 0 {
		return d.MaxEntries
	}
	return DefaultMetadataDocumentCacheEntries
}

// IsClientMetadataURL reports whether clientID is meant as the URL of a
// client metadata document: it starts with "https://". Whether it is a
// valid one is for Resolve to say.
func IsClientMetadataURL(clientID string) bool {
	return strings.HasPrefix(clientID, "https://")
}

// Resolve returns the validated metadata document of clientID, from the
// cache or fetched, or a *ClientMetadataError that says why it cannot be
// used. ctx bounds only the caller's wait: a fetch, which other callers may
// share, goes on within Timeout when ctx ends.
func (d *ClientMetadataDocuments) Resolve(ctx context.Context, clientID string) (*MetadataDocument, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	return d.resolve(ctx, clientID, now)
}

// resolve is Resolve on the clock now.
func (d *ClientMetadataDocuments) resolve(ctx context.Context, clientID string, now func() time.Time) (*MetadataDocument, error) {
	d.init()
	if err := checkClientIDURL(clientID); err != nil {
		return nil, err
	}
	d.mu.Lock()
	e := d.entries[clientID]
	if e != nil {
		select {
		case <-e.done:
			if now().Before(e.expiresAt) {
				d.mu.Unlock()
				return e.doc, e.err
			}
			e = nil // expired: fetch again
		default: // in flight: wait for it below
		}
	}
	if e == nil {
		e = &metadataEntry{done: make(chan struct{}), fetchedAt: now()}
		d.entries[clientID] = e
		d.evictLocked()
		go d.fetchInto(context.WithoutCancel(ctx), clientID, e, now)
	}
	d.mu.Unlock()
	select {
	case <-e.done:
		return e.doc, e.err
	case <-ctx.Done():
		// The caller's request ended (or its deadline passed): not the
		// document's fault, and not an answer for the client.
		return nil, fmt.Errorf("oauth: wait for the client metadata document: %w", ctx.Err())
	}
}

// evictLocked drops the entries beyond MaxEntries: failures first, then
// documents, then fetches in flight (which callers wait for), each the
// one fetched longest ago first. d.mu is held.
func (d *ClientMetadataDocuments) evictLocked() {
	for len(d.entries) > d.maxEntries() {
		var victim string
		var ve *metadataEntry
		for k, e := range d.entries {
			if ve == nil || evictBefore(e, ve) {
				victim, ve = k, e
			}
		}
		delete(d.entries, victim)
	}
}

// evictBefore reports whether a goes before b when the cache is full.
func evictBefore(a, b *metadataEntry) bool {
	if ra, rb := evictRank(a), evictRank(b); ra != rb {
		return ra < rb
	}
	return a.fetchedAt.Before(b.fetchedAt)
}

// evictRank orders entries for eviction: a failure 0, a document 1, a
// fetch in flight 2.
func evictRank(e *metadataEntry) int {
	select {
	case <-e.done:
		if e.err != nil {
			return 0
		}
		return 1
	default:
		return 2
	}
}

// fetchInto fetches and validates the document of clientID into e, then
// marks e done. A failure is kept for MetadataDocumentFailureCache.
func (d *ClientMetadataDocuments) fetchInto(ctx context.Context, clientID string, e *metadataEntry, now func() time.Time) {
	defer close(e.done)
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	doc, maxAge, err := d.fetch(ctx, clientID)
	d.mu.Lock()
	defer d.mu.Unlock()
	at := now()
	if err != nil {
		e.err, e.expiresAt = err, at.Add(MetadataDocumentFailureCache)
		if errors.Is(err, errTooManyFetches) {
			e.expiresAt = at // the next caller tries again
		}
		return
	}
	doc.FetchedAt, doc.ExpiresAt = at, at.Add(maxAge)
	e.doc, e.expiresAt = doc, doc.ExpiresAt
}

// fetch fetches the document of clientID and validates it; it returns the
// document and how long to keep it.
func (d *ClientMetadataDocuments) fetch(ctx context.Context, clientID string) (*MetadataDocument, time.Duration, error) {
	refuse := func(cause error, format string, args ...any) (*MetadataDocument, time.Duration, error) {
		return nil, 0, &ClientMetadataError{ClientID: clientID, Reason: fmt.Sprintf(format, args...), Err: cause}
	}
	if err := d.Guard.CheckURL(ctx, clientID); err != nil {
		return refuse(err, "%s", err.Error())
	}
	select {
	case d.slots <- struct{}{}:
		defer func() { <-d.slots }()
	case <-ctx.Done():
		return refuse(errTooManyFetches, "the server is fetching too many client metadata documents at once; try again in a moment")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return refuse(err, "the URL cannot be fetched")
	}
	req.Header.Set("Accept", "application/json")
	res, err := d.client.Do(req)
	if err != nil {
		return refuse(timeoutCause(err), "%s", fetchFailure(err, d.timeout()))
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return refuse(nil, "the URL answered %d, a redirect, which is not followed: the document must be served at the client_id itself", res.StatusCode)
	case res.StatusCode != http.StatusOK:
		return refuse(nil, "the URL answered %d instead of 200", res.StatusCode)
	case res.ContentLength > d.maxBytes():
		return refuse(nil, "the document is larger than %d bytes", d.maxBytes())
	}
	if ct := res.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || !jsonLike(mt) {
			return refuse(nil, "the document is served as %q, not as JSON (application/json)", excerpt.Cut(ct, 100))
		}
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, d.maxBytes()+1))
	switch {
	case err != nil:
		return refuse(timeoutCause(err), "%s", fetchFailure(err, d.timeout()))
	case int64(len(body)) > d.maxBytes():
		return refuse(nil, "the document is larger than %d bytes", d.maxBytes())
	}
	doc, err := parseMetadataDocument(clientID, body)
	if err != nil {
		return nil, 0, err
	}
	return doc, cacheLifetime(res.Header), nil
}

// jsonLike reports whether a media type may carry a JSON document:
// application/json, a +json type, or text/plain and
// application/octet-stream, which some static hosts send for any file.
func jsonLike(mt string) bool {
	switch {
	case mt == "application/json", strings.HasSuffix(mt, "+json"), mt == "text/plain", mt == "application/octet-stream":
		return true
	}
	return false
}

// fetchFailure puts the error of a failed request in words meant for the
// client: the guard's own words for an address refused, a timeout as one,
// a certificate problem as one, anything else as a failed connection
// without the address it was made to.
func fetchFailure(err error, timeout time.Duration) string {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		tlsErr           *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, netguard.ErrPrivateAddress):
		return "the URL's host resolves to an address that is not public"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("the document was not served within %s", timeout)
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &tlsErr):
		return "the server's TLS certificate is not valid for the URL's host"
	}
	return "the document could not be fetched: the connection to the URL's host failed"
}

// timeoutCause returns err, made to wrap context.DeadlineExceeded too when
// it is a timeout of another kind (the http.Client's own, a connection's),
// so that every timeout of a fetch is told apart the same way.
func timeoutCause(err error) error {
	if isTimeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// cacheLifetime is how long to keep a document answered with h: its
// Cache-Control max-age, clamped to [MinMetadataDocumentCache,
// MaxMetadataDocumentCache]; the minimum without one.
func cacheLifetime(h http.Header) time.Duration {
	maxAge := time.Duration(0)
	for _, v := range h.Values("Cache-Control") {
		for directive := range strings.SplitSeq(v, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return MinMetadataDocumentCache
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64)
				if err == nil && n > 0 {
					maxAge = time.Duration(min(n, int64(MaxMetadataDocumentCache/time.Second))) * time.Second
				}
			}
		}
	}
	return min(max(maxAge, MinMetadataDocumentCache), MaxMetadataDocumentCache)
}

// checkClientIDURL checks that clientID may be the URL of a client
// metadata document, before anything is fetched (see
// ClientMetadataDocuments).
func checkClientIDURL(clientID string) error {
	refuse := func(reason string) error {
		return &ClientMetadataError{ClientID: clientID, Reason: "the client_id " + reason}
	}
	if len(clientID) > netguard.MaxURLLength {
		return refuse(fmt.Sprintf("is longer than %d bytes", netguard.MaxURLLength))
	}
	for i := 0; i < len(clientID); i++ {
		if c := clientID[i]; c <= ' ' || c >= 0x7f {
			return refuse("holds a space, a control character or a non-ASCII character")
		}
	}
	if strings.Contains(clientID, "#") {
		return refuse("has a fragment (#)")
	}
	u, err := url.Parse(clientID)
	switch {
	case err != nil:
		return refuse("is not a valid URL")
	case u.Scheme != "https" || !strings.HasPrefix(clientID, "https://"):
		return refuse("must be an https URL")
	case u.User != nil:
		return refuse("must not contain a user name or password")
	case u.Host == "" || u.Hostname() == "":
		return refuse("must have a host")
	case u.Opaque != "" || u.EscapedPath() == "" || u.EscapedPath() == "/":
		return refuse("must have a path, as in https://app.example.com/oauth/client.json")
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
			return refuse(`must not have "." or ".." path segments`)
		}
	}
	return nil
}

// clientMetadataJSON is the JSON of a client metadata document; the
// members are raw so that a member of the wrong type gets its own message.
type clientMetadataJSON struct {
	ClientID                json.RawMessage `json:"client_id"`
	ClientName              json.RawMessage `json:"client_name"`
	RedirectURIs            json.RawMessage `json:"redirect_uris"`
	TokenEndpointAuthMethod json.RawMessage `json:"token_endpoint_auth_method"`
	GrantTypes              json.RawMessage `json:"grant_types"`
	ResponseTypes           json.RawMessage `json:"response_types"`
	Scope                   json.RawMessage `json:"scope"`
	ClientSecret            json.RawMessage `json:"client_secret"`
	ClientSecretExpiresAt   json.RawMessage `json:"client_secret_expires_at"`
}

// parseMetadataDocument validates body, the document fetched at clientID.
func parseMetadataDocument(clientID string, body []byte) (*MetadataDocument, error) {
	refuse := func(format string, args ...any) error {
		return &ClientMetadataError{ClientID: clientID, Reason: fmt.Sprintf(format, args...)}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, refuse("the document is not a JSON object")
	}
	var raw clientMetadataJSON
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, refuse("the document is not a JSON object")
	}
	str := func(name string, m json.RawMessage) (string, bool, error) {
		if m == nil || string(m) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(m, &s); err != nil {
			return "", true, refuse("%s must be a string", name)
		}
		return s, true, nil
	}
	list := func(name string, m json.RawMessage) ([]string, bool, error) {
		if m == nil || string(m) == "null" {
			return nil, false, nil
		}
		var l []string
		if err := json.Unmarshal(m, &l); err != nil {
			return nil, true, refuse("%s must be a list of strings", name)
		}
		return l, true, nil
	}
	id, ok, err := str("client_id", raw.ClientID)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, refuse("the document has no client_id")
	case id != clientID:
		return nil, refuse("the document's client_id %q is not the URL it is served at", excerpt.Cut(id, 200))
	}
	if raw.ClientSecret != nil || raw.ClientSecretExpiresAt != nil {
		return nil, refuse("the document holds a client_secret: a document anyone can read cannot keep a secret")
	}
	method, ok, err := str("token_endpoint_auth_method", raw.TokenEndpointAuthMethod)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, refuse(`token_endpoint_auth_method is required and must be "none": this server takes such clients as public clients`)
	case method != "none":
		return nil, refuse(`token_endpoint_auth_method must be "none", not %q: this server takes such clients as public clients`, excerpt.Cut(method, 64))
	}
	name, _, err := str("client_name", raw.ClientName)
	if err != nil {
		return nil, err
	}
	if name, err = checkClientName(name); err != nil {
		return nil, refuse("%s", err)
	}
	redirects, _, err := list("redirect_uris", raw.RedirectURIs)
	if err != nil {
		return nil, err
	}
	if err := checkClientRedirectURIs(redirects); err != nil {
		return nil, refuse("%s", err)
	}
	grants, _, err := list("grant_types", raw.GrantTypes)
	if err != nil {
		return nil, err
	}
	responses, _, err := list("response_types", raw.ResponseTypes)
	if err != nil {
		return nil, err
	}
	if err := checkClientGrants(grants, responses); err != nil {
		return nil, refuse("%s", err)
	}
	scope, ok, err := str("scope", raw.Scope)
	if err != nil {
		return nil, err
	}
	var scopes []string
	if ok {
		scopes = ParseScope(scope)
		if len(scopes) == 0 {
			return nil, refuse("scope is empty: leave it out to ask for every scope")
		}
	}
	return &MetadataDocument{
		ClientID: clientID, ClientName: name, RedirectURIs: dedupe(redirects), Scopes: scopes,
	}, nil
}

// app returns the App of a validated document on a server that supports
// the scopes supported: a public client with no organization and no
// branches (so never a client-credentials token), whose scopes are those
// of its scope member when it has one, which must all be supported, else
// every supported scope.
func (m *MetadataDocument) app(supported []string) (*App, error) {
	scopes := supported
	if m.Scopes != nil {
		if err := checkClientScopes(m.Scopes, supported); err != nil {
			return nil, &ClientMetadataError{ClientID: m.ClientID, Reason: err.Error()}
		}
		scopes = m.Scopes
	}
	return &App{
		ID: m.ClientID, ClientID: m.ClientID, Name: m.ClientName, Scopes: slices.Clone(scopes),
		BranchIDs: []string{}, RedirectURIs: slices.Clone(m.RedirectURIs), SecretHash: []byte{}, Public: true,
		CreatedAt: m.FetchedAt,
	}, nil
}
