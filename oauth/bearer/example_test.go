package bearer_test

import (
	"context"
	"fmt"
	"log"
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
