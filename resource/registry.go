package resource

import (
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// Version is the API version every envelope carries.
const Version = "v1"

// defaultPrefixes are the path prefixes the routes are mounted under when
// Registry.Prefixes is nil: /v1 and its alias /api/v1.
var defaultPrefixes = []string{"/v1", "/api/v1"}

// Registry holds the resources of an API and serves them. DB, Dialect,
// Verifier and Branches are required; the rest have useful zero values.
// Mount, and the components configured from the registry (events.Feed,
// webhook.API) when they mount, read its fields once: set them all first.
type Registry struct {
	// DB is the database of every resource's table. Give a SQLite
	// database one connection (db.SetMaxOpenConns(1)): SQLite has one
	// writer, and write transactions begun on several connections at once
	// fail with SQLITE_BUSY instead of waiting for each other. When other
	// processes write the same file, begin transactions with BEGIN
	// IMMEDIATE (modernc.org/sqlite's _txlock=immediate), so that one that
	// reads then writes waits for their writes instead of failing; the
	// snapshot of an export begins read only and takes no write lock.
	DB *sql.DB
	// Dialect is DB's SQL dialect.
	Dialect query.Dialect
	// Verifier checks bearer tokens (a *bearer.Verifier).
	Verifier tenancy.Verifier
	// Branches resolves branches for tenancy.
	Branches tenancy.Branches
	// Now is the clock of created_at and updated_at; nil means time.Now.
	Now func() time.Time
	// Prefixes are the path prefixes to mount under; nil means /v1 and
	// /api/v1.
	Prefixes []string
	// Middleware wraps every route of the API after tenancy has resolved
	// the tenant, e.g. rate limiting per organization; nil means none.
	Middleware func(http.Handler) http.Handler
	// Logger receives the requests the API failed to serve (status 500
	// and above, and those the client abandoned); nil means slog.Default.
	Logger *slog.Logger
	// Realm is the realm of the WWW-Authenticate challenges of refused
	// tokens; "" means none.
	Realm string
	// ResourceMetadata is the URL of the API's protected resource
	// metadata (RFC 9728), given in the resource_metadata parameter of
	// the Bearer challenges; "" means none.
	ResourceMetadata string
	// ScopeNames names the read and write scopes of each resource; nil
	// means DefaultScopeNames (svc:<resource>:read and :write). Set it
	// before Register.
	ScopeNames ScopeNames
	// CursorKey authenticates the cursors of cursor pages (after=, see
	// Registry.Mount): at least query.MinCursorKeyLength secret random
	// bytes, the same on every replica, set before Register. Nil means a
	// key derived from the Verifier's signing key when the Verifier is a
	// *bearer.Verifier with Keys (bearer.KeySet.Derive with the purpose
	// "resource/cursors"), the same on every replica that shares the key;
	// rotating the signing key then ends the cursors given before (a
	// client gets 400 and starts its walk again). A registry with neither
	// cannot authenticate cursors, and Mount panics rather than make a key
	// that another replica would not know.
	CursorKey []byte
	// IdempotencyTTL is how long the answer of a write sent with an
	// Idempotency-Key is kept for its retries; zero means
	// DefaultIdempotencyTTL (24 hours). The keys need the table that
	// Migrate creates.
	IdempotencyTTL time.Duration
	// Outbox, when set, is told of every create, update and delete inside
	// the write's transaction (see Outbox); nil means writes are recorded
	// nowhere else.
	Outbox Outbox
	// History, when set, keeps the history of every record: an entry of
	// each create, update and delete, with the values of the fields it
	// changed before and after, stored in the write's transaction, and
	// served at {prefix}/{scopeId}/{resource}/{id}/history for every
	// resource that is not ReadOnly (see History; SQLHistory keeps it in
	// DB). Nil means no history, and no such route.
	History History
	// ChargeExtra, when set, counts a batch write against the rate limits
	// that Middleware applied: a batch of n items counts as
	// ceil(n/ItemsPerRequest) requests, the one it is and extra more,
	// which ChargeExtra charges once the body is read and before anything
	// is written. An error it returns (429 rate_limited) refuses the batch
	// and is answered as it is. The ChargeMore of a ratelimit.Gate is one. Nil means a
	// batch counts as one request.
	ChargeExtra func(w http.ResponseWriter, r *http.Request, extra int) error
	// ExportTimeout bounds an export (a list asked for as NDJSON or CSV)
	// from the moment it begins to answer; zero means
	// DefaultExportTimeout (10 minutes). Until it answers, the request's
	// own deadline bounds it; each write to the client must be done
	// within ExportWriteTimeout. A server's http.Server.WriteTimeout does
	// not cut an export short: each write sets its own deadline.
	ExportTimeout time.Duration
	// ExportsAtOnce is the most exports the registry serves at once, each
	// holding a database connection while it runs; zero means
	// DefaultExportsAtOnce (4). One organization may run at most half of
	// them (at least one) at once. One export more is refused, 503 when
	// the registry is full, 429 when the organization is; a client retries
	// once one has ended. Keep it well below the database pool's size.
	ExportsAtOnce int
	// RowReader, when set, reads the rows of exports and the pages of
	// lists on the database driver's own connection, much faster than
	// through database/sql (see RowReader; pgxrows.Reader reads PostgreSQL
	// through pgx); nil, or a reader that does not read from the
	// registry's driver, means database/sql.
	RowReader RowReader
	// AfterCommit, when set, is called with each change the Outbox (or
	// the History) recorded, once its transaction has committed: to wake
	// what delivers the changes (a webhook dispatcher) without waiting for
	// its next poll. It runs on the request's goroutine and must not block.
	AfterCommit func(c *Change)

	resources []*Resource
	noCursors []string // the resources registered without a cursor key
	exports   exportSlots
}

// CursorPurpose is the purpose under which a Registry without a CursorKey
// derives one from its Verifier's signing key (bearer.KeySet.Derive).
const CursorPurpose = "resource/cursors"

// cursorKey returns CursorKey, or the key derived from the Verifier's
// signing key; nil when there is neither.
func (g *Registry) cursorKey() ([]byte, error) {
	if g.CursorKey != nil {
		if len(g.CursorKey) < query.MinCursorKeyLength {
			return nil, fmt.Errorf("resource: CursorKey has %d bytes; it needs at least %d", len(g.CursorKey), query.MinCursorKeyLength)
		}
		return g.CursorKey, nil
	}
	if v, ok := g.Verifier.(*bearer.Verifier); ok && v != nil && v.Keys != nil {
		return v.Keys.Derive(CursorPurpose), nil
	}
	return nil, nil
}

// Register checks and adds resources. A resource that does not compile (a
// bad field, a reference to an unregistered resource) is an error.
func (g *Registry) Register(rs ...*Resource) error {
	for _, r := range rs {
		if g.Resource(r.Name) != nil {
			return fmt.Errorf("resource %s: registered twice", r.Name)
		}
		key, err := g.cursorKey()
		if err != nil {
			return err
		}
		if err := r.compile(key); err != nil {
			return err
		}
		names := g.ScopeNames
		if names == nil {
			names = DefaultScopeNames
		}
		if r.readScope, r.writeScope = names(r.Name); r.readScope == "" || r.writeScope == "" {
			return fmt.Errorf("resource %s: ScopeNames gives it no read or no write scope", r.Name)
		}
		if key == nil {
			g.noCursors = append(g.noCursors, r.Name)
		}
		g.resources = append(g.resources, r)
	}
	for _, r := range g.resources {
		for _, f := range r.fields {
			if f.References != "" && g.Resource(f.References) == nil {
				return fmt.Errorf("resource %s: field %s references %s, which is not registered", r.Name, f.Name, f.References)
			}
		}
	}
	return nil
}

// Resources returns the registered resources in the order of registration.
func (g *Registry) Resources() []*Resource { return g.resources }

// Resource returns the registered resource with name, or nil.
func (g *Registry) Resource(name string) *Resource {
	for _, r := range g.resources {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// PathPrefixes returns the path prefixes the routes are mounted under:
// Prefixes, or /v1 and /api/v1 when it is nil. The change feed and the
// webhook endpoints of the registry mount under the same.
func (g *Registry) PathPrefixes() []string { return g.prefixes() }

func (g *Registry) prefixes() []string {
	if g.Prefixes != nil {
		return g.Prefixes
	}
	return defaultPrefixes
}

func (g *Registry) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Mount registers the routes of every resource on mux, under every prefix:
//
//	GET    {prefix}/{scopeId}/{resource}        list
//	POST   {prefix}/{scopeId}/{resource}        create (one object or an array), upsert
//	PATCH  {prefix}/{scopeId}/{resource}        update an array of records
//	GET    {prefix}/{scopeId}/{resource}/{id}   get
//	PATCH  {prefix}/{scopeId}/{resource}/{id}   update
//	DELETE {prefix}/{scopeId}/{resource}/{id}   delete
//	GET    {prefix}/{scopeId}/{resource}/{id}/history  the record's history (History set, resource not ReadOnly)
//
// Other methods, and every write to a read-only resource, get 405 with an
// Allow header. Mount panics when the registry has no Verifier, or no
// Branches while a resource is branch-scoped (see tenancy.Middleware), or
// when a resource was registered without a cursor key (see CursorKey).
func (g *Registry) Mount(mux *http.ServeMux) {
	if len(g.noCursors) > 0 {
		panic(fmt.Sprintf("resource: %s registered without a cursor key: set Registry.CursorKey (at least %d secret random bytes, "+
			"the same on every replica) before Register, or give a *bearer.Verifier with Keys to derive it from",
			strings.Join(g.noCursors, ", "), query.MinCursorKeyLength))
	}
	ew := g.ErrorWriter()
	for _, r := range g.resources {
		mw := tenancy.Middleware(tenancy.Options{
			Verifier: g.Verifier, Branches: g.Branches, ScopeType: r.ScopeType,
			Scope:  tenancy.ReadWrite(r.ReadScope(), r.WriteScope()),
			Logger: g.Logger, Realm: g.Realm, ResourceMetadata: g.ResourceMetadata,
		})
		h := newHandlers(g, r)
		h.historyKey, _ = g.cursorKey() // checked by Register
		// A write's Idempotency-Key is looked up after Middleware: a
		// replay is a request, which a rate limit counts and may refuse.
		// limit is the largest body of an idempotent route: a batch's on
		// the collection, MaxBodyBytes on a record.
		wrap := func(f apierrors.HandlerFunc, limit int) http.Handler {
			next := ew.Handle(f)
			if limit > 0 {
				next = h.idempotency(next, limit)
			}
			if g.Middleware != nil {
				next = g.Middleware(next)
			}
			return mw(next)
		}
		collectionAllow, itemAllow := []string{"GET", "HEAD", "POST", "PATCH"}, []string{"GET", "HEAD", "PATCH", "DELETE"}
		if r.ReadOnly {
			collectionAllow, itemAllow = []string{"GET", "HEAD"}, []string{"GET", "HEAD"}
		}
		for _, p := range g.prefixes() {
			collection := p + "/{scopeId}/" + r.Name
			item := collection + "/{id}"
			mux.Handle("GET "+collection, wrap(h.list, 0))
			mux.Handle("GET "+item, wrap(h.get, 0))
			if !r.ReadOnly {
				mux.Handle("POST "+collection, wrap(h.create, MaxBatchBytes))
				mux.Handle("PATCH "+collection, wrap(h.updateBatch, MaxBatchBytes))
				mux.Handle("PATCH "+item, wrap(h.update, MaxBodyBytes))
				mux.Handle("DELETE "+item, wrap(h.delete, 0))
			}
			mux.Handle(collection, methodNotAllowed(ew, collectionAllow))
			mux.Handle(item, methodNotAllowed(ew, itemAllow))
			if g.History != nil && !r.ReadOnly {
				mux.Handle("GET "+item+"/history", wrap(h.history, 0))
				mux.Handle(item+"/history", methodNotAllowed(ew, []string{"GET", "HEAD"}))
			}
		}
	}
}

// methodNotAllowed answers every request with 405 and an Allow header
// that lists allow, through ew.
func methodNotAllowed(ew apierrors.Writer, allow []string) http.Handler {
	err := apierrors.MethodNotAllowed(allow...)
	return ew.Handle(func(http.ResponseWriter, *http.Request) error { return err })
}

// ErrorWriter returns the apierrors.Writer that answers the errors of the
// registry's handlers, and of the components configured from it (the
// change feed, the webhook endpoints): its Logger, Realm and
// ResourceMetadata.
func (g *Registry) ErrorWriter() apierrors.Writer {
	return apierrors.Writer{Logger: g.Logger, Realm: g.Realm, ResourceMetadata: g.ResourceMetadata}
}

// tenantWhere returns the condition that keeps a statement inside the
// tenant, for the resource's scope type, with ? placeholders.
func tenantWhere(r *Resource, t tenancy.Tenant) (string, []any) {
	switch r.ScopeType {
	case tenancy.Branch:
		return OrganizationColumn + " = ? AND " + BranchColumn + " = ?", []any{t.OrganizationID, t.BranchID}
	case tenancy.BranchOrNull:
		return OrganizationColumn + " = ? AND (" + BranchColumn + " = ? OR " + BranchColumn + " IS NULL)", []any{t.OrganizationID, t.BranchID}
	}
	return OrganizationColumn + " = ?", []any{t.OrganizationID}
}
