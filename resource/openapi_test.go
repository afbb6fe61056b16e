package resource_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/apitest"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// openAPIRegistry is a registry of the test resources without a database:
// the document needs none.
func openAPIRegistry(t testing.TB) *resource.Registry {
	t.Helper()
	reg := &resource.Registry{}
	require.NoError(t, reg.Register(testResources()...))
	return reg
}

// openAPIDoc returns the document of the test resources, raw and decoded.
func openAPIDoc(t testing.TB, info resource.OpenAPIInfo) ([]byte, map[string]any) {
	t.Helper()
	raw, err := openAPIRegistry(t).OpenAPI(info)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	return raw, doc
}

// at walks a decoded JSON document along keys; it fails the test when a
// key is missing.
func oaAt(t testing.TB, v any, oaKeys ...string) any {
	t.Helper()
	for i, k := range oaKeys {
		m, ok := v.(map[string]any)
		require.Truef(t, ok, "%s is not an object", strings.Join(oaKeys[:i], "."))
		v, ok = m[k]
		require.Truef(t, ok, "no %s", strings.Join(oaKeys[:i+1], "."))
	}
	return v
}

func oaObj(t testing.TB, v any, oaKeys ...string) map[string]any {
	t.Helper()
	m, ok := oaAt(t, v, oaKeys...).(map[string]any)
	require.Truef(t, ok, "%s is not an object", strings.Join(oaKeys, "."))
	return m
}

// resolve follows a local $ref ("#/components/schemas/X").
func oaResolve(t testing.TB, doc map[string]any, ref string) map[string]any {
	t.Helper()
	path, ok := strings.CutPrefix(ref, "#/")
	require.Truef(t, ok, "$ref %q is not local", ref)
	var oaKeys []string
	for k := range strings.SplitSeq(path, "/") {
		oaKeys = append(oaKeys, strings.NewReplacer("~1", "/", "~0", "~").Replace(k))
	}
	return oaObj(t, doc, oaKeys...)
}

// oaRecord finds the record schema of resource name that its list
// operation answers, the partial one: 200 → list envelope → data.items.
func oaRecord(t testing.TB, doc map[string]any, name string) map[string]any {
	t.Helper()
	return oaResolve(t, doc, oaRecordRef(t, doc, "/v1/{scopeId}/"+name, "get", "200", "items"))
}

// oaFullRecord finds the whole record schema of resource name: the one
// of its partial schema's name without "Partial".
func oaFullRecord(t testing.TB, doc map[string]any, name string) map[string]any {
	t.Helper()
	ref, ok := strings.CutSuffix(oaRecordRef(t, doc, "/v1/{scopeId}/"+name, "get", "200", "items"), "Partial")
	require.True(t, ok, "the records of a list are partial")
	return oaResolve(t, doc, ref)
}

// oaRecordRef returns the $ref of the record in the data of the answer
// status of method path: of data itself, or with items, of its items.
func oaRecordRef(t testing.TB, doc map[string]any, path, method, status string, items ...string) string {
	t.Helper()
	op := oaObj(t, doc, "paths", path, method)
	schema := oaObj(t, op, "responses", status, "content", "application/json", "schema")
	if ref, ok := schema["$ref"].(string); ok {
		schema = oaResolve(t, doc, ref)
	}
	return oaAt(t, schema, append([]string{"properties", "data"}, append(items, "$ref")...)...).(string)
}

// oaResponse returns the response code of an operation's responses,
// following a $ref to a response component.
func oaResponse(t testing.TB, doc, responses map[string]any, code string) map[string]any {
	t.Helper()
	r := oaObj(t, responses, code)
	if ref, ok := r["$ref"].(string); ok {
		return oaResolve(t, doc, ref)
	}
	return r
}

var oaMethods = []string{"get", "post", "patch", "delete"}

func TestOpenAPIDocument(t *testing.T) {
	raw, doc := openAPIDoc(t, resource.OpenAPIInfo{})
	require.True(t, json.Valid(raw))
	assert.Equal(t, "3.1.0", doc["openapi"])
	assert.Equal(t, "Waybill API", oaAt(t, doc, "info", "title"))
	assert.Equal(t, "v1", oaAt(t, doc, "info", "version"))
	assert.Equal(t, "/", oaAt(t, doc, "servers").([]any)[0].(map[string]any)["url"])
	desc := oaAt(t, doc, "info", "description").(string)
	assert.Contains(t, desc, "`/api/v1` is an alias of every `/v1` path")
	for _, code := range []string{"invalid_request", "invalid_create", "create_failed", "invalid_update", "unauthorized",
		"invalid_token", "invalid_token_type", "insufficient_scope", "not_found", "conflict", "payload_too_large", "rate_limited", "server_error"} {
		assert.Contains(t, desc, "| `"+code+"` |", "the error table lists %s", code)
	}
	for path := range oaObj(t, doc, "paths") {
		assert.False(t, strings.HasPrefix(path, "/api/v1/"), "the alias %s is described in info.description, not as a path", path)
	}

	t.Run("custom info", func(t *testing.T) {
		_, doc := openAPIDoc(t, resource.OpenAPIInfo{
			Title: "TMS", Version: "2026.1", Description: "Our TMS.", ServerURL: "https://tms.test/",
		})
		assert.Equal(t, "TMS", oaAt(t, doc, "info", "title"))
		assert.Equal(t, "2026.1", oaAt(t, doc, "info", "version"))
		assert.True(t, strings.HasPrefix(oaAt(t, doc, "info", "description").(string), "Our TMS.\n\n## Paths"))
		flows := oaObj(t, doc, "components", "securitySchemes", "oauth2", "flows")
		assert.Equal(t, "https://tms.test/auth/v1/oauth/authorize", oaAt(t, flows, "authorizationCode", "authorizationUrl"))
		assert.Equal(t, "https://tms.test/auth/v1/oauth/token", oaAt(t, flows, "authorizationCode", "tokenUrl"))
		assert.Equal(t, "https://tms.test/auth/v1/oauth/token", oaAt(t, flows, "authorizationCode", "refreshUrl"))
		assert.Equal(t, "https://tms.test/auth/v1/oauth/token", oaAt(t, flows, "clientCredentials", "tokenUrl"))

		_, doc = openAPIDoc(t, resource.OpenAPIInfo{TokenURL: "https://auth.test/token", AuthorizationURL: "https://auth.test/authorize"})
		flows = oaObj(t, doc, "components", "securitySchemes", "oauth2", "flows")
		assert.Equal(t, "https://auth.test/authorize", oaAt(t, flows, "authorizationCode", "authorizationUrl"))
		assert.Equal(t, "https://auth.test/token", oaAt(t, flows, "clientCredentials", "tokenUrl"))
	})
}

// TestOpenAPIRoutes checks the document against the routes Mount
// registers: list and get of every resource, and create, update and delete
// exactly when it is writable.
func TestOpenAPIRoutes(t *testing.T) {
	_, doc := openAPIDoc(t, resource.OpenAPIInfo{})
	mux := http.NewServeMux()
	// Mount needs a Verifier, Branches and a cursor key; no request is served.
	reg := &resource.Registry{Verifier: &bearer.Verifier{}, Branches: apitest.Branches{}, CursorKey: make([]byte, query.MinCursorKeyLength)}
	require.NoError(t, reg.Register(testResources()...))
	reg.Mount(mux)
	paths := oaObj(t, doc, "paths")
	const scope, id = "0a000000-0000-4000-8000-0000000000a1", "0c000000-0000-4000-8000-00000000000c"

	documented := 0
	for _, r := range testResources() {
		for _, p := range []string{"/v1/{scopeId}/" + r.Name, "/v1/{scopeId}/" + r.Name + "/{id}"} {
			item := oaObj(t, paths, p)
			collection := !strings.HasSuffix(p, "/{id}")
			for _, m := range oaMethods {
				_, inDoc := item[m]
				// A collection takes POST (one or a batch) and PATCH (a
				// batch); a record PATCH and DELETE.
				want := m == "get" || !r.ReadOnly && (m == "patch" || collection == (m == "post"))
				assert.Equalf(t, want, inDoc, "%s %s documented", strings.ToUpper(m), p)
				for _, prefix := range []string{"/v1", "/api/v1"} {
					url := strings.NewReplacer("/v1/", prefix+"/", "{scopeId}", scope, "{id}", id).Replace(p)
					req := httptest.NewRequest(strings.ToUpper(m), url, nil)
					_, pattern := mux.Handler(req)
					mounted := pattern == strings.ToUpper(m)+" "+strings.Replace(p, "/v1/", prefix+"/", 1)
					assert.Equalf(t, inDoc, mounted, "%s %s: documented %v, mounted as %q", strings.ToUpper(m), url, inDoc, pattern)
				}
				if inDoc {
					documented++
				}
			}
		}
	}
	// Every resource path of the document is one of the above.
	n := 0
	for p, item := range paths {
		if strings.HasPrefix(p, "/v1/{scopeId}/") {
			for _, m := range oaMethods {
				if _, ok := item.(map[string]any)[m]; ok {
					n++
				}
			}
		}
	}
	assert.Equal(t, documented, n)
}

// The reference server's other token endpoints, which it mounts with
// oauth.Server.ClientCredentialsHandler.
const (
	edgeTokenPath = "/functions/v1/oauth-token"
	v1TokenPath   = "/v1/oauth/token"
)

// withOAuth returns info with the section of a token service at the
// default paths merged in, and the reference server's two other token
// paths, as a host that serves both describes them.
func withOAuth(t testing.TB, info resource.OpenAPIInfo) resource.OpenAPIInfo {
	t.Helper()
	srv := &oauth.Server{Issuer: info.ServerURL}
	section := srv.OpenAPI()
	require.NoError(t, section.AddPath(edgeTokenPath, srv.OpenAPIClientCredentials("requestEdgeFunctionToken", "Request a client-credentials token (edge function path)")))
	require.NoError(t, section.AddPath(v1TokenPath, srv.OpenAPIClientCredentials("requestV1Token", "Request a client-credentials token (/v1 path)")))
	info.Sections = append(info.Sections, section)
	return info
}

// TestOpenAPIOAuthRoutes checks the OAuth part against package oauth: its
// path constants and the routes its Server mounts.
func TestOpenAPIOAuthRoutes(t *testing.T) {
	_, doc := openAPIDoc(t, withOAuth(t, resource.OpenAPIInfo{}))
	paths := oaObj(t, doc, "paths")
	want := map[string]string{
		oauth.PathToken:     "post",
		edgeTokenPath:       "post",
		v1TokenPath:         "post",
		oauth.PathUserToken: "post",
		oauth.PathApps:      "post",
		oauth.PathApps + "/{client_id}/rotate-secret": "post",
		oauth.PathRevoke:     "post",
		oauth.PathIntrospect: "post",
		oauth.PathMetadata:   "get",
		oauth.PathAuthorize:  "get",
	}
	mux := http.NewServeMux()
	srv := &oauth.Server{}
	srv.Mount(mux)
	for _, p := range []string{edgeTokenPath, v1TokenPath} {
		mux.Handle("POST "+p, srv.ClientCredentialsHandler())
	}
	for p, m := range want {
		item := oaObj(t, paths, p)
		op := oaObj(t, item, m)
		assert.Equal(t, []any{"OAuth"}, op["tags"], p)
		url := strings.Replace(p, "{client_id}", "client-1", 1)
		_, pattern := mux.Handler(httptest.NewRequest(strings.ToUpper(m), url, nil))
		assert.Equal(t, strings.ToUpper(m)+" "+p, pattern, "oauth.Server mounts %s %s", m, p)
	}
	for _, p := range []string{oauth.PathLogin, oauth.PathConsent} {
		assert.NotContains(t, paths, p, "browser endpoints stay out")
	}

	token := oaObj(t, paths, oauth.PathToken, "post")
	content := oaObj(t, token, "requestBody", "content")
	assert.Contains(t, content, "application/x-www-form-urlencoded")
	assert.Contains(t, content, "application/json")
	assert.Equal(t, "#/components/schemas/TokenResponse", oaAt(t, token, "responses", "200", "content", "application/json", "schema", "$ref"))
	for _, p := range []string{edgeTokenPath, v1TokenPath} {
		assert.Equal(t, "#/components/schemas/ClientCredentialsTokenRequest",
			oaAt(t, paths, p, "post", "requestBody", "content", "application/x-www-form-urlencoded", "schema", "$ref"))
	}
	apps := oaObj(t, paths, oauth.PathApps, "post")
	assert.Equal(t, []any{map[string]any{"userToken": []any{}}}, apps["security"])
	assert.Equal(t, "bearer", oaAt(t, doc, "components", "securitySchemes", "userToken", "scheme"))
	user := oaObj(t, paths, oauth.PathUserToken, "post")
	assert.Equal(t, "grant_type", oaAt(t, user, "parameters").([]any)[0].(map[string]any)["name"])
}

func TestOpenAPIOperations(t *testing.T) {
	_, doc := openAPIDoc(t, withOAuth(t, resource.OpenAPIInfo{}))
	resources := map[string]*resource.Resource{}
	for _, r := range openAPIRegistry(t).Resources() {
		resources[r.Name] = r
	}
	scopes := oaObj(t, doc, "components", "securitySchemes", "oauth2", "flows", "clientCredentials", "scopes")
	ids := map[string]string{}
	for path, item := range oaObj(t, doc, "paths") {
		for _, m := range oaMethods {
			v, ok := item.(map[string]any)[m]
			if !ok {
				continue
			}
			op := v.(map[string]any)
			where := strings.ToUpper(m) + " " + path
			id, _ := op["operationId"].(string)
			require.NotEmpty(t, id, where)
			if other, dup := ids[id]; dup {
				t.Errorf("operationId %s of %s is also %s's", id, where, other)
			}
			ids[id] = where
			assert.NotEmpty(t, op["summary"], where)
			require.Contains(t, op, "security", where)
			responses := oaObj(t, op, "responses")
			hasSuccess := false
			for code := range responses {
				hasSuccess = hasSuccess || code[0] == '2'
			}
			assert.True(t, hasSuccess, "%s has a success response", where)

			rest, ok := strings.CutPrefix(path, "/v1/{scopeId}/")
			if !ok {
				continue
			}
			r := resources[strings.TrimSuffix(rest, "/{id}")]
			require.NotNil(t, r, where)
			scope := r.ReadScope()
			if m != "get" {
				scope = r.WriteScope()
			}
			assert.Equal(t, []any{map[string]any{"oauth2": []any{scope}}}, op["security"], where)
			assert.Contains(t, scopes, scope)
			assert.Contains(t, op["description"], scope, where)
			assert.Contains(t, op["description"], "`{scopeId}` is", where)
			for _, code := range []string{"401", "403", "404", "429", "500", "503"} {
				resp := oaResponse(t, doc, responses, code)
				assert.Equal(t, "#/components/schemas/Error", oaAt(t, resp, "content", "application/json", "schema", "$ref"), "%s %s", where, code)
			}
			assert.Contains(t, oaObj(t, oaResponse(t, doc, responses, "401"), "headers"), "WWW-Authenticate")
			assert.Contains(t, oaObj(t, oaResponse(t, doc, responses, "403"), "headers"), "WWW-Authenticate")
			assert.Subset(t, oaKeys(oaObj(t, oaResponse(t, doc, responses, "429"), "headers")), []string{"Retry-After", "RateLimit-Policy", "RateLimit"})
			assert.Equal(t, "#/components/responses/Unavailable", oaAt(t, responses, "503", "$ref"), where)
			assert.Contains(t, oaObj(t, oaResponse(t, doc, responses, "503"), "headers"), "Retry-After", where)
			assert.Contains(t, oaResponse(t, doc, responses, "503")["description"], "`temporarily_unavailable`", where)
			switch m {
			case "post":
				assert.Contains(t, oaObj(t, responses, "201", "headers"), "Location", where)
				assert.Contains(t, oaResponse(t, doc, responses, "413")["description"], "`payload_too_large`", where)
				assert.Contains(t, oaResponse(t, doc, responses, "413")["description"], strconv.Itoa(resource.MaxBatchBytes), where)
				for _, c := range []string{"invalid_request", "invalid_create", "create_failed", "invalid_batch"} {
					assert.Contains(t, oaAt(t, responses, "400", "description"), "`"+c+"`", where)
				}
				assert.Contains(t, oaResponse(t, doc, responses, "409")["description"], "`conflict`", where)
				assert.Contains(t, oaResponse(t, doc, responses, "409")["description"], "`idempotency_in_progress`", where)
			case "patch":
				assert.Contains(t, oaResponse(t, doc, responses, "413")["description"], "`payload_too_large`", where)
				if strings.HasSuffix(path, "/{id}") {
					assert.Contains(t, oaAt(t, responses, "400", "description"), "`invalid_update`", where)
				} else {
					assert.Contains(t, oaAt(t, responses, "400", "description"), "`invalid_batch`", where)
					assert.Equal(t, "array", oaAt(t, op, "requestBody", "content", "application/json", "schema", "type"), where)
				}
			case "delete":
				assert.Contains(t, oaResponse(t, doc, responses, "409")["description"], "`conflict`", where)
			}
		}
	}
	for _, id := range []string{"listQuotations", "getQuotation", "createQuotation", "updateQuotation", "deleteQuotation", "updateQuotations",
		"listBranches", "getBranch", "listZones", "requestToken"} {
		assert.Contains(t, ids, id)
	}
	assert.NotContains(t, ids, "createBranch")
	for _, r := range resources {
		assert.Contains(t, scopes, r.ReadScope())
		if !r.ReadOnly {
			assert.Contains(t, scopes, r.WriteScope())
		}
	}
	assert.Equal(t, "Read quotations", scopes["svc:quotations:read"])
}

func oaKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestOpenAPIListParameters(t *testing.T) {
	_, doc := openAPIDoc(t, resource.OpenAPIInfo{})
	params := map[string]map[string]any{}
	for _, p := range oaAt(t, doc, "paths", "/v1/{scopeId}/quotations", "get", "parameters").([]any) {
		params[p.(map[string]any)["name"].(string)] = p.(map[string]any)
	}
	require.Len(t, params, 7)
	assert.Equal(t, float64(query.MaxCursorLength), oaAt(t, params["after"], "schema", "maxLength"))
	assert.Equal(t, "header", params["Prefer"]["in"])
	assert.Equal(t, []any{"count=exact", "count=estimated", "count=none"}, oaAt(t, params["Prefer"], "schema", "enum"))
	assert.Equal(t, false, params["fields"]["explode"])
	assert.Contains(t, oaAt(t, params["fields"], "schema", "items", "enum"), "valid_until")
	assert.Equal(t, map[string]any{"type": "integer", "format": "int32", "minimum": 1.0, "maximum": float64(query.MaxLimit), "default": 50.0}, params["limit"]["schema"])
	assert.Equal(t, 0.0, oaAt(t, params["offset"], "schema", "default"))
	assert.Equal(t, 0.0, oaAt(t, params["offset"], "schema", "minimum"))
	for _, name := range []string{"sort", "filter"} {
		assert.Equal(t, "form", params[name]["style"])
		assert.Equal(t, true, params[name]["explode"])
		assert.Equal(t, "array", oaAt(t, params[name], "schema", "type"))
	}
	sortDesc := params["sort"]["description"].(string)
	assert.Contains(t, sortDesc, "`quotation_date`")
	assert.Contains(t, sortDesc, "`id` is always appended")
	assert.Contains(t, sortDesc, "`created_at:desc`")
	filter := params["filter"]["description"].(string)
	assert.Contains(t, filter, "- `status` (enum: one of draft, sent, accepted, rejected, expired, cancelled): eq, ne, in, isnull")
	assert.Contains(t, filter, "- `total_weight_kg` (number: a decimal number): eq, ne, in, gt, gte, lt, lte, isnull")
	assert.Contains(t, filter, "- `quotation_number` (string: text): eq, ne, in, like, ilike, isnull")
	assert.Contains(t, filter, "first two colons")
	assert.Contains(t, filter, "`%` is the only wildcard")
	assert.Contains(t, filter, "double quotes")

	// The scopeId of each scope type says what it names.
	scopeID := func(name string) string {
		return oaAt(t, doc, "paths", "/v1/{scopeId}/"+name, "parameters").([]any)[0].(map[string]any)["description"].(string)
	}
	assert.Contains(t, scopeID("vehicles"), "organization's UUID")
	assert.Contains(t, scopeID("quotations"), "A branch UUID")
	assert.Contains(t, scopeID("zones"), "organization-wide records")

	t.Run("a resource's own max limit", func(t *testing.T) {
		reg := &resource.Registry{}
		require.NoError(t, reg.Register(&resource.Resource{Name: "parcels", ScopeType: tenancy.Organization, MaxLimit: 20, DefaultSort: "id:asc"}))
		raw, err := reg.OpenAPI(resource.OpenAPIInfo{})
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		limit := oaAt(t, doc, "paths", "/v1/{scopeId}/parcels", "get", "parameters").([]any)[0].(map[string]any)
		assert.Equal(t, map[string]any{"type": "integer", "format": "int32", "minimum": 1.0, "maximum": 20.0, "default": 20.0}, limit["schema"])
	})
}

// TestOpenAPIRefs checks that every $ref, and every discriminator mapping,
// names a component that exists.
func TestOpenAPIRefs(t *testing.T) {
	_, doc := openAPIDoc(t, withOAuth(t, resource.OpenAPIInfo{}))
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch k {
				case "$ref":
					oaResolve(t, doc, e.(string))
					n++
				case "mapping":
					for _, r := range e.(map[string]any) {
						oaResolve(t, doc, r.(string))
						n++
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	assert.Greater(t, n, 100)
}

func TestOpenAPIDeterministic(t *testing.T) {
	a, _ := openAPIDoc(t, resource.OpenAPIInfo{})
	b, _ := openAPIDoc(t, resource.OpenAPIInfo{})
	require.Equal(t, a, b)
	reg := openAPIRegistry(t)
	c, err := reg.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	d, err := reg.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, c) && bytes.Equal(c, d))
	assert.NotContains(t, string(a), `\u003c`, "no HTML escaping")
}

func TestOpenAPINameClash(t *testing.T) {
	reg := &resource.Registry{}
	require.NoError(t, reg.Register(
		&resource.Resource{Name: "boxes", ScopeType: tenancy.Organization},
		&resource.Resource{Name: "box", ScopeType: tenancy.Organization},
	))
	_, err := reg.OpenAPI(resource.OpenAPIInfo{})
	require.ErrorContains(t, err, "Box")
}

func TestOpenAPIHandler(t *testing.T) {
	reg := openAPIRegistry(t)
	want, err := reg.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	srv := httptest.NewServer(reg.OpenAPIHandler(resource.OpenAPIInfo{}))
	t.Cleanup(srv.Close)

	get := func(method string, header http.Header) (*http.Response, []byte) {
		req, err := http.NewRequest(method, srv.URL, nil)
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, body
	}

	// The first requests race to build the document.
	var wg sync.WaitGroup
	bodies := make([][]byte, 8)
	for i := range bodies {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				bodies[i], _ = io.ReadAll(res.Body)
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	for _, b := range bodies {
		assert.Equal(t, want, b)
	}

	res, body := get(http.MethodGet, nil)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Equal(t, want, body)
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag)

	res, body = get(http.MethodHead, nil)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Empty(t, body)

	res, _ = get(http.MethodGet, http.Header{"If-None-Match": {etag}})
	assert.Equal(t, http.StatusNotModified, res.StatusCode)

	res, body = get(http.MethodPost, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	assert.Equal(t, "GET, HEAD", res.Header.Get("Allow"))
	assert.Contains(t, string(body), `"method_not_allowed"`)
}

// ExampleRegistry_OpenAPI describes a registry's resources in an OpenAPI
// 3.1 document; OpenAPIHandler serves the same document.
func ExampleRegistry_OpenAPI() {
	reg := &resource.Registry{} // no database is needed for the document
	err := reg.Register(&resource.Resource{
		Name: "parcels", ScopeType: tenancy.Branch,
		Fields: []resource.Field{
			{Name: "label", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true},
		},
	})
	if err != nil {
		panic(err)
	}
	raw, err := reg.OpenAPI(resource.OpenAPIInfo{Title: "Parcels", ServerURL: "https://parcels.test"})
	if err != nil {
		panic(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(err)
	}
	fmt.Println(doc.OpenAPI)
	var ops []string
	for path, item := range doc.Paths {
		if strings.Contains(path, "parcels") {
			for method, raw := range item {
				var op struct {
					OperationID string `json:"operationId"`
				}
				if slices.Contains(oaMethods, method) && json.Unmarshal(raw, &op) == nil {
					ops = append(ops, op.OperationID)
				}
			}
		}
	}
	sort.Strings(ops)
	fmt.Println(strings.Join(ops, " "))
	// Output:
	// 3.1.0
	// createParcel deleteParcel getParcel listParcels updateParcel updateParcels
}

// A section of the token service gives the document its security scheme,
// as the service is set up; without one the scheme is built from the info,
// at the token service's default paths.
func TestOpenAPISections(t *testing.T) {
	flows := func(doc map[string]any) map[string]any {
		return oaObj(t, doc, "components", "securitySchemes", "oauth2", "flows")
	}
	t.Run("without a section", func(t *testing.T) {
		_, doc := openAPIDoc(t, resource.OpenAPIInfo{ServerURL: "https://tms.test"})
		assert.Equal(t, "https://tms.test"+oauth.PathToken, oaAt(t, flows(doc), "clientCredentials", "tokenUrl"))
		assert.Equal(t, "https://tms.test"+oauth.PathAuthorize, oaAt(t, flows(doc), "authorizationCode", "authorizationUrl"))
		assert.NotContains(t, oaObj(t, doc, "paths"), oauth.PathToken)
		assert.NotContains(t, oaObj(t, doc, "components", "securitySchemes"), "clientBasic")
	})

	t.Run("the token service's", func(t *testing.T) {
		srv := &oauth.Server{
			Issuer:          "https://auth.test",
			Paths:           oauth.Paths{Authorize: "/oauth2/authorize", Token: "/oauth2/token"},
			AccessTokenTTL:  15 * time.Minute,
			ScopesSupported: []string{"svc:quotations:read", "svc:reports:read"},
		}
		section := srv.OpenAPI()
		_, doc := openAPIDoc(t, resource.OpenAPIInfo{ServerURL: "https://tms.test", TokenURL: "https://ignored.test/token", Sections: []*openapi.Document{section}})
		f := flows(doc)
		assert.Equal(t, "https://auth.test/oauth2/token", oaAt(t, f, "clientCredentials", "tokenUrl"))
		assert.Equal(t, "https://auth.test/oauth2/token", oaAt(t, f, "authorizationCode", "refreshUrl"))
		assert.Equal(t, "https://auth.test/oauth2/authorize", oaAt(t, f, "authorizationCode", "authorizationUrl"))
		scopes := oaObj(t, f, "clientCredentials", "scopes")
		assert.Equal(t, "Read quotations", scopes["svc:quotations:read"])
		assert.Equal(t, "Create, update and delete quotations", scopes["svc:quotations:write"], "the registry's scopes join the service's")
		assert.Equal(t, "Read reports", scopes["svc:reports:read"], "and the service's stay")
		desc := oaAt(t, doc, "components", "securitySchemes", "oauth2", "description").(string)
		assert.Contains(t, desc, "valid 900 s")
		assert.True(t, strings.HasSuffix(desc, "write does not imply read."), desc)
		assert.Contains(t, oaObj(t, doc, "paths"), "/oauth2/token")
		assert.Equal(t, "https://tms.test", oaAt(t, doc, "servers").([]any)[0].(map[string]any)["url"], "the document's info and servers stay")
		require.Contains(t, section.Components.SecuritySchemes, "oauth2", "the section is not changed")
		assert.NotContains(t, section.Components.SecuritySchemes["oauth2"].Flows.ClientCredentials.Scopes, "svc:quotations:write", "the section is not changed")
	})

	t.Run("a section that clashes", func(t *testing.T) {
		section := (&oauth.Server{}).OpenAPI()
		section.Components.Schemas["Pagination"] = openapi.String("another pagination")
		_, err := openAPIRegistry(t).OpenAPI(resource.OpenAPIInfo{Sections: []*openapi.Document{section}})
		require.ErrorContains(t, err, "Pagination")

		section = (&oauth.Server{Paths: oauth.Paths{Token: "/v1/{scopeId}/quotations"}}).OpenAPI()
		_, err = openAPIRegistry(t).OpenAPI(resource.OpenAPIInfo{Sections: []*openapi.Document{section}})
		require.ErrorContains(t, err, "described twice")
	})
}

// TestOpenAPISafeWrites: the document describes ETags and conditional
// requests, idempotency keys and their answers on every operation that
// takes them, and 428 only where a resource requires If-Match.
func TestOpenAPISafeWrites(t *testing.T) {
	t.Parallel()
	rs := testResources()
	for _, r := range rs {
		if r.Name == "zones" {
			r.RequireIfMatch = true
		}
	}
	reg := &resource.Registry{}
	require.NoError(t, reg.Register(rs...))
	raw, err := reg.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))

	params := func(op map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		list, _ := op["parameters"].([]any)
		for _, p := range list {
			out[p.(map[string]any)["name"].(string)] = p.(map[string]any)
		}
		return out
	}
	for _, res := range []string{"quotations", "zones"} {
		item := oaObj(t, doc, "paths", "/v1/{scopeId}/"+res+"/{id}")
		collection := oaObj(t, doc, "paths", "/v1/{scopeId}/"+res)
		required := res == "zones"

		get := oaObj(t, item, "get")
		assert.Contains(t, params(get), "If-None-Match", res)
		assert.Contains(t, oaObj(t, get, "responses"), "304", res)
		assert.Contains(t, oaObj(t, get, "responses", "200", "headers"), "ETag", res)

		post := oaObj(t, collection, "post")
		assert.Contains(t, params(post), "Idempotency-Key", res)
		for _, code := range []string{"409", "422"} {
			assert.Contains(t, oaObj(t, post, "responses"), code, res)
		}
		assert.Contains(t, oaObj(t, post, "responses", "201", "headers"), "Idempotent-Replayed", res)

		for _, method := range []string{"patch", "delete"} {
			op := oaObj(t, item, method)
			ifMatch := params(op)["If-Match"]
			require.NotNil(t, ifMatch, "%s %s", method, res)
			assert.Equal(t, required, ifMatch["required"] == true, "%s %s", method, res)
			responses := oaObj(t, op, "responses")
			assert.Contains(t, responses, "412", "%s %s", method, res)
			_, has428 := responses["428"]
			assert.Equal(t, required, has428, "%s %s: 428 only where If-Match is required", method, res)
			assert.Equal(t, "#/components/schemas/"+map[string]string{"quotations": "Quotation", "zones": "Zone"}[res],
				oaAt(t, responses, "412", "content", "application/json", "schema", "properties", "data", "$ref"))
		}
		assert.Contains(t, params(oaObj(t, item, "patch")), "Idempotency-Key", res)
	}
	assert.Equal(t, []any{"integer", "null"}, oaAt(t, doc, "components", "schemas", "Pagination", "properties", "total", "type"))
	assert.Equal(t, []any{"string", "null"}, oaAt(t, doc, "components", "schemas", "Pagination", "properties", "next_cursor", "type"))
	assert.Contains(t, oaObj(t, doc, "paths", "/v1/{scopeId}/quotations", "get", "responses", "200", "headers"), "Link")
}

// A host that has no verifier yet, and passes its nil *bearer.Verifier,
// registers its resources: there is then no key to derive cursors from,
// which Mount refuses, not Register.
func TestRegisterWithNilVerifier(t *testing.T) {
	t.Parallel()
	var v *bearer.Verifier
	reg := &resource.Registry{Verifier: v}
	assert.NotPanics(t, func() {
		assert.NoError(t, reg.Register(testResources()...))
	})
	defer func() {
		assert.Contains(t, fmt.Sprint(recover()), "registered without a cursor key", "Mount refuses")
	}()
	reg.Mount(http.NewServeMux())
}
