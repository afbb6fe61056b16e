package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
	"github.com/waybillhq/waybill/webhook"
)

// testResources are the resources whose events the endpoints subscribe
// to; the API needs their names and scopes only.
func testResources() []*resource.Resource {
	return []*resource.Resource{
		{Name: "accounts", ScopeType: tenancy.Branch, Fields: []resource.Field{{Name: "company_name", Type: query.String, Create: true}}},
		{Name: "quotations", ScopeType: tenancy.Branch, Fields: []resource.Field{{Name: "status", Type: query.String, Create: true}}},
		{Name: "vehicles", ScopeType: tenancy.Organization, Fields: []resource.Field{{Name: "plate", Type: query.String, Create: true}}},
	}
}

// refs returns every "$ref" in a decoded document.
func refs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = append(out, refs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, refs(x)...)
		}
	}
	return out
}

// resolves reports whether the local reference ref names a part of doc.
func resolves(doc map[string]any, ref string) bool {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var v any = doc
	for k := range strings.SplitSeq(path, "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc
}

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	reg := &resource.Registry{}
	require.NoError(t, reg.Register(testResources()...))
	api := &webhook.API{Registry: reg}
	raw, err := openapi.Marshal(api.OpenAPI())
	require.NoError(t, err)
	doc := decode(t, raw)
	for _, ref := range refs(doc) {
		assert.True(t, resolves(doc, ref), "the section resolves %s", ref)
	}
	paths := doc["paths"].(map[string]any)
	ops := map[string]string{ // path and method: the scope
		"/v1/{organizationId}/webhook_endpoints get":                                          webhook.ScopeRead,
		"/v1/{organizationId}/webhook_endpoints post":                                         webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id} get":                                     webhook.ScopeRead,
		"/v1/{organizationId}/webhook_endpoints/{id} patch":                                   webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id} delete":                                  webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id}/deliveries get":                          webhook.ScopeRead,
		"/v1/{organizationId}/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver post": webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id}/rotate_secret post":                      webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id}/test post":                               webhook.ScopeWrite,
		"/v1/{organizationId}/webhook_endpoints/{id}/recover post":                            webhook.ScopeWrite,
	}
	n := 0
	for p, item := range paths {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			n++
			scope, ok := ops[p+" "+method]
			require.True(t, ok, "%s %s is not an operation of the API", method, p)
			o := op.(map[string]any)
			assert.Equal(t, []any{map[string]any{"oauth2": []any{scope}}}, o["security"], "%s %s", method, p)
			responses := o["responses"].(map[string]any)
			for _, code := range []string{"401", "403", "404", "429", "500"} {
				assert.Contains(t, responses, code, "%s %s", method, p)
			}
		}
	}
	assert.Equal(t, len(ops), n)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, s := range []string{"WebhookEndpoint", "WebhookEndpointCreated", "WebhookDelivery", "WebhookAttempt"} {
		assert.Contains(t, schemas, s)
	}
	created := schemas["WebhookEndpointCreated"].(map[string]any)
	assert.Contains(t, created["properties"], "secret")
	assert.Contains(t, created["required"], "secret")
	assert.NotContains(t, schemas["WebhookEndpoint"].(map[string]any)["properties"], "secret", "only the answer of POST has the secret")

	// The webhook a receiver is called with: the event, signed.
	hook := doc["webhooks"].(map[string]any)["event"].(map[string]any)["post"].(map[string]any)
	var headers []string
	for _, p := range hook["parameters"].([]any) {
		headers = append(headers, p.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"webhook-id", "webhook-timestamp", "webhook-signature"}, headers)
	assert.Equal(t, []any{map[string]any{"$ref": "#/components/schemas/CloudEvent"}, map[string]any{"$ref": "#/components/schemas/WebhookTestEvent"}},
		hook["requestBody"].(map[string]any)["content"].(map[string]any)["application/cloudevents+json"].(map[string]any)["schema"].(map[string]any)["oneOf"])
	assert.Contains(t, schemas, "CloudEvent")
	assert.Contains(t, schemas["CloudEvent"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"], webhook.EndpointDisabledType)
	assert.Equal(t, webhook.TestEventType, schemas["WebhookTestEvent"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"])

	// Safe writes: the writes take Idempotency-Key, and the endpoint's
	// answers carry its ETag, which If-None-Match and If-Match use.
	params := func(op map[string]any) []string {
		var names []string
		for _, p := range op["parameters"].([]any) {
			names = append(names, p.(map[string]any)["name"].(string))
		}
		return names
	}
	op := func(path, method string) map[string]any {
		return paths["/v1/{organizationId}/webhook_endpoints"+path].(map[string]any)[method].(map[string]any)
	}
	for _, w := range []struct{ path, method, success string }{
		{"", "post", "201"}, {"/{id}", "patch", "200"}, {"/{id}/deliveries/{delivery_id}/redeliver", "post", "202"},
		{"/{id}/rotate_secret", "post", "200"}, {"/{id}/test", "post", "202"}, {"/{id}/recover", "post", "202"},
	} {
		o := op(w.path, w.method)
		assert.Contains(t, params(o), "Idempotency-Key", "%s %s", w.method, w.path)
		responses := o["responses"].(map[string]any)
		assert.Contains(t, responses[w.success].(map[string]any)["headers"], "Idempotent-Replayed", "%s %s", w.method, w.path)
		assert.Contains(t, responses, "409", "%s %s", w.method, w.path)
		assert.Equal(t, map[string]any{"$ref": "#/components/responses/IdempotencyKeyReused"}, responses["422"], "%s %s", w.method, w.path)
	}
	assert.Contains(t, op("", "post")["responses"].(map[string]any)["409"].(map[string]any)["description"], "idempotency_in_progress",
		"a 409 of its own says both")
	get := op("/{id}", "get")
	assert.Equal(t, []string{"If-None-Match"}, params(get))
	assert.Contains(t, get["responses"], "304")
	assert.Contains(t, get["responses"].(map[string]any)["200"].(map[string]any)["headers"], "ETag")
	for _, method := range []string{"patch", "delete"} {
		o := op("/{id}", method)
		assert.Contains(t, params(o), "If-Match", method)
		assert.Equal(t, "#/components/schemas/WebhookEndpoint",
			o["responses"].(map[string]any)["412"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)["data"].(map[string]any)["$ref"], method)
	}

	t.Run("other prefixes", func(t *testing.T) {
		d := (&webhook.API{Registry: &resource.Registry{Prefixes: []string{"/api/v2"}}}).OpenAPI()
		assert.Contains(t, d.Paths, "/api/v2/{organizationId}/webhook_endpoints")
		assert.Empty(t, (&webhook.API{Registry: &resource.Registry{Prefixes: []string{}}}).OpenAPI().Paths)
	})
}

// The section merges into the resource registry's document beside the
// token service's, every component it shares with them unchanged, and the
// scopes come from the token service's ScopesSupported.
func TestOpenAPIMerges(t *testing.T) {
	t.Parallel()
	reg := &resource.Registry{}
	require.NoError(t, reg.Register(testResources()...))
	api := &webhook.API{Registry: reg}
	srv := &oauth.Server{Issuer: "https://auth.test", ScopesSupported: []string{webhook.ScopeRead, webhook.ScopeWrite, "svc:quotations:read"}}
	for _, sections := range [][]*openapi.Document{
		{api.OpenAPI()},
		{srv.OpenAPI(), api.OpenAPI()},
		{api.OpenAPI(), srv.OpenAPI()},
	} {
		raw, err := reg.OpenAPI(resource.OpenAPIInfo{ServerURL: "https://tms.test", Sections: sections})
		require.NoError(t, err)
		doc := decode(t, raw)
		for _, ref := range refs(doc) {
			assert.True(t, resolves(doc, ref), "the document resolves %s", ref)
		}
		assert.Contains(t, doc["paths"], "/v1/{organizationId}/webhook_endpoints")
		assert.Contains(t, doc["paths"], "/v1/{scopeId}/quotations")
		if len(sections) > 1 {
			scopes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)["oauth2"].(map[string]any)["flows"].(map[string]any)["clientCredentials"].(map[string]any)["scopes"].(map[string]any)
			assert.Contains(t, scopes, webhook.ScopeRead)
			assert.Contains(t, scopes, webhook.ScopeWrite)
			assert.Equal(t, "https://auth.test/auth/v1/oauth/token", doc["components"].(map[string]any)["securitySchemes"].(map[string]any)["oauth2"].(map[string]any)["flows"].(map[string]any)["clientCredentials"].(map[string]any)["tokenUrl"])
		}
	}
	// Merged with openapi.Document.Merge directly as well.
	d := srv.OpenAPI()
	require.NoError(t, d.Merge(api.OpenAPI()))
}
