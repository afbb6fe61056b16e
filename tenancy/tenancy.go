// Package tenancy is the net/http middleware between an OAuth access token
// and a tenant's data: it authenticates the bearer token, refuses product
// user tokens, checks the scope a call needs, and resolves the {scopeId}
// segment of the path into a Tenant — the organization, and the branch for
// branch-scoped resources — that it puts in the request's context.
//
//	mw := tenancy.Middleware(tenancy.Options{
//		Verifier:  verifier,           // a *bearer.Verifier
//		Branches:  branches,           // who owns a branch: a small lookup
//		ScopeType: tenancy.Branch,
//		Scope:     tenancy.ReadWrite("svc:orders:read", "svc:orders:write"),
//	})
//	mux.Handle("GET /v1/{scopeId}/orders", mw(listOrders))
//
//	func listOrders(w http.ResponseWriter, r *http.Request) {
//		t, _ := tenancy.FromContext(r.Context())
//		// WHERE organization_id = t.OrganizationID AND branch_id = t.BranchID
//	}
//
// The answers: no token 401
// unauthorized; a bad one 401 invalid_token; a product user token 403
// invalid_token_type; a missing scope 403 insufficient_scope; a {scopeId}
// that is not a UUID, not found, or of another organization 404 not_found
// (another tenant's ids are never confirmed); a branch of the token's own
// organization that a client-credentials token may not use 403
// insufficient_scope.
//
// Tokens are checked by a Verifier, a *bearer.Verifier of package
// oauth/bearer in practice; tenancy imports that small package and not the
// token service (package oauth), its templates or its store.
//
// On a router other than http.ServeMux, say where the scope id is with
// Options.ScopeID (chi.URLParam with chi, whose v5.1 and later also sets
// the path values r.PathValue reads), and mount the middleware where the
// router knows the route's parameters: with chi, in a
// r.Route("/v1/{scopeId}", ...) group or with r.With, never with a
// top-level r.Use, which runs before chi routes the request.
//
//	r.Route("/v1/{scopeId}", func(r chi.Router) {
//		r.Use(tenancy.Middleware(tenancy.Options{
//			Verifier: verifier, Branches: branches, ScopeType: tenancy.Branch,
//			ScopeID: func(r *http.Request) string { return chi.URLParam(r, "scopeId") },
//		}))
//		r.Get("/orders", listOrders)
//	})
//
// A request in which the middleware finds no scope id is a wiring mistake,
// not a missing tenant: it answers 500 server_error, and the log line
// names the fix. Middleware panics when it is built with options it cannot
// work with (no Verifier; no Branches for branch-scoped resources).
//
// Branch lookups go through the Branches interface on every request and
// are never cached here, so an answer is never stale after a branch is
// created or removed; a Branches implementation that caches must keep that
// promise itself.
package tenancy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// ScopeType says what the {scopeId} path segment of a resource names.
type ScopeType uint8

// The scope types: what the {scopeId} path segment names for a resource.
const (
	// Organization: {scopeId} is the token's organization.
	Organization ScopeType = iota + 1
	// Branch: {scopeId} is a branch of the token's organization that the
	// token may use.
	Branch
	// BranchOrNull: as Branch, and the resource also has organization-wide
	// records (branch_id NULL) that every branch sees.
	BranchOrNull
	// OrganizationOrBranch: {scopeId} is the token's organization (the
	// Tenant's BranchID is then empty) or, as for Branch, a branch of it
	// that the token may use. For what spans branches, such as a change
	// feed: the organization path shows every branch the token may use, a
	// branch path one branch.
	OrganizationOrBranch
)

// String returns "organization", "branch", "branch-or-null" or
// "organization-or-branch".
func (s ScopeType) String() string {
	switch s {
	case Organization:
		return "organization"
	case Branch:
		return "branch"
	case BranchOrNull:
		return "branch-or-null"
	case OrganizationOrBranch:
		return "organization-or-branch"
	}
	return fmt.Sprintf("ScopeType(%d)", uint8(s))
}

// Verifier checks a bearer token. A *bearer.Verifier is one.
type Verifier interface {
	Verify(ctx context.Context, token string) (*bearer.Claims, error)
}

// ErrNoBranch is what Branches returns for a branch that does not exist.
var ErrNoBranch = errors.New("tenancy: no such branch")

// Branches answers the two questions tenancy asks about branches.
type Branches interface {
	// Organization returns the organization that owns the branch, or an
	// error wrapping ErrNoBranch.
	Organization(ctx context.Context, branchID string) (string, error)
	// List returns the ids of every branch of the organization.
	List(ctx context.Context, organizationID string) ([]string, error)
}

// Tenant is who a request acts for and on what: the organization, the
// branch of the path, and what the token may do.
type Tenant struct {
	// OrganizationID is the token's organization, which the path named.
	OrganizationID string
	// BranchID is the branch the path named; empty for organization-scoped
	// resources.
	BranchID string
	// Claims are the verified token's claims.
	Claims *bearer.Claims

	branches Branches
}

// Subject is the token's subject: the user of an authorization-code token,
// the app of a client-credentials token.
func (t Tenant) Subject() string { return t.Claims.Subject }

// HasScope reports whether the token carries scope.
func (t Tenant) HasScope(scope string) bool { return t.Claims.HasScope(scope) }

// CoversAllBranches reports whether the token may use every branch of the
// organization: an authorization-code token always may; a
// client-credentials token when its branches include every branch the
// organization has now. Writing organization-wide data needs it — any
// record of an organization-scoped resource, and an organization-wide
// record of a branch-or-null one — so that a branch-restricted token never
// changes what other branches see.
//
// A Tenant that Middleware did not resolve knows no branches: give it the
// lookup with WithBranches, or NewContext takes the one of the tenant
// already in the context. Without one, a client-credentials token's answer
// is an error wrapping ErrNoBranches.
func (t Tenant) CoversAllBranches(ctx context.Context) (bool, error) {
	if !t.Claims.ClientCredentials() {
		return true, nil
	}
	if t.branches == nil {
		return false, fmt.Errorf("%w (organization %s)", ErrNoBranches, t.OrganizationID)
	}
	all, err := t.branches.List(ctx, t.OrganizationID)
	if err != nil {
		return false, fmt.Errorf("tenancy: list branches: %w", err)
	}
	for _, b := range all {
		if !slices.Contains(t.Claims.BranchIDs, b) {
			return false, nil
		}
	}
	return true, nil
}

type contextKey struct{}

// ErrNoBranches is the error of CoversAllBranches for a Tenant that has no
// branch lookup.
var ErrNoBranches = errors.New("tenancy: the tenant has no branch lookup; build it with Tenant.WithBranches")

// WithBranches returns t with the branch lookup that CoversAllBranches
// asks, for a Tenant built outside Middleware (in a test, or by a
// middleware of its own).
func (t Tenant) WithBranches(b Branches) Tenant {
	t.branches = b
	return t
}

// NewContext returns ctx carrying t. A t without a branch lookup takes the
// one of the Tenant already in ctx, if any, so that a middleware that
// narrows or replaces the tenant keeps CoversAllBranches working.
func NewContext(ctx context.Context, t Tenant) context.Context {
	if t.branches == nil {
		if prev, ok := FromContext(ctx); ok {
			t.branches = prev.branches
		}
	}
	return context.WithValue(ctx, contextKey{}, t)
}

// FromContext returns the Tenant that Middleware put in ctx.
func FromContext(ctx context.Context) (Tenant, bool) {
	t, ok := ctx.Value(contextKey{}).(Tenant)
	return t, ok
}

// ScopeFunc returns the scope a request needs.
type ScopeFunc func(r *http.Request) string

// ReadWrite returns a ScopeFunc that asks read for GET and HEAD and write
// for every other method. Write does not imply read.
func ReadWrite(read, write string) ScopeFunc {
	return func(r *http.Request) string {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return read
		}
		return write
	}
}

// Options configure Middleware.
type Options struct {
	// Verifier checks the bearer token. Required.
	Verifier Verifier
	// Branches resolves branches. Required for every ScopeType but
	// Organization.
	Branches Branches
	// ScopeType says what {scopeId} names. Required.
	ScopeType ScopeType
	// Scope returns the scope the request needs; nil means none.
	Scope ScopeFunc
	// PathValue names the path wildcard that holds the scope id ("" means
	// "scopeId", as in /v1/{scopeId}/orders).
	PathValue string
	// ScopeID returns the scope id of a request, for routers other than
	// http.ServeMux, whose path parameters r.PathValue does not see; with
	// chi: func(r *http.Request) string { return chi.URLParam(r, "scopeId") }.
	// nil means r.PathValue(PathValue). Set PathValue or ScopeID, not both.
	ScopeID func(r *http.Request) string
	// Logger receives the requests the middleware failed to serve (a
	// wiring mistake, a branch lookup that failed); nil means
	// slog.Default.
	Logger *slog.Logger
	// Realm is the realm of the WWW-Authenticate challenges of refused
	// tokens; "" means none.
	Realm string
	// ResourceMetadata is the URL of the API's protected resource
	// metadata (RFC 9728), given in the resource_metadata parameter of
	// the Bearer challenges; "" means none.
	ResourceMetadata string
}

// check panics when the options cannot work: it runs when Middleware is
// built, so that a wiring mistake stops the program at start-up instead of
// failing every request.
func (o *Options) check() {
	switch {
	case o.Verifier == nil:
		panic("tenancy: Options.Verifier is required")
	case o.ScopeType < Organization || o.ScopeType > OrganizationOrBranch:
		panic(fmt.Sprintf("tenancy: Options.ScopeType %v is not Organization, Branch, BranchOrNull or OrganizationOrBranch", o.ScopeType))
	case o.ScopeType != Organization && o.Branches == nil:
		panic(fmt.Sprintf("tenancy: Options.Branches is required for %v resources", o.ScopeType))
	case o.ScopeID != nil && o.PathValue != "":
		panic("tenancy: set Options.PathValue or Options.ScopeID, not both")
	}
}

// scopeIDFunc returns how the middleware reads the scope id.
func (o *Options) scopeIDFunc() func(r *http.Request) string {
	if o.ScopeID != nil {
		return o.ScopeID
	}
	name := cmp.Or(o.PathValue, "scopeId")
	return func(r *http.Request) string { return r.PathValue(name) }
}

// errNoScopeID is the cause, for the log, of the 500 of a request in which
// the middleware finds no scope id.
func errNoScopeID(o *Options) error {
	if o.ScopeID != nil {
		return errors.New("tenancy: Options.ScopeID found no scope id in the request; mount the middleware where the router knows the route's parameters (with chi, inside r.Route(\"/v1/{scopeId}\", ...) or with r.With, not with a top-level r.Use)")
	}
	return fmt.Errorf("tenancy: the request has no {%s} path value; mount the middleware on an http.ServeMux pattern with {%[1]s}, or set Options.ScopeID for another router (with chi: func(r *http.Request) string { return chi.URLParam(r, %[1]q) })", cmp.Or(o.PathValue, "scopeId"))
}

// Middleware authenticates the request, checks its scope, resolves its
// tenant and calls next with the Tenant in the request's context. Every
// refusal is written with an apierrors.Writer of opts.Logger,
// opts.Realm and opts.ResourceMetadata.
//
// It panics when opts lack what it needs (see Options).
func Middleware(opts Options) func(http.Handler) http.Handler {
	opts.check()
	scopeID := opts.scopeIDFunc()
	errw := apierrors.Writer{Logger: opts.Logger, Realm: opts.Realm, ResourceMetadata: opts.ResourceMetadata}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := scopeID(r)
			if id == "" {
				errw.Write(w, r, apierrors.Internal(errNoScopeID(&opts)))
				return
			}
			t, err := opts.resolve(r, id)
			if err != nil {
				errw.Write(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), t)))
		})
	}
}

// Authenticate checks the bearer token of r: 401 unauthorized without one,
// 401 invalid_token for a bad one, 403 invalid_token_type for a product
// user token.
func Authenticate(r *http.Request, v Verifier) (*bearer.Claims, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, apierrors.Unauthorized("an Authorization: Bearer token is required")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, apierrors.InvalidToken("the Authorization header must be Bearer <token>")
	}
	c, err := v.Verify(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return nil, err
	}
	if !c.OAuth() {
		return nil, apierrors.InvalidTokenType("the API takes OAuth access tokens, not product user tokens")
	}
	return c, nil
}

func (o *Options) resolve(r *http.Request, scopeID string) (Tenant, error) {
	c, err := Authenticate(r, o.Verifier)
	if err != nil {
		return Tenant{}, err
	}
	if o.Scope != nil {
		if need := o.Scope(r); need != "" && !c.HasScope(need) {
			return Tenant{}, apierrors.InsufficientScope(need, "the token lacks the scope %s", need)
		}
	}
	id, ok := canonicalUUID(scopeID)
	if !ok {
		return Tenant{}, notFound()
	}
	t := Tenant{OrganizationID: c.OrganizationID, Claims: c, branches: o.Branches}
	if o.ScopeType == Organization {
		if id != c.OrganizationID {
			return Tenant{}, notFound()
		}
		return t, nil
	}
	if id == c.OrganizationID && o.ScopeType == OrganizationOrBranch {
		return t, nil
	}
	if id == c.OrganizationID {
		// The token's own organization: saying so reveals nothing.
		return Tenant{}, apierrors.NotFound("this resource is kept per branch: give the id of a branch of your organization in the path, not the organization's")
	}
	org, err := o.Branches.Organization(r.Context(), id)
	switch {
	case errors.Is(err, ErrNoBranch):
		return Tenant{}, notFound()
	case err != nil:
		return Tenant{}, apierrors.Internal(fmt.Errorf("tenancy: resolve branch: %w", err))
	case org != c.OrganizationID:
		return Tenant{}, notFound()
	case c.ClientCredentials() && len(c.BranchIDs) == 0:
		return Tenant{}, apierrors.InsufficientScope("", "the token may not use this branch: its app was registered with no branches, so its tokens reach none")
	case c.ClientCredentials() && !slices.Contains(c.BranchIDs, id):
		return Tenant{}, apierrors.InsufficientScope("", "the token may not use this branch")
	}
	t.BranchID = id
	return t, nil
}

func notFound() error {
	return apierrors.NotFound("no such organization or branch")
}

// canonicalUUID accepts the 8-4-4-4-12 hex form in either case and returns
// it in lower case. query.CanonicalUUID is the same rule; tenancy keeps its
// own copy so that it depends on nothing but the verifier and the errors
// (no squirrel for a service that wants only this middleware).
func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return "", false
		}
	}
	return strings.ToLower(s), true
}
