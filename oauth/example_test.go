package oauth_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// A Server serves its RFC 8414 metadata, which tells clients where its
// endpoints are and what it supports, and the JSON Web Key Set that
// resource servers verify its ES256 tokens against. Issuing tokens also
// takes a Store (package sqlstore keeps one in PostgreSQL or SQLite) and a
// Directory of the host's users; see the package documentation.
func Example() {
	key, err := bearer.GenerateKeyFor(bearer.ES256)
	if err != nil {
		log.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		log.Fatal(err)
	}
	srv := &oauth.Server{Issuer: "https://tms.example.com", Keys: keys, Paths: oauth.Paths{Token: "/oauth2/token"}}
	h := srv.Handler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.PathMetadata, nil))
	var metadata struct {
		Issuer        string   `json:"issuer"`
		TokenEndpoint string   `json:"token_endpoint"`
		JWKSURI       string   `json:"jwks_uri"`
		GrantTypes    []string `json:"grant_types_supported"`
		PKCEMethods   []string `json:"code_challenge_methods_supported"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&metadata); err != nil {
		log.Fatal(err)
	}
	fmt.Println(metadata.Issuer)
	fmt.Println(metadata.TokenEndpoint)
	fmt.Println(metadata.JWKSURI)
	fmt.Println(metadata.GrantTypes, metadata.PKCEMethods)

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.PathJWKS, nil))
	var jwks struct {
		Keys []struct {
			KeyID     string `json:"kid"`
			Algorithm string `json:"alg"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&jwks); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(jwks.Keys), jwks.Keys[0].KeyID == key.ID, jwks.Keys[0].Algorithm)
	// Output:
	// https://tms.example.com
	// https://tms.example.com/oauth2/token
	// https://tms.example.com/.well-known/jwks.json
	// [authorization_code refresh_token client_credentials] [S256]
	// 1 true ES256
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

// A host turns OpenID Connect on by signing with a public key (ES256 or
// EdDSA): relying parties then discover the provider at the issuer's
// /.well-known/openid-configuration, every app may ask for openid,
// profile and email, and a code exchange with openid answers an id token
// that verifies against the JSON Web Key Set. A Directory that is also a
// UserLookup gives the id token and UserInfo the user's email and name.
// With an HS256 key the discovery document is 404 and openid is refused.
func ExampleServer_OpenID() {
	key, err := bearer.GenerateKeyFor(bearer.EdDSA)
	if err != nil {
		log.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		log.Fatal(err)
	}
	srv := &oauth.Server{Issuer: "https://tms.example.com", Keys: keys}
	fmt.Println(srv.OpenID())

	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.PathOpenIDConfiguration, nil))
	var discovery struct {
		UserInfo string   `json:"userinfo_endpoint"`
		Algs     []string `json:"id_token_signing_alg_values_supported"`
		Scopes   []string `json:"scopes_supported"`
	}
	if err := json.NewDecoder(rec.Body).Decode(&discovery); err != nil {
		log.Fatal(err)
	}
	fmt.Println(discovery.UserInfo)
	fmt.Println(discovery.Algs, discovery.Scopes)

	secret, err := bearer.NewKeySet(bearer.SecretKey([]byte("a shared secret of 32 bytes or more")))
	if err != nil {
		log.Fatal(err)
	}
	srv.Keys = secret
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.PathOpenIDConfiguration, nil))
	fmt.Println(srv.OpenID(), rec.Code)
	// Output:
	// true
	// https://tms.example.com/auth/v1/oauth/userinfo
	// [EdDSA] [openid profile email]
	// false 404
}
