package webhook

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// The scopes of the endpoints API: read for GET (and HEAD), write for
// every other method. Write does not imply read.
const (
	ScopeRead  = "svc:webhooks:read"
	ScopeWrite = "svc:webhooks:write"
)

// DefaultMaxEndpoints is how many endpoints an organization may have when
// API.MaxEndpoints is zero.
const DefaultMaxEndpoints = 50

// MaxBodyBytes is the largest request body the endpoints API accepts:
// 64 KiB; a larger one is answered 413.
const MaxBodyBytes = 64 << 10

// MaxEventTypes is how many event types one endpoint may list.
const MaxEventTypes = 50

// The limits of a page of deliveries.
const (
	defaultDeliveryLimit = 50
	maxDeliveryLimit     = 100
	maxEndpointLimit     = 100
)

// apiVersion is the version every envelope carries, as the resource API's.
const apiVersion = resource.Version

// API serves the webhook endpoints of organizations: an organization
// registers the URLs the dispatcher delivers its events to, with the event
// types and, optionally, the branches each gets, lists the deliveries of
// an endpoint and sends one again. It is configured from the
// resource.Registry whose events it delivers (Registry is required); the
// other fields have useful zero values. Mount serves the routes and
// OpenAPI describes them; the package documentation states the rules
// ("The endpoints API").
type API struct {
	// Registry is the API whose organizations' endpoints this serves,
	// configured once: its database (DB, Dialect; the tables of Migrate
	// and of the events), tokens (Verifier), branches, resources (whose
	// names give the event types and whose read scopes what a token may
	// subscribe to), path prefixes, Middleware (rate limits, after tenancy
	// resolved the tenant), Logger, Realm, ResourceMetadata and
	// IdempotencyTTL (the keys are shared with the resources). Required.
	Registry *resource.Registry
	// Guard checks endpoint URLs; the zero Guard refuses every address
	// that is not public.
	Guard Guard
	// Sealer encrypts the signing secrets at rest; nil keeps them in clear
	// in the database (with an empty secret_key_id), for development only.
	Sealer Sealer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxEndpoints is how many endpoints one organization may have; 0
	// means DefaultMaxEndpoints.
	MaxEndpoints int
	// Wake, when set, is called after an action queued deliveries (a test
	// event, a recovery), so that they leave at once rather than at the
	// dispatcher's next poll: a server gives its Dispatcher.Wake.
	Wake func()
	// EventRetention is how long the events are kept (the retention the
	// server purges them with): a recovery may not start further back. 0:
	// once retention has removed some of an organization's events, a
	// recovery may not start before the oldest event kept.
	EventRetention time.Duration
	// Audit records the creation, change and deletion of endpoints in the
	// organization's audit log (package audit; its table must exist, see
	// auditdb.Migrate), in the transaction of each write.
	Audit bool
}

func (a *API) prefixes() []string { return a.Registry.PathPrefixes() }

// now returns the time of the API's clock, in UTC, to the microsecond both
// databases keep.
func (a *API) now() time.Time {
	n := time.Now
	if a.Now != nil {
		n = a.Now
	}
	return n().UTC().Truncate(time.Microsecond)
}

func (a *API) maxEndpoints() int {
	if a.MaxEndpoints > 0 {
		return a.MaxEndpoints
	}
	return DefaultMaxEndpoints
}

// Mount registers the routes of the API on mux under every prefix (see
// API). It panics when the API has no Verifier.
func (a *API) Mount(mux *http.ServeMux) {
	mw := tenancy.Middleware(tenancy.Options{
		Verifier: a.Registry.Verifier, Branches: a.Registry.Branches, ScopeType: tenancy.Organization,
		Scope: tenancy.ReadWrite(ScopeRead, ScopeWrite), PathValue: "organizationId",
		Logger: a.Registry.Logger, Realm: a.Registry.Realm, ResourceMetadata: a.Registry.ResourceMetadata,
	})
	chain := func(next http.Handler) http.Handler {
		if a.Registry.Middleware != nil {
			next = a.Registry.Middleware(next)
		}
		return mw(next)
	}
	// Every handler returns its error, which the registry's Writer answers.
	ew := a.Registry.ErrorWriter()
	wrap := func(f apierrors.HandlerFunc) http.Handler { return chain(ew.Handle(f)) }
	// A write's Idempotency-Key is looked up after Middleware: a replay is
	// a request, which a rate limit counts and may refuse.
	wrapWrite := func(f apierrors.HandlerFunc) http.Handler { return chain(a.idempotent(ew.Handle(f))) }
	for _, p := range a.prefixes() {
		collection := p + "/{organizationId}/webhook_endpoints"
		item := collection + "/{id}"
		deliveries := item + "/deliveries"
		redeliver := deliveries + "/{delivery_id}/redeliver"
		mux.Handle("GET "+collection, wrap(a.list))
		mux.Handle("POST "+collection, wrapWrite(a.create))
		mux.Handle("GET "+item, wrap(a.get))
		mux.Handle("PATCH "+item, wrapWrite(a.update))
		mux.Handle("DELETE "+item, wrap(a.delete))
		mux.Handle("GET "+deliveries, wrap(a.listDeliveries))
		mux.Handle("POST "+redeliver, wrapWrite(a.redeliver))
		mux.Handle("POST "+item+"/"+actionRotate, wrapWrite(a.rotateSecret))
		mux.Handle(item+"/"+actionRotate, a.methodNotAllowed("POST"))
		mux.Handle("POST "+item+"/"+actionTest, wrapWrite(a.sendTest))
		mux.Handle(item+"/"+actionTest, a.methodNotAllowed("POST"))
		mux.Handle("POST "+item+"/"+actionRecover, wrapWrite(a.recoverEvents))
		mux.Handle(item+"/"+actionRecover, a.methodNotAllowed("POST"))
		mux.Handle(collection, a.methodNotAllowed("GET", "HEAD", "POST"))
		mux.Handle(item, a.methodNotAllowed("GET", "HEAD", "PATCH", "DELETE"))
		mux.Handle(deliveries, a.methodNotAllowed("GET", "HEAD"))
		mux.Handle(redeliver, a.methodNotAllowed("POST"))
	}
}

// methodNotAllowed returns the handler of a route's other methods: 405
// with the Allow header listing allow.
func (a *API) methodNotAllowed(allow ...string) http.Handler {
	err := apierrors.MethodNotAllowed(allow...)
	return a.Registry.ErrorWriter().Handle(func(http.ResponseWriter, *http.Request) error { return err })
}

// tenant returns the tenant that the tenancy middleware resolved.
func tenant(r *http.Request) tenancy.Tenant {
	t, ok := tenancy.FromContext(r.Context())
	if !ok {
		panic("webhook: no tenant in the request context; mount the handlers with API.Mount")
	}
	return t
}

// inTx runs f in a transaction, committed when f returns nil.
func (a *API) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := a.Registry.DB.BeginTx(ctx, nil)
	if err != nil {
		return apierrors.Internal(fmt.Errorf("webhook: begin: %w", err))
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return apierrors.Internal(fmt.Errorf("webhook: commit: %w", err))
	}
	return nil
}

// exec runs b in tx; what names it in the log of a failure.
func (a *API) exec(ctx context.Context, tx *sql.Tx, what string, b sq.Sqlizer) error {
	text, args, err := sqlbuild.SQL(a.Registry.Dialect, b)
	if err != nil {
		return apierrors.Internal(err)
	}
	if _, err := tx.ExecContext(ctx, text, args...); err != nil {
		return dbError(what, err)
	}
	return nil
}

// dbError is the answer of a failed statement.
func dbError(what string, err error) error {
	return apierrors.Internal(fmt.Errorf("webhook: %s: %w", what, err))
}

// resourceNames returns the names of Resources.
func (a *API) resourceNames() []string {
	names := make([]string, len(a.Registry.Resources()))
	for i, r := range a.Registry.Resources() {
		names[i] = r.Name
	}
	return names
}

// location returns the path of the record id under the collection of r.
func location(r *http.Request, id string) string {
	return strings.TrimSuffix(r.URL.Path, "/") + "/" + id
}
