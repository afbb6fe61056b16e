package oauth_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/waybillhq/waybill/oauth"
)

// registrationStore stands in for a Store that keeps registrations
// (package sqlstore, say) in the example: it keeps the apps in a map.
type registrationStore struct {
	oauth.Store
	oauth.RegistrationStore
	apps map[string]*oauth.App
}

func (s *registrationStore) CreateApp(_ context.Context, app *oauth.App) error {
	s.apps[app.ClientID] = app
	return nil
}

// A client registers itself (RFC 7591): an agent that cannot keep a secret
// asks for a public client, which gets the authorization-code grant with
// PKCE and refresh, and a registration access token that manages its
// registration (RFC 7592). Over HTTP the same is POST Paths.Register, open
// to anyone or to the holders of an initial access token
// (CreateInitialAccessToken), as Server.Registration says.
func ExampleServer_RegisterClient() {
	store := &registrationStore{apps: map[string]*oauth.App{}}
	srv := &oauth.Server{
		Issuer:          "https://tms.example.com",
		Store:           store,
		Registration:    oauth.RegistrationOpen,
		ScopesSupported: []string{"svc:orders:read", "svc:orders:write"},
	}
	info, err := srv.RegisterClient(context.Background(), oauth.ClientMetadata{
		ClientName:              "Route Agent",
		RedirectURIs:            []string{"http://127.0.0.1:7777/callback"},
		TokenEndpointAuthMethod: "none",
		Scope:                   "svc:orders:read",
	})
	if err != nil {
		log.Fatal(err)
	}
	app := store.apps[info.ClientID]
	fmt.Println(info.TokenEndpointAuthMethod, info.GrantTypes, info.Scope)
	fmt.Println(info.ClientSecret == "", info.RegistrationAccessToken != "", app.Public)
	fmt.Println(strings.TrimSuffix(info.RegistrationClientURI, info.ClientID))

	_, err = srv.RegisterClient(context.Background(), oauth.ClientMetadata{
		ClientName: "Bad Agent", RedirectURIs: []string{"javascript:alert(1)"},
	})
	fmt.Println(err)
	// Output:
	// none [authorization_code refresh_token] svc:orders:read
	// true true true
	// https://tms.example.com/auth/v1/oauth/register/
	// invalid_redirect_uri: redirect URI "javascript:alert(1)" has the scheme "javascript"; a redirect URI must use https, http on a loopback host, or a private-use scheme in reverse-domain form such as com.example.app
}
