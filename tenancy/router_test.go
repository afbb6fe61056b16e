package tenancy_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
)

// branchOf answers with the tenant's branch.
var branchOf = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	t, _ := tenancy.FromContext(r.Context())
	_, _ = w.Write([]byte(t.BranchID))
})

func chiScopeID(r *http.Request) string { return chi.URLParam(r, "scopeId") }

// TestChiRouter mounts the middleware on a chi router: in a route group it
// resolves the tenant as on a ServeMux; with a top-level r.Use, where chi
// knows no route parameters yet, it answers 500 and logs the fix instead
// of a 404 that blames the data.
func TestChiRouter(t *testing.T) {
	t.Parallel()
	log, logger := captureLog()
	s := newSigner(t)
	token := s.sign(t, bearer.Claims{OrganizationID: orgA, ClientID: "c", Scopes: []string{"svc:orders:read"}})
	opts := func(scopeID func(*http.Request) string) tenancy.Options {
		return tenancy.Options{
			Verifier: &bearer.Verifier{Keys: s.keys, Issuer: "https://i.test"}, Branches: branches, ScopeType: tenancy.Branch,
			Scope: tenancy.ReadWrite("svc:orders:read", "svc:orders:write"), ScopeID: scopeID, Logger: logger,
		}
	}
	grouped := func(o tenancy.Options) http.Handler {
		r := chi.NewRouter()
		r.Route("/v1/{scopeId}", func(r chi.Router) {
			r.Use(tenancy.Middleware(o))
			r.Get("/orders", branchOf)
		})
		return r
	}
	topLevel := func(o tenancy.Options) http.Handler {
		r := chi.NewRouter()
		r.Use(tenancy.Middleware(o))
		r.Get("/v1/{scopeId}/orders", branchOf)
		return r
	}
	tests := []struct {
		name    string
		handler http.Handler
		path    string
		want    int
		body    string
		log     string
	}{
		{"group with ScopeID", grouped(opts(chiScopeID)), "/v1/" + a1 + "/orders", http.StatusOK, a1, ""},
		{"group with ScopeID, another organization's branch", grouped(opts(chiScopeID)), "/v1/" + b1 + "/orders", http.StatusNotFound, `"not_found"`, ""},
		// chi (since v5.1) also sets the path values r.PathValue reads.
		{"group without ScopeID", grouped(opts(nil)), "/v1/" + a1 + "/orders", http.StatusOK, a1, ""},
		{"top-level r.Use without ScopeID", topLevel(opts(nil)), "/v1/" + a1 + "/orders", http.StatusInternalServerError, `"server_error"`, "chi.URLParam"},
		{"top-level r.Use with ScopeID", topLevel(opts(chiScopeID)), "/v1/" + a1 + "/orders", http.StatusInternalServerError, `"server_error"`, "not with a top-level r.Use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log.Reset()
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, req)
			assert.Equal(t, tt.want, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tt.body)
			if tt.log != "" {
				assert.Contains(t, log.String(), tt.log)
			}
		})
	}
}

// TestNoScopeIDOnServeMux: a ServeMux pattern without the wildcard the
// middleware reads is a wiring mistake too.
func TestNoScopeIDOnServeMux(t *testing.T) {
	t.Parallel()
	log, logger := captureLog()
	s := newSigner(t)
	mux := http.NewServeMux()
	mux.Handle("/v1/{branchId}/orders", tenancy.Middleware(tenancy.Options{
		Verifier: &bearer.Verifier{Keys: s.keys, Issuer: "https://i.test"}, Branches: branches, ScopeType: tenancy.Branch,
		Logger: logger,
	})(branchOf))
	req := httptest.NewRequest(http.MethodGet, "/v1/"+a1+"/orders", nil)
	req.Header.Set("Authorization", "Bearer "+s.sign(t, bearer.Claims{OrganizationID: orgA, ClientID: "c"}))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, log.String(), "no {scopeId} path value")
	assert.Contains(t, log.String(), "Options.ScopeID")
}

// captureLog returns a logger for the middleware's Options and the buffer
// its JSON lines go to.
func captureLog() (*bytes.Buffer, *slog.Logger) {
	var buf bytes.Buffer
	return &buf, slog.New(slog.NewJSONHandler(&buf, nil))
}

// TestMiddlewareChecksOptions: options the middleware cannot work with
// panic when it is built, not on every request.
func TestMiddlewareChecksOptions(t *testing.T) {
	t.Parallel()
	v := &bearer.Verifier{Keys: newSigner(t).keys, Issuer: "https://i.test"}
	tests := []struct {
		name  string
		opts  tenancy.Options
		panic string
	}{
		{"no verifier", tenancy.Options{Branches: branches, ScopeType: tenancy.Branch}, "Verifier is required"},
		{"no scope type", tenancy.Options{Verifier: v, Branches: branches}, "is not Organization, Branch, BranchOrNull or OrganizationOrBranch"},
		{"branch without branches", tenancy.Options{Verifier: v, ScopeType: tenancy.Branch}, "Branches is required for branch resources"},
		{"branch-or-null without branches", tenancy.Options{Verifier: v, ScopeType: tenancy.BranchOrNull}, "Branches is required for branch-or-null resources"},
		{"PathValue and ScopeID", tenancy.Options{Verifier: v, ScopeType: tenancy.Organization, PathValue: "org", ScopeID: chiScopeID}, "not both"},
		{"organization without branches", tenancy.Options{Verifier: v, ScopeType: tenancy.Organization}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			build := func() { tenancy.Middleware(tt.opts) }
			if tt.panic == "" {
				assert.NotPanics(t, build)
				return
			}
			assert.PanicsWithValue(t, panicValue(t, build), build)
			assert.Contains(t, panicValue(t, build), tt.panic)
		})
	}
}

func panicValue(t *testing.T, f func()) (v string) {
	t.Helper()
	defer func() { v, _ = recover().(string) }()
	f()
	return ""
}

// TestNewContextCoversAllBranches: a Tenant put in a context by hand never
// panics in CoversAllBranches; it takes the branch lookup of the tenant
// already in the context, or of WithBranches, and without one it is an
// error.
func TestNewContextCoversAllBranches(t *testing.T) {
	t.Parallel()
	cc := &bearer.Claims{Audience: bearer.Audience, Role: bearer.Role, OrganizationID: orgA, ClientID: "c", BranchIDs: []string{a1, a2}, AppName: "Sync"}
	code := &bearer.Claims{Audience: bearer.Audience, Role: bearer.Role, OrganizationID: orgA, ClientID: "c"}
	resolved := context.Background()
	resolved = tenancy.NewContext(resolved, tenancy.Tenant{OrganizationID: orgA, Claims: cc}.WithBranches(branches))
	tests := []struct {
		name    string
		ctx     context.Context
		tenant  tenancy.Tenant
		want    bool
		wantErr error
	}{
		{"authorization code, no lookup", context.Background(), tenancy.Tenant{OrganizationID: orgA, Claims: code}, true, nil},
		{"client credentials, no lookup", context.Background(), tenancy.Tenant{OrganizationID: orgA, Claims: cc}, false, tenancy.ErrNoBranches},
		{"client credentials, WithBranches", context.Background(), tenancy.Tenant{OrganizationID: orgA, Claims: cc}.WithBranches(branches), true, nil},
		{"client credentials, lookup of the tenant in the context", resolved, tenancy.Tenant{OrganizationID: orgA, Claims: cc}, true, nil},
		{"narrowed token", resolved, tenancy.Tenant{OrganizationID: orgA, Claims: &bearer.Claims{Audience: bearer.Audience, Role: bearer.Role, OrganizationID: orgA, ClientID: "c", BranchIDs: []string{a1}, AppName: "Sync"}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tenancy.FromContext(tenancy.NewContext(tt.ctx, tt.tenant))
			require.True(t, ok)
			all, err := got.CoversAllBranches(context.Background())
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, all)
		})
	}
}
