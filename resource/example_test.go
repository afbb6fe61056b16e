package resource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// orgBranches is the host's branch lookup: here, one branch of one
// organization.
type orgBranches struct{ org, branch string }

func (b orgBranches) Organization(_ context.Context, id string) (string, error) {
	if id == b.branch {
		return b.org, nil
	}
	return "", tenancy.ErrNoBranch
}

func (b orgBranches) List(context.Context, string) ([]string, error) {
	return []string{b.branch}, nil
}

// A resource declared, registered and mounted on a plain ServeMux: a
// branch-scoped "parcels" table with a status flow. The registry names the
// scopes a token needs and describes the routes it serves; tokens, scopes
// and the whitelists of filters and bodies are checked before the database
// is asked, so this example needs none (a service sets Registry.DB and
// Dialect, and calls Registry.Migrate, before it serves records).
func ExampleRegistry() {
	const (
		org    = "7a110000-0000-4000-8000-000000000001"
		branch = "7a110000-0000-4000-8000-0000000000b1"
	)
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		log.Fatal(err)
	}
	reg := &resource.Registry{
		Verifier: &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com"},
		Branches: orgBranches{org, branch},
	}
	err = reg.Register(&resource.Resource{
		Name: "parcels", ScopeType: tenancy.Branch,
		Fields: []resource.Field{
			{Name: "label", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true},
			{Name: "weight_kg", Type: query.Number, Create: true, Update: true, Required: true, Min: resource.Bound(0), Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"ready", "shipped", "lost"}, Create: true, Update: true, Filterable: true},
		},
		Hooks: resource.StatusFlow("status", "ready", map[string][]string{"ready": {"shipped", "lost"}}),
	})
	if err != nil {
		log.Fatal(err)
	}
	parcels := reg.Resource("parcels")
	fmt.Println("scopes:", parcels.ReadScope(), parcels.WriteScope())

	// The routes, as the registry's OpenAPI document describes them.
	raw, err := reg.OpenAPI(resource.OpenAPIInfo{})
	if err != nil {
		log.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		log.Fatal(err)
	}
	var routes []string
	for path, item := range doc.Paths {
		for _, method := range []string{"get", "post", "patch", "delete"} {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if item[method] != nil && json.Unmarshal(item[method], &op) == nil {
				routes = append(routes, fmt.Sprintf("%-6s %s %s", strings.ToUpper(method), path, op.OperationID))
			}
		}
	}
	slices.Sort(routes)
	fmt.Println(strings.Join(routes, "\n"))

	mux := http.NewServeMux()
	reg.Mount(mux)
	sign := func(scopes ...string) string {
		now := time.Now()
		token, err := keys.Sign(&bearer.Claims{
			Issuer: "https://tms.example.com", Subject: "user-1", Audience: bearer.Audience, Role: bearer.Role,
			IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1", OrganizationID: org,
			ClientID: "client-1", Scopes: scopes,
		})
		if err != nil {
			log.Fatal(err)
		}
		return token
	}
	call := func(token, method, path, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var answer struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &answer)
		fmt.Println(rec.Code, answer.Error+":", answer.Description)
	}
	reader, writer := sign(parcels.ReadScope()), sign(parcels.ReadScope(), parcels.WriteScope())
	call("", "GET", "/v1/"+branch+"/parcels", "")                                                  // no token
	call(reader, "POST", "/v1/"+branch+"/parcels", `{"label":"Pallet 7","weight_kg":412.5}`)       // write needs the write scope
	call(writer, "POST", "/v1/"+branch+"/parcels", `{"label":"Box","weight_kg":-1}`)               // below the field's Min
	call(writer, "POST", "/v1/"+branch+"/parcels", `{"label":"Box","weight_kg":1,"colour":"red"}`) // not a field
	call(reader, "GET", "/v1/"+branch+"/parcels?filter=branch_id:eq:"+branch, "")                  // tenant columns are the server's
	call(reader, "DELETE", "/v1/"+branch+"/parcels", "")                                           // a collection is not deleted
	// Output:
	// scopes: svc:parcels:read svc:parcels:write
	// DELETE /v1/{scopeId}/parcels/{id} deleteParcel
	// GET    /v1/{scopeId}/parcels listParcels
	// GET    /v1/{scopeId}/parcels/{id} getParcel
	// PATCH  /v1/{scopeId}/parcels updateParcels
	// PATCH  /v1/{scopeId}/parcels/{id} updateParcel
	// POST   /v1/{scopeId}/parcels createParcel
	// 401 unauthorized: an Authorization: Bearer token is required
	// 403 insufficient_scope: the token lacks the scope svc:parcels:write
	// 400 invalid_create: weight_kg: must be at least 0
	// 400 invalid_create: unknown field "colour"; fields that may be sent: label, weight_kg, status
	// 400 invalid_request: filter on "branch_id": the field is set by the server and cannot be filtered
	// 405 method_not_allowed: method not allowed; allowed: GET, HEAD, POST, PATCH
}
