package idempotency

import (
	"context"
	"net/http"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Keyed is the Idempotency-Key of a write that Middleware let through to
// its handler, and the fingerprint of what the write asks: what the
// handler stores its answer under (Store.Remember) and what a replay is
// compared with.
type Keyed struct {
	Key, Fingerprint string
}

type keyedKey struct{}

// FromContext returns the Keyed of a request that Middleware let through
// with an Idempotency-Key; false for a request that sent none.
func FromContext(ctx context.Context) (*Keyed, bool) {
	k, ok := ctx.Value(keyedKey{}).(*Keyed)
	return k, ok
}

// Options configure Middleware. Limit, Fingerprint, Lookup and Error are
// required.
type Options struct {
	// Limit is the largest body, in bytes, that the handler takes. A
	// larger body is handed to the handler as sent and without its key:
	// the handler refuses it (413), and nothing is looked up.
	Limit int
	// Fingerprint returns what r, whose body is body, asks: the method,
	// the route's resource, tenant and record as well as the body (see
	// package Fingerprint).
	Fingerprint func(r *http.Request, body []byte) string
	// Lookup returns the stored answer of key for the owner of r (see
	// Store.Lookup), nil when it has none.
	Lookup func(r *http.Request, key string) (*Answer, error)
	// Replay answers r, which sent k, with stored, the answer its key has.
	// Nil means the package's Replay, whose error is written with Error.
	Replay func(w http.ResponseWriter, r *http.Request, k *Keyed, stored *Answer)
	// Error writes the answer of err.
	Error func(w http.ResponseWriter, r *http.Request, err error)
}

// Middleware reads the Idempotency-Key of a write (a malformed one is 400
// invalid_request) and the body it keys, which the handler then reads
// unchanged. A request without a key, or with a body over Limit, goes to
// the handler as it came; a key that has a stored answer is answered
// here, by Replay, without the handler; any other goes to the handler with
// its Keyed in the context (FromContext). Mount it after the middleware
// that counts requests (rate limits): a replay is a request too.
func Middleware(o Options) func(http.Handler) http.Handler {
	replay := o.Replay
	if replay == nil {
		replay = func(w http.ResponseWriter, r *http.Request, k *Keyed, stored *Answer) {
			if err := Replay(w, k.Fingerprint, stored); err != nil {
				o.Error(w, r, err)
			}
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, ok, err := Key(r)
			if err != nil {
				o.Error(w, r, err)
				return
			}
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			body, err := ReadBody(r, o.Limit)
			if err != nil {
				o.Error(w, r, err)
				return
			}
			if len(body) > o.Limit {
				next.ServeHTTP(w, r) // too large: the handler refuses it with 413
				return
			}
			k := &Keyed{Key: key, Fingerprint: o.Fingerprint(r, body)}
			stored, err := o.Lookup(r, key)
			if err != nil {
				o.Error(w, r, apierrors.Internal(err))
				return
			}
			if stored != nil {
				replay(w, r, k, stored)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyedKey{}, k)))
		})
	}
}
