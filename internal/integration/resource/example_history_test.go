package resource_test

import (
	"context"
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

// A registry that keeps the history of its records in its own database
// (SQLite here): a parcel created, changed and deleted, and its history
// read back after the delete, one entry per write with the values of the
// fields it changed before and after.
func ExampleSQLHistory() {
	const (
		org    = "7a110000-0000-4000-8000-000000000001"
		branch = "7a110000-0000-4000-8000-0000000000b1"
	)
	dir, err := os.MkdirTemp("", "history-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE parcels (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL, label TEXT NOT NULL, weight_kg REAL NOT NULL)`); err != nil {
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
		History:  &resource.SQLHistory{Dialect: query.SQLite},
	}
	err = reg.Register(&resource.Resource{
		Name: "parcels", ScopeType: tenancy.Branch,
		Fields: []resource.Field{
			{Name: "label", Type: query.String, Create: true, Update: true, Required: true},
			{Name: "weight_kg", Type: query.Number, Create: true, Update: true, Required: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Migrate(context.Background()); err != nil { // creates waybill_record_history
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
	call := func(method, path, body string) []byte {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Body.Bytes()
	}
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(call("POST", "/v1/"+branch+"/parcels", `{"label":"Pallet 7","weight_kg":412.5}`), &created); err != nil {
		log.Fatal(err)
	}
	parcel := "/v1/" + branch + "/parcels/" + created.Data.ID
	call("PATCH", parcel, `{"weight_kg":398}`)
	call("DELETE", parcel, "")

	var history struct {
		Data []struct {
			Type     string          `json:"type"`
			ClientID string          `json:"clientid"`
			UserID   string          `json:"userid"`
			Changed  []string        `json:"changed"`
			Before   json.RawMessage `json:"before"`
			After    json.RawMessage `json:"after"`
		} `json:"data"`
	}
	if err := json.Unmarshal(call("GET", parcel+"/history", ""), &history); err != nil {
		log.Fatal(err)
	}
	for _, e := range history.Data {
		fmt.Println(e.Type, e.ClientID, e.UserID, e.Changed, string(e.Before), string(e.After))
	}
	// Output:
	// parcel.created client-1 user-1 [label weight_kg] {} {"label":"Pallet 7","weight_kg":412.5}
	// parcel.updated client-1 user-1 [weight_kg] {"weight_kg":412.5} {"weight_kg":398}
	// parcel.deleted client-1 user-1 [label weight_kg] {"label":"Pallet 7","weight_kg":398} {}
}
