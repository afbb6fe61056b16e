package resource

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"net/http"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// Idempotency keys (draft-ietf-httpapi-idempotency-key-header).
//
// POST and PATCH accept an Idempotency-Key header: a client that retries a
// write after a timeout sends the same key, and the write happens once. The
// key is 1 to 255 visible ASCII characters, sent bare or as a quoted string
// (Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"), and belongs to
// the token's client in the token's organization and, for a token that acts
// for a user (the authorization code's), to that user: other clients,
// organizations and users cannot see or spend it, nor learn that it was
// used (the same key of another user is a new key).
//
// The answer of a successful write is stored with its key, in the write's
// own transaction, and kept Registry.IdempotencyTTL (24 hours by default).
// A request that sends the key again is a request like any other for the
// registry's Middleware, which runs first: a rate limit counts it, and
// refuses it when the organization is over its limit, whether the key has
// an answer or not. Then, a request that sends the key again:
//
//   - with the same request (method, resource, path and body, byte for
//     byte) gets the stored answer, its status, Location, ETag and body,
//     with Idempotent-Replayed: true. The answer is looked up before the
//     write, so a replay costs one read (and every keyed write that read
//     more); a retry that comes while the first write runs finds its
//     answer when it stores its own, and is rolled back;
//   - with another request gets 422 idempotency_key_reused, and nothing
//     changes;
//   - while the first request with the key is still being served waits
//     for it and then gets its answer; if the first one is still running
//     when the request's deadline comes, 409 idempotency_in_progress.
//
// A write that fails stores nothing: the retry is judged anew. The keys live
// in the table waybill_idempotency_keys, which Registry.Migrate creates;
// PurgeIdempotencyKeys deletes the expired ones. Several replicas on one
// database share the keys.

// DefaultIdempotencyTTL is how long an idempotency key is kept when
// Registry.IdempotencyTTL is zero: long enough for the retries of a day's
// sync job.
const DefaultIdempotencyTTL = idempotency.DefaultTTL

// migrationsTable records the versions of the registry's own tables.
const migrationsTable = "waybill_resource_migrations"

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Migrate creates or updates the tables the registry keeps itself
// (waybill_idempotency_keys, and waybill_record_history for SQLHistory) in DB, recording its versions in
// waybill_resource_migrations. It is safe to call on every start and from
// several processes at once.
func (g *Registry) Migrate(ctx context.Context) error {
	if _, err := migrate.Apply(ctx, g.DB, g.Dialect, migrations, "migrations/"+g.Dialect.String(), migrationsTable); err != nil {
		return fmt.Errorf("resource: migrate: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes the idempotency keys that have expired and
// returns how many it deleted. Expired keys are never replayed; purging only
// keeps the table small.
func (g *Registry) PurgeIdempotencyKeys(ctx context.Context) (int64, error) {
	text, args, err := sqlbuild.SQL(g.Dialect, sq.Delete(idempotency.Table).Where("expires_at < ?", g.Dialect.Timestamp(g.now())))
	if err != nil {
		return 0, err
	}
	res, err := g.DB.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("resource: purge idempotency keys: %w", err)
	}
	return res.RowsAffected()
}

// idempotencyStore is the store of the registry's idempotency keys.
func (g *Registry) idempotencyStore() idempotency.Store {
	return idempotency.Store{Dialect: g.Dialect, TTL: g.IdempotencyTTL, Now: g.now}
}

// fingerprint is what a write asks: its method, resource, tenant, record
// id and body.
func fingerprint(r *http.Request, resource string, t tenancy.Tenant, body []byte) string {
	return idempotency.Fingerprint(body, r.Method, resource, t.OrganizationID, t.BranchID, r.PathValue("id"))
}

// idempotency is the Idempotency-Key middleware of the resource's POST and
// PATCH (see idempotency.Middleware), whose bodies are at most limit
// bytes. It runs after the registry's Middleware.
func (h *handlers) idempotency(next http.Handler, limit int) http.Handler {
	return idempotency.Middleware(idempotency.Options{
		Limit: limit,
		Fingerprint: func(r *http.Request, body []byte) string {
			return fingerprint(r, h.resource.Name, tenant(r), body)
		},
		Lookup: func(r *http.Request, key string) (*answer, error) {
			return h.registry.idempotencyStore().Lookup(r.Context(), h.db(), idempotency.OwnerOf(tenant(r)), key)
		},
		// The package's Replay, whose 422 for another request goes to
		// Error as every other error of the middleware.
		Error: h.registry.ErrorWriter().Write,
	})(next)
}

// idempotentOf returns the Idempotency-Key of a request that the
// idempotency middleware let through, or nil.
func idempotentOf(r *http.Request) *idempotency.Keyed {
	idem, _ := idempotency.FromContext(r.Context())
	return idem
}

// answer is the answer of a write, as stored for replay.
type answer = idempotency.Answer

// record returns the record in the body of an answer that recordAnswer
// made: the value of its "data" member.
func record(a *answer) []byte {
	return a.Body[len(`{"data":`) : len(a.Body)-len(`,"version":"`+Version+`"}`)]
}

// remember stores a, the answer of the write of tx, for idem (see
// idempotency.Store.Remember).
func (h *handlers) remember(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, idem *idempotency.Keyed, a *answer) error {
	a.Fingerprint = idem.Fingerprint
	return h.registry.idempotencyStore().Remember(ctx, tx, idempotency.OwnerOf(t), idem.Key, a)
}
