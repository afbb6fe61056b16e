package oauth_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/waybillhq/waybill/netguard"
	"github.com/waybillhq/waybill/oauth"
)

// A server that takes client metadata documents resolves a client_id that
// is an https URL by fetching the document there. Here the client's
// document is served by a TLS server on loopback, which the Guard allows
// only because AllowPrivate is set (a production server refuses it).
func ExampleClientMetadataDocuments() {
	var base string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		clientID := base + r.URL.Path
		if r.URL.Path == "/copied.json" {
			clientID = base + "/agent.json" // another client's document
		}
		fmt.Fprintf(w, `{"client_id": %q, "client_name": "Acme Agent",
			"redirect_uris": ["http://127.0.0.1:7777/callback"], "token_endpoint_auth_method": "none"}`, clientID)
	}))
	defer docs.Close()
	base = docs.URL
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())

	tokens := &oauth.Server{
		ClientMetadataDocuments: &oauth.ClientMetadataDocuments{Guard: netguard.Guard{AllowPrivate: true}, RootCAs: roots},
		// Issuer, Keys, Store, Directory, ... as for any server.
	}
	doc, err := tokens.ClientMetadataDocuments.Resolve(context.Background(), docs.URL+"/agent.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.ClientName, doc.RedirectURIs, doc.ExpiresAt.Sub(doc.FetchedAt))

	_, err = tokens.ClientMetadataDocuments.Resolve(context.Background(), docs.URL+"/copied.json")
	var docErr *oauth.ClientMetadataError
	if errors.As(err, &docErr) {
		fmt.Println(errors.Is(err, oauth.ErrClientMetadataDocument), docErr.Reason == fmt.Sprintf("the document's client_id %q is not the URL it is served at", docs.URL+"/agent.json"))
	}
	_, err = (&oauth.ClientMetadataDocuments{}).Resolve(context.Background(), docs.URL+"/agent.json")
	fmt.Println(errors.Is(err, netguard.ErrPrivateAddress))
	// Output:
	// Acme Agent [http://127.0.0.1:7777/callback] 1h0m0s
	// true true
	// true
}
