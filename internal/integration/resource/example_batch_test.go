package resource_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// Batch writes and upserts of a resource with an external_id: an ERP
// loads its parcels in one request, sends them again with one changed
// (only that one is written), and a batch with a bad item writes nothing
// and names the item.
func ExampleRegistry_batch() {
	const (
		org    = "7a110000-0000-4000-8000-000000000001"
		branch = "7a110000-0000-4000-8000-0000000000b1"
	)
	// The table has external_id and its unique index (see
	// resource.ExternalIDField).
	mux, token, done := parcelsAPI(org, branch, `CREATE TABLE parcels (
		id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL, external_id TEXT,
		label TEXT NOT NULL, weight_kg REAL NOT NULL);
		CREATE UNIQUE INDEX parcels_external_id ON parcels (branch_id, external_id) WHERE external_id IS NOT NULL`,
		&resource.Resource{
			Name: "parcels", ScopeType: tenancy.Branch, ExternalID: true,
			Fields: []resource.Field{
				{Name: "label", Type: query.String, Create: true, Update: true, Required: true},
				{Name: "weight_kg", Type: query.Number, Create: true, Update: true, Required: true, Min: resource.Bound(0)},
			},
		})
	defer done()
	post := func(body string, prefer string) {
		req := httptest.NewRequest("POST", "/v1/"+branch+"/parcels", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if prefer != "" {
			req.Header.Set("Prefer", prefer)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var answer struct {
			Data     []map[string]any `json:"data"`
			Outcomes []string         `json:"outcomes"`
			Error    string           `json:"error"`
			Errors   []struct {
				Index int    `json:"index"`
				Error string `json:"error"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			log.Fatal(err)
		}
		fmt.Println(rec.Code, len(answer.Data), answer.Outcomes, answer.Error, answer.Errors)
	}
	post(`[{"external_id":"P-1","label":"Pallet","weight_kg":412.5},{"external_id":"P-2","label":"Box","weight_kg":3}]`, "")
	post(`[{"external_id":"P-1","label":"Pallet","weight_kg":412.5},{"external_id":"P-2","label":"Box","weight_kg":4}]`, "resolution=merge-duplicates")
	post(`[{"external_id":"P-3","label":"Crate","weight_kg":10},{"external_id":"P-4","label":"Bag","weight_kg":-1}]`, "")
	// Output:
	// 201 2 []  []
	// 200 2 [unchanged updated]  []
	// 400 0 [] invalid_batch [{1 invalid_create}]
}

// An export of the parcels as CSV: every record the filters match, in the
// sort given, one row each after the header; fields= picks the columns.
// With an events.Outbox as the registry's Outbox the answer also names,
// in Waybill-Feed-Cursor, where the change feed goes on after it.
func ExampleRegistry_export() {
	const (
		org    = "7a110000-0000-4000-8000-000000000001"
		branch = "7a110000-0000-4000-8000-0000000000b1"
	)
	mux, token, done := parcelsAPI(org, branch, `CREATE TABLE parcels (
		id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL, label TEXT NOT NULL, weight_kg REAL NOT NULL)`,
		&resource.Resource{Name: "parcels", ScopeType: tenancy.Branch, Fields: []resource.Field{
			{Name: "label", Type: query.String, Create: true, Required: true, Sortable: true},
			{Name: "weight_kg", Type: query.Number, Create: true, Required: true, Filterable: true},
		}})
	defer done()
	do := func(method, path, accept, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", accept)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}
	do("POST", "/v1/"+branch+"/parcels", "", `[{"label":"Box, small","weight_kg":3},{"label":"Pallet \"B\"","weight_kg":412.5},{"label":"Crate","weight_kg":0.2}]`)
	rec := do("GET", "/v1/"+branch+"/parcels?fields=label,weight_kg&filter=weight_kg:gte:1&sort=label:asc", "text/csv", "")
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	for _, line := range strings.SplitAfter(rec.Body.String(), "\r\n") {
		_, row, _ := strings.Cut(line, ",") // leave out the ids
		fmt.Print(strings.ReplaceAll(row, "\r\n", "\n"))
	}
	// Output:
	// 200 text/csv; charset=utf-8; header=present
	// label,weight_kg
	// "Box, small",3
	// "Pallet ""B""",412.5
}

// parcelsAPI serves r, a resource of one branch of org, from a new SQLite
// database made by schema, and returns the mux, a token that reads and
// writes r, and the func that removes the database.
func parcelsAPI(org, branch, schema string, r *resource.Resource) (*http.ServeMux, string, func()) {
	dir, err := os.MkdirTemp("", "resource-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "parcels.db"))
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		log.Fatal(err)
	}
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		log.Fatal(err)
	}
	reg := &resource.Registry{DB: db, Dialect: query.SQLite,
		Verifier: &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com"}, Branches: orgBranches{org, branch}}
	if err := reg.Register(r); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	reg.Mount(mux)
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{Issuer: "https://tms.example.com", Subject: "erp", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1", OrganizationID: org,
		ClientID: "erp", Scopes: []string{r.ReadScope(), r.WriteScope()}})
	if err != nil {
		log.Fatal(err)
	}
	return mux, token, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
}
