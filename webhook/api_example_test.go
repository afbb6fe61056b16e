package webhook_test

import (
	"context"
	"log"
	"net/http"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
)

// A host serves the endpoints API beside its resources, on the same
// database, tokens and branches, and describes it in the same OpenAPI
// document.
func ExampleAPI() {
	var (
		registry  *resource.Registry // the resources whose events endpoints get, with their database, Verifier and Branches
		secretKey = "..."            // 32 random bytes in base64: openssl rand -base64 32
		tokens    *oauth.Server      // the token service, whose ScopesSupported lists webhook.ScopeRead and webhook.ScopeWrite
	)
	key, err := oauth.ParseSecretsKey(secretKey)
	if err != nil {
		log.Fatal(err)
	}
	sealer, err := oauth.NewSealer(key)
	if err != nil {
		log.Fatal(err)
	}
	api := &webhook.API{
		Registry: registry, // its database, tokens, branches, resources and middleware
		Sealer:   sealer,   // the signing secrets are encrypted at rest
	}
	if err := api.Migrate(context.Background()); err != nil { // endpoints, deliveries, events
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	registry.Mount(mux)
	api.Mount(mux) // /v1/{organizationId}/webhook_endpoints and /api/v1/...
	mux.Handle("GET /openapi.json", registry.OpenAPIHandler(resource.OpenAPIInfo{
		Sections: []*openapi.Document{tokens.OpenAPI(), api.OpenAPI()},
	}))
	log.Fatal(http.ListenAndServe(":8080", mux))
}
