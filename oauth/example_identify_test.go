package oauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/waybillhq/waybill/oauth"
)

// oneClient authenticates the client "app-1" with the secret "s"; a
// Server is the ClientAuthenticator of a real host.
type oneClient struct{}

func (oneClient) AuthenticateClient(_ context.Context, id, secret, _ string) (*oauth.App, error) {
	if id == "app-1" && secret == "s" {
		return &oauth.App{ClientID: id}, nil
	}
	return nil, oauth.ErrNotFound
}

// The token endpoint's rate limit keyed by client: IdentifyClient reads the
// request once and authenticates its client, KeyByClient (a
// ratelimit.KeyFunc) keys by it, and a request whose client does not
// authenticate by its remote address instead.
func ExampleKeyByClient() {
	byAddr := func(r *http.Request) (string, bool) { return "addr:" + r.RemoteAddr, true }
	key := oauth.KeyByClient(byAddr)
	// In a server: identify(ratelimit.Middleware(limiter, limit, key)(srv.Handler()))
	identify := oauth.IdentifyClient(oneClient{})
	h := identify(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := key(r)
		fmt.Println(k)
	}))
	for _, body := range []string{
		"grant_type=client_credentials&client_id=app-1&client_secret=s",
		"grant_type=client_credentials&client_id=app-1&client_secret=guess",
	} {
		req := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.7"
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	// Output:
	// client:app-1
	// addr:192.0.2.7
}
