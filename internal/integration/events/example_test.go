package events_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// oneBranch is the tenancy.Branches of an organization with one branch.
type oneBranch struct{ org, branch string }

func (b oneBranch) Organization(_ context.Context, id string) (string, error) {
	if id != b.branch {
		return "", tenancy.ErrNoBranch
	}
	return b.org, nil
}

func (b oneBranch) List(context.Context, string) ([]string, error) { return []string{b.branch}, nil }

// A registry whose writes go to the outbox, and the feed that serves them.
// It is the example of package events with a database: SQLite, from which
// the feed answers a page of the events of a write.
func ExampleFeed() {
	dir, _ := os.MkdirTemp("", "events-example")
	defer os.RemoveAll(dir)
	db, _ := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	_, _ = db.Exec(`CREATE TABLE notes (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL,
		created_at TEXT NOT NULL, updated_at TEXT NOT NULL, body TEXT NOT NULL)`)
	const org, branch = "0a000000-0000-4000-8000-00000000000a", "0a000000-0000-4000-8000-0000000000a1"
	keys, _ := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("k", 32))})
	verifier := &bearer.Verifier{Keys: keys, Issuer: "https://example.test"}
	branches := oneBranch{org, branch}
	registry := &resource.Registry{DB: db, Dialect: query.SQLite, Verifier: verifier, Branches: branches,
		Outbox: &events.Outbox{Dialect: query.SQLite}}
	notes := &resource.Resource{Name: "notes", ScopeType: tenancy.Branch,
		Fields: []resource.Field{{Name: "body", Type: query.String, Create: true, Update: true, Required: true}}}
	if err := registry.Register(notes); err != nil {
		panic(err)
	}
	feed := &events.Feed{Registry: registry}
	if err := feed.Migrate(ctx); err != nil { // the tables of the events
		panic(err)
	}
	mux := http.NewServeMux()
	registry.Mount(mux)
	feed.Mount(mux)

	now := time.Now()
	token, _ := keys.Sign(&bearer.Claims{Issuer: "https://example.test", Subject: "user-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "t1", OrganizationID: org, ClientID: "app-1",
		Scopes: []string{"svc:notes:read", "svc:notes:write", events.ReadScope}})
	call := func(method, path, body string) string {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	call("POST", "/v1/"+branch+"/notes", `{"body": "call the carrier"}`)
	page := call("GET", "/v1/"+org+"/events?types=note.*", "")
	fmt.Println(strings.Contains(page, `"type":"note.created"`), strings.Contains(page, `"changed":["body"]`))
	fmt.Println(page[strings.Index(page, `"next_cursor"`):])
	// Output:
	// true true
	// "next_cursor":"1","version":"v1"}
}
