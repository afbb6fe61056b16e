package oauth_test

import (
	"context"
	"fmt"
	"io"
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

// A sign-in is keyed by the account it tries, whatever address it comes
// from; the body stays for the endpoint to read.
func ExampleKeyBySignInEmail() {
	r := httptest.NewRequest(http.MethodPost, oauth.PathUserToken+"?grant_type=password",
		strings.NewReader("email=Alice%40example.com&password=secret"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	key, ok := oauth.KeyBySignInEmail(r)
	fmt.Println(ok, key[:len("email:")+8]+"…")
	body, _ := io.ReadAll(r.Body)
	fmt.Println(string(body))
	// Output:
	// true email:ff8d9819…
	// email=Alice%40example.com&password=secret
}
