package bearer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// jwksServer serves the JWKS of a key set that the test swaps, and counts
// the fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	cache   string
	status  int
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cache != "" {
			w.Header().Set("Cache-Control", s.cache)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(t *testing.T, v any, cache string) {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	s.mu.Lock()
	s.body, s.cache, s.status = b, cache, http.StatusOK
	s.mu.Unlock()
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestRemoteKeys(t *testing.T) {
	srv := newJWKSServer(t)
	clock := &fakeClock{now: time.Now()}
	a, b := genKey(t, bearer.ES256, "a"), genKey(t, bearer.EdDSA, "b")
	before, after := mustKeySet(t, a), mustKeySet(t, b, a) // a rotation: b signs, a still verifies
	srv.serve(t, before.JWKS(), "public, max-age=300")
	remote := &bearer.RemoteKeys{URL: srv.URL, Client: srv.Client(), Now: clock.Now}
	v := &bearer.Verifier{Source: remote, Issuer: testIssuer, Now: clock.Now}
	ctx := context.Background()
	sign := func(ks *bearer.KeySet) string {
		tok, err := ks.Sign(ccClaims(clock.Now()))
		require.NoError(t, err)
		return tok
	}
	verify := func(token string) error {
		_, err := v.Verify(ctx, token)
		return err
	}

	require.NoError(t, verify(sign(before)))
	require.NoError(t, verify(sign(before)))
	assert.EqualValues(t, 1, srv.fetches.Load(), "fetched once, then cached")

	srv.serve(t, after.JWKS(), "public, max-age=300")
	clock.Add(10 * time.Second)
	assert.ErrorContains(t, verify(sign(after)), "unknown key", "within a minute of the last fetch, an unknown kid fetches nothing")
	assert.EqualValues(t, 1, srv.fetches.Load())

	clock.Add(time.Minute)
	require.NoError(t, verify(sign(after)), "an unknown kid fetches the set again")
	assert.EqualValues(t, 2, srv.fetches.Load())
	require.NoError(t, verify(sign(before)), "the previous key still verifies")
	assert.EqualValues(t, 2, srv.fetches.Load())

	stranger := mustKeySet(t, genKey(t, bearer.ES256, "stranger"))
	clock.Add(time.Minute)
	for range 5 {
		assert.ErrorContains(t, verify(sign(stranger)), "unknown key")
	}
	assert.EqualValues(t, 3, srv.fetches.Load(), "unknown kids fetch at most once a minute")
	clock.Add(30 * time.Second)
	assert.ErrorContains(t, verify(sign(stranger)), "unknown key")
	assert.EqualValues(t, 3, srv.fetches.Load())

	clock.Add(5 * time.Minute)
	require.NoError(t, verify(sign(after)))
	assert.EqualValues(t, 4, srv.fetches.Load(), "a set older than its max-age is fetched again")

	srv.mu.Lock()
	srv.status = http.StatusInternalServerError
	srv.mu.Unlock()
	clock.Add(10 * time.Minute)
	require.NoError(t, verify(sign(after)), "a failed fetch keeps the set fetched before")
	assert.EqualValues(t, 5, srv.fetches.Load())
	require.NoError(t, verify(sign(after)))
	assert.EqualValues(t, 5, srv.fetches.Load(), "and is not retried at every request")
}

// RemoteKeys takes only ES256 and EdDSA keys: a symmetric key in the set
// never verifies a token, nor does a key of another algorithm.
func TestRemoteKeysRefuse(t *testing.T) {
	srv := newJWKSServer(t)
	hs := testKey("hs", 5)
	ec := genKey(t, bearer.ES256, "ec")
	set := map[string]any{"keys": []map[string]any{
		{"kty": "oct", "kid": "hs", "alg": "HS256", "k": "NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU"},
		{"kty": "EC", "crv": "P-256", "kid": "ec-as-eddsa", "alg": "EdDSA", "x": mustKeySet(t, ec).JWKS().Keys[0].X, "y": mustKeySet(t, ec).JWKS().Keys[0].Y},
		{"kty": "EC", "crv": "P-256", "kid": "ec-enc", "use": "enc", "x": mustKeySet(t, ec).JWKS().Keys[0].X, "y": mustKeySet(t, ec).JWKS().Keys[0].Y},
		{"kty": "RSA", "kid": "rsa", "alg": "RS256", "n": "AQAB", "e": "AQAB"},
		{"kty": "EC", "crv": "P-256", "kid": "bad-point", "alg": "ES256", "x": "AAAA", "y": "AAAA"},
	}}
	srv.serve(t, set, "")
	v := &bearer.Verifier{Source: &bearer.RemoteKeys{URL: srv.URL, Client: srv.Client()}, Issuer: testIssuer}
	for _, kid := range []string{"hs", "ec-as-eddsa", "ec-enc", "rsa", "bad-point"} {
		k := hs
		if kid != "hs" {
			k = ec
		}
		k.ID = kid
		tok, err := mustKeySet(t, k).Sign(ccClaims(time.Now()))
		require.NoError(t, err)
		_, err = v.Verify(context.Background(), tok)
		assert.ErrorContains(t, err, "unknown key", kid)
	}
	assert.EqualValues(t, 1, srv.fetches.Load())
}

// A JWKS URL that never answered is a 503: the token may be good.
func TestRemoteKeysUnavailable(t *testing.T) {
	srv := newJWKSServer(t)
	srv.status = http.StatusBadGateway
	v := &bearer.Verifier{Source: &bearer.RemoteKeys{URL: srv.URL, Client: srv.Client()}, Issuer: testIssuer}
	tok, err := mustKeySet(t, genKey(t, bearer.ES256, "ec")).Sign(ccClaims(time.Now()))
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), tok)
	e, ok := apierrors.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.NotContains(t, e.Description, tok)
	_, err = v.Verify(context.Background(), tok)
	assert.Error(t, err)
	assert.EqualValues(t, 1, srv.fetches.Load(), "not fetched again within a minute")
}
