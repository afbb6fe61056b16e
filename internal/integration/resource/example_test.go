package resource_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"

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
// branch-scoped "parcels" table with a status flow, served with the
// envelopes, whitelists and tenant rules of the API. It is the example of
// package resource with a database: SQLite, which serves the records.
func ExampleRegistry() {
	const (
		org    = "7a110000-0000-4000-8000-000000000001"
		branch = "7a110000-0000-4000-8000-0000000000b1"
	)
	dir, err := os.MkdirTemp("", "resource-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "parcels.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE parcels (
		id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
		label TEXT NOT NULL, weight_kg REAL NOT NULL, status TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		log.Fatal(err)
	}
	reg := &resource.Registry{
		DB: db, Dialect: query.SQLite,
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
	mux := http.NewServeMux()
	reg.Mount(mux)

	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "https://tms.example.com", Subject: "user-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1", OrganizationID: org,
		ClientID: "client-1", Scopes: []string{"svc:parcels:read", "svc:parcels:write"},
	})
	if err != nil {
		log.Fatal(err)
	}
	call := func(method, path, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	}
	call("POST", "/v1/"+branch+"/parcels", `{"label":"Pallet 7","weight_kg":412.5}`)
	call("POST", "/v1/"+branch+"/parcels", `{"label":"Box","weight_kg":-1}`)
	call("GET", "/v1/"+branch+"/parcels?filter=status:eq:ready&sort=label:asc", "")
	call("GET", "/api/v1/"+branch+"/parcels?filter=branch_id:eq:"+branch, "")

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/"+branch+"/parcels?filter=label:like:Pallet%25", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	mux.ServeHTTP(rec, req)
	fmt.Println(strings.Contains(rec.Body.String(), `"total":1`))
	// Output:
	// 201 application/json
	// 400 application/json
	// 200 application/json
	// 400 application/json
	// true
}
