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
// registers the URLs the dispatcher delivers its events to, the event
// types each gets and, optionally, the branches, and lists the deliveries
// of each endpoint and sends one again. It is configured from the
// resource.Registry whose events it delivers (Registry is required); the
// rest have useful zero values. Mount serves it:
//
//	POST   {prefix}/{organizationId}/webhook_endpoints                 create (201, the secret shown once)
//	GET    {prefix}/{organizationId}/webhook_endpoints                 list
//	GET    {prefix}/{organizationId}/webhook_endpoints/{id}            get
//	PATCH  {prefix}/{organizationId}/webhook_endpoints/{id}            update
//	DELETE {prefix}/{organizationId}/webhook_endpoints/{id}            delete (200 with the endpoint)
//	GET    {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries list deliveries, newest first
//	POST   {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver (202)
//
// Every route takes an OAuth access token of the organization in the path
// (tenancy.Middleware with tenancy.Organization): ScopeRead for GET and
// HEAD, ScopeWrite for the rest. Another organization's id in the path, an
// id that is not a UUID, and an endpoint or delivery of another
// organization are all 404 not_found. Other methods get 405 with Allow.
//
// The writes are as safe to retry as the resources':
// POST and PATCH take an Idempotency-Key, whose replay of a create shows
// the secret again; every answer with one endpoint carries its ETag, GET
// takes If-None-Match (304) and PATCH and DELETE If-Match (412
// precondition_failed with the endpoint as stored).
//
// # Bodies
//
// POST takes {"url", "event_types", "branch_ids"}, PATCH any of "url",
// "event_types", "branch_ids" and "status" ("enabled" or "disabled";
// enabling clears disabled_reason). A body is one JSON object of
// application/json, at most MaxBodyBytes (else 413); a member the route
// does not take, or a value of the wrong type, is 400 invalid_create (POST)
// or invalid_update (PATCH); JSON that does not parse, or that names a
// member twice, is 400 invalid_request. An endpoint answers as
//
//	{"id", "url", "event_types", "branch_ids" (null: every branch), "status",
//	 "disabled_reason" (null while enabled), "client_id" (the app under
//	 whose authority it acts), "created_at", "updated_at"}
//
// and the answer of POST alone adds "secret": the signing secret
// ("whsec_..."), which no other answer and no log line ever shows again.
//
// # Rules
//
//   - url: at most 2048 characters, and Guard.CheckURL must accept it: an
//     absolute http or https URL whose host is not, and does not resolve
//     to, a loopback, private, link-local or otherwise non-public address
//     (unless Guard.AllowPrivate). A refusal is 400 with the Guard's
//     words.
//   - event_types: 1 to MaxEventTypes patterns, each an event type of one
//     of Resources ("quotation.created"), all the types of one
//     ("quotation.*"), or every type ("*"); anything else is 400 naming
//     it. They are stored as a JSON array, duplicates dropped.
//   - The token must be able to read what it subscribes to: a pattern that
//     names a resource needs that resource's read scope, "*" at least one
//     resource's; else 403 insufficient_scope naming the scope.
//   - branch_ids: optional (absent or null: every branch); when given, a
//     non-empty list of branches of the organization (else 400). A
//     client-credentials token may name only its own branches, and one
//     that does not cover every branch of the organization must give
//     branch_ids (both 403 insufficient_scope).
//   - Such a token (of an app limited to some branches) sees and manages
//     only the endpoints limited to branches among its own: another
//     endpoint, whatever app registered it, is 404 to it on every route and
//     left out of its list, so that it can neither read where another
//     branch's events go nor redirect, re-grant or delete them.
//   - The grant: on POST, and on every PATCH, the endpoint records what
//     the token may read — the names of the resources whose read scope it
//     has (grant_resources), and, for a client-credentials token, its
//     branches (grant_branches; NULL, every branch, for an
//     authorization-code token) — and the token's app (client_id). The
//     dispatcher delivers only events the grant allows, so ScopeWrite
//     never lets a token see, through an endpoint, what it could not read
//     itself.
//   - Authority: an endpoint acts under the authority of the app whose
//     token registered it or changed it last. A PATCH (of any member, the
//     URL or the status alone included, or of none) and a redelivery need
//     a token that may read everything the endpoint gets, after the
//     change: the read scope of every resource that both its event types
//     name and its grant allows (else 403 insufficient_scope naming the
//     missing scopes, and nothing changes), and its branches (above). A
//     successful PATCH then grants the endpoint anew to the token, so
//     disconnecting the app that registered it no longer disables it, and
//     disconnecting the app that changed it does. A redelivery grants
//     nothing. DELETE needs ScopeWrite and the branches only: it hands no
//     one anything.
//   - An endpoint disabled because its app was disconnected from the
//     organization (DisableAppEndpoints) is that app's: a PATCH or a
//     redelivery by any other app's token, or by a token of the app issued
//     before the disconnection, is 409 conflict, so that no one else sends
//     the events the organization cut off back to that app's URL under its
//     secret. The app, once connected again, may change it and enable it
//     (which makes it everyone's again); anyone may delete it.
//   - An endpoint gets only the events committed after it was created: it
//     starts at the organization's event head (after_seq).
//   - The secret is signature.NewSecret(), sealed with Sealer (the endpoint
//     id as additional data, secret_key_id the key's id) when Sealer is
//     set; without a Sealer it is stored in clear (with an empty secret_key_id).
//   - An organization has at most MaxEndpoints endpoints: a POST beyond is
//     409 conflict (counted under a lock, so concurrent POSTs cannot pass
//     it together).
//   - In the table, event_types, branch_ids, grant_resources and
//     grant_branches are JSON arrays of strings; branch_ids and
//     grant_branches are NULL for every branch.
//
// # Deliveries
//
// GET .../{id}/deliveries lists the endpoint's deliveries newest first:
//
//	{"data": [{"id", "event_id", "event_type" (null once retention removed the event),
//	  "status" (pending, delivered, failed), "attempts": [{"at", "status_code" (null: no answer),
//	  "error" (null on success), "duration_ms"}], "next_attempt_at" (null unless pending),
//	  "created_at"}], "pagination": {"limit", "next_cursor"}, "version": "v1"}
//
// with limit (default 50, at most 100), status (one of the three) and
// after (the next_cursor of the page before, which is bound to the status
// filter). POST .../deliveries/{delivery_id}/redeliver makes a delivery
// pending and due now with a new round of attempts, keeping the attempts
// made so far, and answers 202 with it; a delivery whose event retention
// has removed cannot be sent again: 409 conflict.
//
// Errors are package errors' (apierrors) through an apierrors.Writer of
// Logger and Realm; SQL is built with squirrel and bound parameters only.
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

func (a *API) errors() apierrors.Writer {
	return apierrors.Writer{Logger: a.Registry.Logger, Realm: a.Registry.Realm, ResourceMetadata: a.Registry.ResourceMetadata}
}

// Mount registers the routes of the API on mux under every prefix (see
// API). It panics when the API has no Verifier.
func (a *API) Mount(mux *http.ServeMux) {
	mw := tenancy.Middleware(tenancy.Options{
		Verifier: a.Registry.Verifier, Branches: a.Registry.Branches, ScopeType: tenancy.Organization,
		Scope: tenancy.ReadWrite(ScopeRead, ScopeWrite), PathValue: "organizationId",
		Logger: a.Registry.Logger, Realm: a.Registry.Realm, ResourceMetadata: a.Registry.ResourceMetadata,
	})
	wrap := func(f http.HandlerFunc) http.Handler {
		var next http.Handler = f
		if a.Registry.Middleware != nil {
			next = a.Registry.Middleware(next)
		}
		return mw(next)
	}
	// A write's Idempotency-Key is looked up after Middleware: a replay is
	// a request, which a rate limit counts and may refuse.
	wrapWrite := func(f http.HandlerFunc) http.Handler {
		return wrap(a.idempotent(f).ServeHTTP)
	}
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
		mux.Handle(collection, a.methodNotAllowed("GET", "HEAD", "POST"))
		mux.Handle(item, a.methodNotAllowed("GET", "HEAD", "PATCH", "DELETE"))
		mux.Handle(deliveries, a.methodNotAllowed("GET", "HEAD"))
		mux.Handle(redeliver, a.methodNotAllowed("POST"))
	}
}

func (a *API) methodNotAllowed(allow ...string) http.Handler {
	err := apierrors.MethodNotAllowed(allow...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.errors().Write(w, r, err)
	})
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
	text, args, err := a.Registry.Dialect.SQL(b)
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
