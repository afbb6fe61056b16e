package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

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

// A registry whose writes go to the outbox, and the feed that serves them:
// the route and scope the feed's OpenAPI description gives, the event types
// of a resource, and the requests the feed refuses before it reads the
// database. A service sets the registry's DB and Dialect and calls
// Feed.Migrate once; the feed then answers pages of events:
//
//	{"data":[{"specversion":"1.0","type":"note.created",...}],"next_cursor":"1","version":"v1"}
func ExampleFeed() {
	const org, branch = "0a000000-0000-4000-8000-00000000000a", "0a000000-0000-4000-8000-0000000000a1"
	keys, _ := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("k", 32))})
	verifier := &bearer.Verifier{Keys: keys, Issuer: "https://example.test"}
	registry := &resource.Registry{Verifier: verifier, Branches: oneBranch{org, branch},
		Outbox: &events.Outbox{Dialect: query.SQLite}}
	notes := &resource.Resource{Name: "notes", ScopeType: tenancy.Branch,
		Fields: []resource.Field{{Name: "body", Type: query.String, Create: true, Update: true, Required: true}}}
	if err := registry.Register(notes); err != nil {
		panic(err)
	}
	feed := &events.Feed{Registry: registry}

	doc := feed.OpenAPI()
	var paths []string
	for path, item := range doc.Paths {
		paths = append(paths, fmt.Sprintf("GET %s %s %v", path, item.Get.OperationID, item.Get.Security[0]["oauth2"]))
	}
	slices.Sort(paths)
	fmt.Println(strings.Join(paths, "\n"))
	fmt.Println(events.Type("notes", events.Created), events.Type("notes", events.Deleted))
	pattern, ok := events.ParsePattern("note.*", []string{"notes"})
	fmt.Println(pattern, ok, pattern.Matches("note.updated"))

	mux := http.NewServeMux()
	registry.Mount(mux)
	feed.Mount(mux)
	now := time.Now()
	sign := func(scopes ...string) string {
		token, _ := keys.Sign(&bearer.Claims{Issuer: "https://example.test", Subject: "user-1", Audience: bearer.Audience, Role: bearer.Role,
			IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "t1", OrganizationID: org, ClientID: "app-1",
			Scopes: scopes})
		return token
	}
	call := func(token, path string) {
		req := httptest.NewRequest("GET", path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
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
	reader := sign("svc:notes:read", events.ReadScope)
	call("", "/v1/"+org+"/events")                           // no token
	call(sign("svc:notes:read"), "/v1/"+org+"/events")       // the feed has a scope of its own
	call(reader, "/v1/"+org+"/events?types=invoice.created") // no resource of this API
	call(reader, "/v1/"+org+"/events?limit=0")               // out of range
	// Output:
	// GET /v1/{scopeId}/events listEvents [svc:events:read]
	// note.created note.deleted
	// note.* true true
	// 401 unauthorized: an Authorization: Bearer token is required
	// 403 insufficient_scope: the token lacks the scope svc:events:read
	// 400 invalid_request: types: "invoice.created" is not an event type (such as note.created, or note.* for all of its types)
	// 400 invalid_request: limit: an integer from 1 to 1000
}
