package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"slices"
	"strings"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
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

// OpenAPI describes the endpoints API, each operation with the scope it
// needs, for the host to merge into its document; a Registry without a
// database is enough to build it.
func ExampleAPI_OpenAPI() {
	registry := &resource.Registry{}
	err := registry.Register(&resource.Resource{Name: "quotations", ScopeType: tenancy.Branch,
		Fields: []resource.Field{{Name: "status", Type: query.String, Create: true}}})
	if err != nil {
		log.Fatal(err)
	}
	api := &webhook.API{Registry: registry}
	raw, err := openapi.Marshal(api.OpenAPI())
	if err != nil {
		log.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		log.Fatal(err)
	}
	var ops []string
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Security []map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				log.Fatal(err)
			}
			ops = append(ops, fmt.Sprintf("%-6s %s %v", strings.ToUpper(method), path, op.Security[0]["oauth2"]))
		}
	}
	slices.Sort(ops)
	for _, op := range ops {
		fmt.Println(op)
	}
	// Output:
	// DELETE /v1/{organizationId}/webhook_endpoints/{id} [svc:webhooks:write]
	// GET    /v1/{organizationId}/webhook_endpoints [svc:webhooks:read]
	// GET    /v1/{organizationId}/webhook_endpoints/{id} [svc:webhooks:read]
	// GET    /v1/{organizationId}/webhook_endpoints/{id}/deliveries [svc:webhooks:read]
	// PATCH  /v1/{organizationId}/webhook_endpoints/{id} [svc:webhooks:write]
	// POST   /v1/{organizationId}/webhook_endpoints [svc:webhooks:write]
	// POST   /v1/{organizationId}/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver [svc:webhooks:write]
	// POST   /v1/{organizationId}/webhook_endpoints/{id}/recover [svc:webhooks:write]
	// POST   /v1/{organizationId}/webhook_endpoints/{id}/rotate_secret [svc:webhooks:write]
	// POST   /v1/{organizationId}/webhook_endpoints/{id}/test [svc:webhooks:write]
}
