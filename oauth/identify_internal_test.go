package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appStore is a Store with one app, "app-1" with the secret "s", that
// counts its loads; every other method panics (the embedded nil Store).
type appStore struct {
	Store
	loads atomic.Int32
}

func (s *appStore) App(_ context.Context, clientID string) (*App, error) {
	s.loads.Add(1)
	if clientID != "app-1" {
		return nil, ErrNotFound
	}
	return &App{ClientID: "app-1", SecretHash: hashSecret("s")}, nil
}

// countingBody counts the bytes read from it.
type countingBody struct {
	io.Reader
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (countingBody) Close() error { return nil }

// Behind IdentifyClient, the token endpoint reads no body and loads no app
// again: it takes the parameters and the app that IdentifyClient found.
func TestIdentifyClientReadsOnce(t *testing.T) {
	t.Parallel()
	store := &appStore{}
	srv := &Server{Issuer: "https://tms.test", Store: store}
	h := IdentifyClient(srv)(srv.ClientCredentialsHandler())

	const body = "grant_type=client_credentials&client_id=app-1&client_secret=s"
	var read atomic.Int64
	req := httptest.NewRequest(http.MethodPost, PathToken, nil)
	req.Body = countingBody{Reader: strings.NewReader(body), n: &read}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	// The app has no branch list: authenticated, and then refused the
	// grant (401 invalid_client would mean it did not authenticate).
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
	assert.Equal(t, "unauthorized_client", e.Error)
	assert.EqualValues(t, len(body), read.Load(), "the body is read once")
	assert.EqualValues(t, 1, store.loads.Load(), "the app is loaded once")
}

// A body the endpoint cannot read gets the endpoint's own answer, once.
func TestIdentifyClientPassesErrors(t *testing.T) {
	t.Parallel()
	srv := &Server{Issuer: "https://tms.test", Store: &appStore{}}
	h := IdentifyClient(srv)(srv.ClientCredentialsHandler())
	for _, tt := range []struct {
		name, ct, body string
		status         int
		code           string
	}{
		{"too long", "application/x-www-form-urlencoded", "client_id=app-1&pad=" + strings.Repeat("x", maxRequestBytes), http.StatusRequestEntityTooLarge, ""},
		{"other type", "text/plain", "client_id=app-1", http.StatusBadRequest, "invalid_request"},
		{"bad form", "application/x-www-form-urlencoded", "client_id=%zz", http.StatusBadRequest, "invalid_request"},
		{"repeated parameter", "application/x-www-form-urlencoded", "client_id=a&client_id=b", http.StatusBadRequest, "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, PathToken, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tt.status, rec.Code, rec.Body.String())
			if tt.code != "" {
				assert.Contains(t, rec.Body.String(), `"error":"`+tt.code+`"`)
			}
		})
	}
}

// fixedClients authenticates the client "app-1" with the secret "s".
type fixedClients struct{}

func (fixedClients) AuthenticateClient(_ context.Context, id, secret, _ string) (*App, error) {
	if id == "app-1" && secret == "s" {
		return &App{ClientID: id}, nil
	}
	return nil, ErrNotFound
}

// IdentifyClient finds the credentials where the token endpoint does, and
// hands on the app of those that authenticate; KeyByClient keys by it, or
// by its fallback.
func TestIdentifyClientKeys(t *testing.T) {
	t.Parallel()
	byAddr := func(r *http.Request) (string, bool) { return "addr:" + r.RemoteAddr, true }
	tests := []struct {
		name, ct, body string
		basic          [2]string
		want           string
	}{
		{name: "form", ct: "application/x-www-form-urlencoded", body: "grant_type=client_credentials&client_id=app-1&client_secret=s", want: "client:app-1"},
		{name: "form with charset", ct: "application/x-www-form-urlencoded; charset=utf-8", body: "client_id=app-1&client_secret=s", want: "client:app-1"},
		{name: "json", ct: "application/json", body: `{"client_id":"app-1","client_secret":"s"}`, want: "client:app-1"},
		{name: "basic", ct: "application/x-www-form-urlencoded", body: "grant_type=client_credentials", basic: [2]string{"app-1", "s"}, want: "client:app-1"},
		{name: "basic, form-encoded", ct: "application/x-www-form-urlencoded", body: "grant_type=client_credentials", basic: [2]string{"app%2D1", "%73"}, want: "client:app-1"},
		{name: "basic, not form-encoded", ct: "application/x-www-form-urlencoded", body: "grant_type=client_credentials", basic: [2]string{"a%zz", "s"}, want: "addr:192.0.2.7:5000"},
		{name: "basic and a body secret", ct: "application/x-www-form-urlencoded", body: "client_secret=s", basic: [2]string{"app-1", "s"}, want: "addr:192.0.2.7:5000"},
		{name: "wrong secret", ct: "application/x-www-form-urlencoded", body: "client_id=app-1&client_secret=x", want: "addr:192.0.2.7:5000"},
		{name: "no secret", ct: "application/x-www-form-urlencoded", body: "client_id=app-1", want: "addr:192.0.2.7:5000"},
		{name: "no client", ct: "application/x-www-form-urlencoded", body: "grant_type=refresh_token&refresh_token=r", want: "addr:192.0.2.7:5000"},
		{name: "json, key differs in case", ct: "application/json", body: `{"Client_ID":"app-1","client_secret":"s"}`, want: "addr:192.0.2.7:5000"},
		{name: "json, not an object", ct: "application/json", body: `["client_id"]`, want: "addr:192.0.2.7:5000"},
		{name: "other type", ct: "text/plain", body: "client_id=app-1&client_secret=s", want: "addr:192.0.2.7:5000"},
		{name: "no type", body: "client_id=app-1&client_secret=s", want: "addr:192.0.2.7:5000"},
		{name: "too long", ct: "application/x-www-form-urlencoded", body: "client_id=app-1&client_secret=s&pad=" + strings.Repeat("x", maxRequestBytes), want: "addr:192.0.2.7:5000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, PathToken, strings.NewReader(tt.body))
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			if tt.basic[0] != "" {
				req.SetBasicAuth(tt.basic[0], tt.basic[1])
			}
			req.RemoteAddr = "192.0.2.7:5000"
			var got string
			IdentifyClient(fixedClients{})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				var ok bool
				got, ok = KeyByClient(byAddr)(r)
				assert.True(t, ok)
			})).ServeHTTP(httptest.NewRecorder(), req)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "client:app-1", ClientKey("app-1"))
	assert.Equal(t, "client:"+strings.Repeat("a", maxKeyLength), ClientKey(strings.Repeat("a", maxKeyLength)))
	long := ClientKey(strings.Repeat("a", 1000))
	assert.Len(t, long, len("client:sha256:")+64, "a long client id is hashed")
	assert.True(t, strings.HasPrefix(long, "client:sha256:"))
}
