package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// service is the fleet service: its database, its resource registry, and
// the two middlewares in front of its hand-written routes.
type service struct {
	db       *sql.DB
	branches branches
	registry *resource.Registry
	// tenant authenticates the request and resolves {scopeId} as the
	// token's organization; limit counts the request against that
	// organization's quota. Both are plain func(http.Handler) http.Handler.
	tenant, limit func(http.Handler) http.Handler
}

// newService returns the service over db. Tokens are checked by verifier;
// each organization may make perMinute requests a minute to the API, the
// registry's routes and the fleet report together (0: unlimited).
func newService(db *sql.DB, verifier tenancy.Verifier, perMinute int) (*service, error) {
	s := &service{db: db, branches: branches{db}}
	s.tenant = tenancy.Middleware(tenancy.Options{
		Verifier:  verifier,
		Branches:  s.branches,
		ScopeType: tenancy.Organization,
		// A ScopeFunc: the report reads drivers, so it needs their read scope.
		Scope: func(*http.Request) string { return "svc:drivers:read" },
	})
	limiter := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	s.limit = ratelimit.Middleware(limiter, ratelimit.Limit{Name: "fleet", Quota: perMinute, Window: time.Minute}, byOrganization)
	s.registry = &resource.Registry{
		DB: db, Dialect: query.SQLite, Verifier: verifier, Branches: s.branches,
		Middleware: s.limit, // runs after tenancy, like ours below
	}
	if err := s.registry.Register(drivers()); err != nil {
		return nil, err
	}
	return s, nil
}

// byOrganization keys a request by the organization that tenancy
// resolved. The limit runs after tenancy, so the key is a verified
// organization, and requests that tenancy refuses are not counted.
func byOrganization(r *http.Request) (string, bool) {
	t, ok := tenancy.FromContext(r.Context())
	return t.OrganizationID, ok
}

// drivers is the service's own resource: the drivers of an organization,
// at /v1/{organization id}/drivers, with svc:drivers:read and :write.
func drivers() *resource.Resource {
	return &resource.Resource{
		Name: "drivers", ScopeType: tenancy.Organization,
		Description: "The drivers of the organization's fleet.",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true, MaxLength: 200,
				Description: "Full name."},
			{Name: "license_class", Type: query.Enum, Values: []string{"B", "C", "CE"}, Create: true, Update: true, Required: true, Filterable: true, Sortable: true,
				Description: "Driving licence class."},
			{Name: "active", Type: query.Boolean, Create: true, Update: true, Filterable: true,
				Description: "Whether the driver is on the rosters; true unless set."},
		},
	}
}

// newMux returns the routes on a plain http.ServeMux.
func (s *service) newMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", health)
	mux.Handle("GET /v1/{scopeId}/fleet-report", s.tenant(s.limit(http.HandlerFunc(s.fleetReport))))
	s.registry.Mount(mux) // /v1/{scopeId}/drivers[/{id}] and /api/v1/...
	return mux
}

// newChi returns the same routes on chi. The middlewares go on the route
// with With, not on the router with Use: tenancy reads r.PathValue, which
// chi sets once it has matched the route. The registry mounts on a
// ServeMux, which chi serves under the registry's prefixes.
func (s *service) newChi() http.Handler {
	r := chi.NewRouter()
	r.Get("/health", health)
	r.With(s.tenant, s.limit).Get("/v1/{scopeId}/fleet-report", s.fleetReport)
	api := http.NewServeMux()
	s.registry.Mount(api)
	r.Handle("/v1/*", api)
	r.Handle("/api/v1/*", api)
	return r
}

// health answers liveness probes; it needs no token.
func health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// report is the fleet report of one organization.
type report struct {
	OrganizationID string   `json:"organization_id"`
	ClientID       string   `json:"client_id"` // the app that asked
	Branches       []string `json:"branches"`
	Drivers        int      `json:"drivers"`
	ActiveDrivers  int      `json:"active_drivers"`
}

// fleetReport is a hand-written handler behind the middlewares: it reads
// the tenant from the context and answers for that organization only.
func (s *service) fleetReport(w http.ResponseWriter, r *http.Request) {
	t, ok := tenancy.FromContext(r.Context())
	if !ok {
		apierrors.Write(w, r, apierrors.Internal(errors.New("fleet report served without the tenancy middleware")))
		return
	}
	rep := report{OrganizationID: t.OrganizationID, ClientID: t.Claims.ClientID}
	var err error
	if rep.Branches, err = s.branches.List(r.Context(), t.OrganizationID); err != nil {
		apierrors.Write(w, r, apierrors.Internal(err))
		return
	}
	err = s.db.QueryRowContext(r.Context(),
		`SELECT COUNT(*), COALESCE(SUM(active), 0) FROM drivers WHERE organization_id = ?`, t.OrganizationID,
	).Scan(&rep.Drivers, &rep.ActiveDrivers)
	if err != nil {
		apierrors.Write(w, r, apierrors.Internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": rep})
}

// branches is the service's branches table, as tenancy asks about it.
type branches struct{ db *sql.DB }

// Organization returns the organization of a branch, or tenancy.ErrNoBranch.
func (b branches) Organization(ctx context.Context, id string) (string, error) {
	var org string
	err := b.db.QueryRowContext(ctx, `SELECT organization_id FROM branches WHERE id = ?`, id).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", tenancy.ErrNoBranch
	}
	return org, err
}

// List returns the branch ids of an organization, in order.
func (b branches) List(ctx context.Context, org string) ([]string, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT id FROM branches WHERE organization_id = ? ORDER BY id`, org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
