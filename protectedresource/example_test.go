package protectedresource_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/waybillhq/waybill/protectedresource"
)

// An API publishes its metadata at the URL that its resource identifier
// gives, and names that URL in its challenges (errors.Writer's
// ResourceMetadata).
func ExampleHandler() {
	m := protectedresource.Metadata{
		Resource:               "https://api.example.com",
		AuthorizationServers:   []string{"https://api.example.com"},
		ScopesSupported:        []string{"svc:orders:read"},
		BearerMethodsSupported: []string{"header"},
	}
	u, err := protectedresource.MetadataURL(m.Resource)
	if err != nil {
		panic(err)
	}
	fmt.Println(u)

	mux := http.NewServeMux()
	mux.Handle(protectedresource.WellKnownPath, protectedresource.Handler(m))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
	body, _ := io.ReadAll(rec.Body)
	fmt.Print(string(body))
	// Output:
	// https://api.example.com/.well-known/oauth-protected-resource
	// {"resource":"https://api.example.com","authorization_servers":["https://api.example.com"],"scopes_supported":["svc:orders:read"],"bearer_methods_supported":["header"]}
}

func ExampleMetadataURL() {
	u, _ := protectedresource.MetadataURL("https://example.com/api/v1")
	fmt.Println(u)
	// Output: https://example.com/.well-known/oauth-protected-resource/api/v1
}
