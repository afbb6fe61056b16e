package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
)

// ClientAuthenticator authenticates an OAuth client from the credentials
// of a request, as the token endpoint does; an *oauth.Server is one.
type ClientAuthenticator interface {
	AuthenticateClient(ctx context.Context, clientID, secret, scheme string) (*App, error)
}

// paramsKey is the context key of the parameters IdentifyClient read.
type paramsKey struct{}

// readParamsResult is what IdentifyClient's reading of a body gave.
type readParamsResult struct {
	form url.Values
	err  error
}

// IdentifyClient returns middleware for the endpoints that authenticate
// their client (the token endpoint, ClientCredentialsHandler's paths,
// revocation and introspection), to put in front of a rate limit keyed by
// client (KeyByClient). It reads the request's parameters once, as those
// endpoints read them (a form-urlencoded or JSON body of at most 64 KiB),
// takes the client's credentials (HTTP Basic, or client_id and
// client_secret in the body) and authenticates them with clients; the app
// of credentials that authenticate is handed on (AuthenticatedApp), so
// that the endpoint checks the secret against it without loading the app
// again. The parameters are handed on too: the endpoint does not read the
// body a second time, and a body that could not be read (too long, of
// another type, malformed) gets the error it would have got. A request
// whose client does not authenticate goes on unchanged, without an app.
func IdentifyClient(clients ClientAuthenticator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, read := r.Context().Value(paramsKey{}).(*readParamsResult); read {
				next.ServeHTTP(w, r)
				return
			}
			// The body is read first, also when the credentials are in the
			// header: net/http notices a client that went away only once
			// the body has been read to its end, and the authentication
			// that follows asks the store, which a request whose client
			// left should not wait for.
			form, err := readParams(r)
			ctx := context.WithValue(r.Context(), paramsKey{}, &readParamsResult{form: form, err: err})
			if err == nil {
				if c, err := readClient(r, form); err == nil && c.id != "" && c.secret != "" {
					if app, err := clients.AuthenticateClient(ctx, c.id, c.secret, c.scheme); err == nil {
						ctx = withAuthenticatedApp(ctx, app)
					}
				}
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// maxKeyLength bounds the length of a client id that ClientKey uses as it
// is: a longer one is keyed by its SHA-256, so that a key stays small.
const maxKeyLength = 128

// ClientKey returns the rate-limit key of a client id: "client:<id>", or
// for an id longer than 128 bytes "client:sha256:<hex>".
func ClientKey(clientID string) string {
	if len(clientID) > maxKeyLength {
		sum := sha256.Sum256([]byte(clientID))
		clientID = "sha256:" + hex.EncodeToString(sum[:])
	}
	return "client:" + clientID
}

// KeyByClient returns a rate-limit key function (a ratelimit.KeyFunc)
// that keys a request by the client IdentifyClient authenticated,
// ClientKey of its id, else by fallback (its remote address, say). A
// request that names a client without its right secret spends the quota
// of its fallback key, so that nobody can spend a client's quota but the
// client.
func KeyByClient(fallback func(*http.Request) (string, bool)) func(*http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		if app, ok := AuthenticatedApp(r.Context()); ok {
			return ClientKey(app.ClientID), true
		}
		return fallback(r)
	}
}
