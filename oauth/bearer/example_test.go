package bearer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// A resource server checks the tokens of the token service with the key
// they share; nothing else of the token service is needed.
func ExampleVerifier() {
	keys, err := bearer.NewKeySet(bearer.SecretKey([]byte(strings.Repeat("s", 32))))
	if err != nil {
		log.Fatal(err)
	}
	v := &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com"}

	// A client-credentials token, as the token service signs it.
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "https://tms.example.com", Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1",
		OrganizationID: "org-1", ClientID: "client-1", Scopes: []string{"svc:orders:read"},
		BranchIDs: []string{"branch-1"}, AppName: "Nightly Sync",
	})
	if err != nil {
		log.Fatal(err)
	}

	claims, err := v.Verify(context.Background(), token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.Subject, claims.Grant, claims.HasScope("svc:orders:read"), claims.BranchIDs)

	_, err = v.Verify(context.Background(), token[:len(token)-2])
	fmt.Println(err)
	// Output:
	// app-1 client_credentials true [branch-1]
	// invalid_token: the token is malformed
}

// A service of its own verifies the tokens of a token service that signs
// with ES256 or EdDSA against its published JSON Web Key Set, holding no
// secret: RemoteKeys fetches the set, keeps it, and fetches it again when
// a token names a key it has not seen (at most once a minute).
func ExampleRemoteKeys() {
	// The token service: its keys, and its /.well-known/jwks.json.
	key, err := bearer.GenerateKeyFor(bearer.EdDSA)
	if err != nil {
		log.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		log.Fatal(err)
	}
	tms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(keys.JWKS())
	}))
	defer tms.Close()
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "https://tms.example.com", Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1",
		OrganizationID: "org-1", ClientID: "client-1", Scopes: []string{"svc:orders:read"}, BranchIDs: []string{},
	})
	if err != nil {
		log.Fatal(err)
	}

	// The resource server.
	v := &bearer.Verifier{
		Source: &bearer.RemoteKeys{URL: tms.URL + "/.well-known/jwks.json"},
		Issuer: "https://tms.example.com",
	}
	claims, err := v.Verify(context.Background(), token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.ClientID, claims.Grant, claims.HasScope("svc:orders:read"))
	// Output:
	// client-1 client_credentials true
}
