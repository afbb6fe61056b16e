package tenancy_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
)

// oneBranch is the host's branch table: one organization with one branch.
type oneBranch struct{ org, branch string }

func (b oneBranch) Organization(_ context.Context, id string) (string, error) {
	if id == b.branch {
		return b.org, nil
	}
	return "", tenancy.ErrNoBranch
}

func (b oneBranch) List(context.Context, string) ([]string, error) { return []string{b.branch}, nil }

// The middleware in front of a handler of an existing service: the handler
// reads the tenant; every refusal has the API's error shape.
func ExampleMiddleware() {
	const (
		org    = "6f0c0000-0000-4000-8000-000000000001"
		branch = "6f0c0000-0000-4000-8000-0000000000b1"
	)
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		log.Fatal(err)
	}
	verifier := &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com"}

	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, _ := tenancy.FromContext(r.Context())
		fmt.Fprintf(w, "orders of branch %s", t.BranchID)
	})
	mux := http.NewServeMux()
	mux.Handle("/v1/{scopeId}/orders", tenancy.Middleware(tenancy.Options{
		Verifier: verifier, Branches: oneBranch{org, branch}, ScopeType: tenancy.Branch,
		Scope: tenancy.ReadWrite("svc:orders:read", "svc:orders:write"),
	})(orders))

	// A client-credentials token, as the token service issues it.
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "https://tms.example.com", Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1",
		OrganizationID: org, ClientID: "client-1", Scopes: []string{"svc:orders:read"},
		BranchIDs: []string{branch}, AppName: "Nightly Sync",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/v1/" + branch + "/orders", token},
		{"GET", "/v1/" + branch + "/orders", ""},
		{"POST", "/v1/" + branch + "/orders", token},
		{"GET", "/v1/" + org + "/orders", token},
		{"GET", "/v1/6f0c0000-0000-4000-8000-0000000000ff/orders", token},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 orders of branch 6f0c0000-0000-4000-8000-0000000000b1
	// 401 {"error":"unauthorized","error_description":"an Authorization: Bearer token is required"}
	// 403 {"error":"insufficient_scope","error_description":"the token lacks the scope svc:orders:write"}
	// 404 {"error":"not_found","error_description":"this resource is kept per branch: give the id of a branch of your organization in the path, not the organization's"}
	// 404 {"error":"not_found","error_description":"no such organization or branch"}
}

// On chi, the middleware goes where chi knows the route's parameters — a
// route group — and Options.ScopeID reads the scope id with chi.URLParam.
func ExampleOptions_scopeID() {
	const (
		org    = "6f0c0000-0000-4000-8000-000000000001"
		branch = "6f0c0000-0000-4000-8000-0000000000b1"
	)
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.Route("/v1/{scopeId}", func(r chi.Router) {
		r.Use(tenancy.Middleware(tenancy.Options{
			Verifier: &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com"}, Branches: oneBranch{org, branch},
			ScopeType: tenancy.Branch, Scope: tenancy.ReadWrite("svc:orders:read", "svc:orders:write"),
			ScopeID: func(r *http.Request) string { return chi.URLParam(r, "scopeId") },
		}))
		r.Get("/orders", func(w http.ResponseWriter, r *http.Request) {
			t, _ := tenancy.FromContext(r.Context())
			fmt.Fprintf(w, "orders of branch %s", t.BranchID)
		})
	})
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "https://tms.example.com", Subject: "user-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-2",
		OrganizationID: org, ClientID: "client-1", Scopes: []string{"svc:orders:read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/v1/"+branch+"/orders", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 200 orders of branch 6f0c0000-0000-4000-8000-0000000000b1
}
