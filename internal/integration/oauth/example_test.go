package oauth_test

import (
	"context"
	"database/sql"
	"encoding/json"
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

// Dynamic Client Registration: the operator makes an initial access token,
// and an agent registers itself with it, as a public client (no secret)
// that may use the authorization-code grant with PKCE. Its registration
// access token reads the registration back (RFC 7592).
func Example_dynamicClientRegistration() {
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
	store := sqlstore.New(db, query.SQLite) // it implements oauth.RegistrationStore
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	srv := &oauth.Server{
		Store: store, Directory: users{},
		Registration:    oauth.RegistrationToken,
		ScopesSupported: []string{"svc:orders:read", "svc:orders:write"},
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	srv.Issuer = ts.URL
	initial, _, err := srv.CreateInitialAccessToken(ctx, 24*time.Hour) // "waybill admin registration-token create"
	if err != nil {
		log.Fatal(err)
	}

	send := func(method, url, token, body string) map[string]any {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.StatusCode)
		return out
	}
	client := send(http.MethodPost, ts.URL+oauth.PathRegister, initial, `{
		"client_name": "Route Agent",
		"redirect_uris": ["http://127.0.0.1:7777/callback"],
		"token_endpoint_auth_method": "none",
		"scope": "svc:orders:read"}`)
	_, hasSecret := client["client_secret"]
	fmt.Println(client["token_endpoint_auth_method"], client["grant_types"], hasSecret)

	read := send(http.MethodGet, client["registration_client_uri"].(string), client["registration_access_token"].(string), "")
	fmt.Println(read["client_name"], read["scope"])
	// Output:
	// 201
	// none [authorization_code refresh_token] false
	// 200
	// Route Agent svc:orders:read
}
