package oauth_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/oauth2/clientcredentials"
	_ "modernc.org/sqlite"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// users is the host application's directory; this example has no users,
// only an organization with one branch.
type users struct{}

func (users) Authenticate(context.Context, string, string) (oauth.User, error) {
	return oauth.User{}, oauth.ErrBadCredentials
}
func (users) Memberships(context.Context, string) ([]oauth.Membership, error) { return nil, nil }
func (users) Branches(context.Context, string) ([]string, error) {
	return []string{"5c0b4f2e-0000-4000-8000-0000000000b1"}, nil
}

// A token service on SQLite: register an app, then let the standard Go
// client get a client-credentials token and a resource server verify it.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "oauth-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "oauth.db")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	store := sqlstore.New(db, query.SQLite)
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	key, err := store.SigningKey(ctx) // generated once, kept in the database
	if err != nil {
		log.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		log.Fatal(err)
	}

	srv := &oauth.Server{Keys: keys, Store: store, Directory: users{}}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	srv.Issuer = ts.URL

	app, secret, err := srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: "5c0b4f2e-0000-4000-8000-000000000001",
		Name:           "Nightly Sync",
		Scopes:         []string{"svc:orders:read", "svc:accounts:read"},
		BranchIDs:      []string{"5c0b4f2e-0000-4000-8000-0000000000b1"},
	})
	if err != nil {
		log.Fatal(err)
	}

	client := clientcredentials.Config{
		ClientID: app.ClientID, ClientSecret: secret,
		TokenURL: ts.URL + oauth.PathToken, Scopes: []string{"svc:orders:read"},
	}
	tok, err := client.Token(ctx)
	if err != nil {
		log.Fatal(err)
	}

	claims, err := (&bearer.Verifier{Keys: keys, Issuer: ts.URL}).Verify(ctx, tok.AccessToken)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.AppName, strings.Join(claims.Scopes, " "), claims.BranchIDs)
	// Output: Nightly Sync svc:orders:read [5c0b4f2e-0000-4000-8000-0000000000b1]
}

// Scopes are described in words on the consent page.
func ExampleDescribeScope() {
	fmt.Println(oauth.DescribeScope("svc:orders:read"))
	fmt.Println(oauth.DescribeScope("svc:master_data:write"))
	// Output:
	// Read orders
	// Create, change and delete master data
}

// PKCE: the client keeps the verifier and sends its S256 challenge.
func ExampleS256Challenge() {
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 appendix B
	fmt.Println(oauth.S256Challenge(verifier))
	// Output:
	// E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM
}

// A host serves the token service under paths of its own, answers the
// client-credentials grant at one more path, and describes both.
func ExampleServer_OpenAPI() {
	srv := &oauth.Server{
		Issuer: "https://tms.example.com",
		Paths: oauth.Paths{
			Authorize: "/oauth2/authorize", Login: "/oauth2/login", Consent: "/oauth2/consent",
			Token: "/oauth2/token", Revoke: "/oauth2/revoke", Introspect: "/oauth2/introspect",
		},
		AccessTokenTTL: 15 * time.Minute,
	}
	mux := http.NewServeMux()
	srv.Mount(mux)
	mux.Handle("POST /v1/token", srv.ClientCredentialsHandler())

	doc := srv.OpenAPI()
	if err := doc.AddPath("/v1/token", srv.OpenAPIClientCredentials("requestV1Token", "Request a client-credentials token")); err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Components.SecuritySchemes["oauth2"].Flows.ClientCredentials.TokenURL)
	fmt.Println(doc.Paths["/oauth2/token"].Post.OperationID, doc.Paths["/v1/token"].Post.OperationID)
	fmt.Println(doc.Components.Schemas["TokenResponse"].Properties[2].Name, doc.Components.Schemas["TokenResponse"].Properties[2].Schema.Examples)
	// Output:
	// https://tms.example.com/oauth2/token
	// requestToken requestV1Token
	// expires_in [900]
}
