package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of RemoteKeys.
const (
	// DefaultMinRefresh is the least time between two fetches of a JWKS:
	// a token of an unknown kid fetches the set again at most this often,
	// so that a flood of made-up kids costs the token service one request
	// a minute.
	DefaultMinRefresh = time.Minute
	// DefaultMaxAge is how long a fetched JWKS is used when its answer
	// gives no Cache-Control max-age.
	DefaultMaxAge = 5 * time.Minute
	// maxJWKSBytes bounds the JWKS read.
	maxJWKSBytes = 1 << 20
	// defaultFetchTimeout bounds a fetch with the zero Client.
	defaultFetchTimeout = 10 * time.Second
)

// RemoteKeys is a KeySource over the JSON Web Key Set that a token service
// publishes (its jwks_uri, /.well-known/jwks.json on a Waybill server),
// for a service that verifies tokens without any secret:
//
//	v := &bearer.Verifier{Source: &bearer.RemoteKeys{URL: "https://tms.example.com/.well-known/jwks.json"}, Issuer: "https://tms.example.com"}
//
// The set is fetched at the first lookup and kept; it is fetched again
// when a token names a kid it lacks (the token service rotated its key),
// and when it is older than its max-age, but never more often than once
// per MinRefresh. A fetch that fails keeps the set fetched before, so a
// token service that is down for a while does not stop verification.
//
// Only ES256 and EdDSA keys are taken from the set: a symmetric key (kty
// oct) or a key of any other algorithm is skipped, and so can never verify
// a token; a Verifier then accepts a token only with exactly the
// algorithm of its kid's key.
//
// A RemoteKeys is a plain struct: set URL (and any other field) before
// its first use and leave them alone; it is safe for concurrent use. The
// zero Client is an http.Client with a 10-second timeout.
type RemoteKeys struct {
	// URL is the JWKS URL. Required.
	URL string
	// Client fetches the set; nil means a client with a 10-second timeout.
	Client *http.Client
	// MinRefresh is the least time between two fetches; 0 means
	// DefaultMinRefresh.
	MinRefresh time.Duration
	// MaxAge is how long a fetched set is used when its answer has no
	// Cache-Control max-age; 0 means DefaultMaxAge. A max-age shorter than
	// MinRefresh counts as MinRefresh.
	MaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// cached is the set fetched last, read without a lock.
	cached atomic.Pointer[remoteSet]
	// mu serializes fetches; lastFetch is when the last one started.
	mu        sync.Mutex
	lastFetch time.Time
}

// remoteSet is one fetched key set.
type remoteSet struct {
	keys    map[string]VerificationKey
	expires time.Time
}

func (r *RemoteKeys) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// VerificationKey returns the key of kid, fetching the set as described
// at RemoteKeys. It fails with ErrUnknownKey when the set has no such kid,
// and with the fetch's error when no set could be fetched at all.
func (r *RemoteKeys) VerificationKey(ctx context.Context, kid string) (VerificationKey, error) {
	now := r.now()
	set := r.cached.Load()
	if set != nil && now.Before(set.expires) {
		if vk, ok := set.keys[kid]; ok {
			return vk, nil
		}
	}
	set, err := r.refresh(ctx, set, now)
	if set == nil {
		return VerificationKey{}, err
	}
	if vk, ok := set.keys[kid]; ok {
		return vk, nil
	}
	return VerificationKey{}, ErrUnknownKey
}

// refresh fetches the set unless another caller fetched it since seen was
// loaded, or the last fetch is less than MinRefresh old; it returns the
// set to use, and the fetch's error when there is none.
func (r *RemoteKeys) refresh(ctx context.Context, seen *remoteSet, now time.Time) (*remoteSet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set := r.cached.Load(); set != seen {
		return set, nil // fetched by another caller meanwhile
	}
	minRefresh := r.MinRefresh
	if minRefresh <= 0 {
		minRefresh = DefaultMinRefresh
	}
	if !r.lastFetch.IsZero() && now.Sub(r.lastFetch) < minRefresh {
		if seen == nil {
			return nil, errors.New("bearer: the JWKS could not be fetched; trying again within a minute")
		}
		return seen, nil
	}
	r.lastFetch = now
	set, err := r.fetch(ctx, now, minRefresh)
	if err != nil {
		if seen != nil {
			return seen, nil // keep what was fetched before
		}
		return nil, err
	}
	r.cached.Store(set)
	return set, nil
}

// fetch reads the set from URL.
func (r *RemoteKeys) fetch(ctx context.Context, now time.Time, minRefresh time.Duration) (*remoteSet, error) {
	if r.URL == "" {
		return nil, errors.New("bearer: RemoteKeys needs a URL")
	}
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: defaultFetchTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("bearer: fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("bearer: fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bearer: fetch JWKS: %s answered %s", r.URL, resp.Status)
	}
	var set JWKSet
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("bearer: fetch JWKS: %w", err)
	}
	keys := make(map[string]VerificationKey, len(set.Keys))
	for _, j := range set.Keys {
		if j.Kid == "" {
			continue
		}
		if vk, err := j.verificationKey(); err == nil {
			keys[j.Kid] = vk
		}
	}
	maxAge := r.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if age, ok := cacheMaxAge(resp.Header.Get("Cache-Control")); ok {
		maxAge = age
	}
	return &remoteSet{keys: keys, expires: now.Add(max(maxAge, minRefresh))}, nil
}

// cacheMaxAge returns the max-age of a Cache-Control header.
func cacheMaxAge(header string) (time.Duration, bool) {
	for d := range strings.SplitSeq(header, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(d), "=")
		if !ok || !strings.EqualFold(name, "max-age") {
			continue
		}
		secs, err := strconv.Atoi(strings.Trim(value, `"`))
		if err != nil || secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	return 0, false
}
