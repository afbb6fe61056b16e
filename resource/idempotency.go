package resource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/tenancy"
)

// Idempotency keys (draft-ietf-httpapi-idempotency-key-header).
//
// POST and PATCH accept an Idempotency-Key header: a client that retries a
// write after a timeout sends the same key, and the write happens once. The
// key is 1 to 255 visible ASCII characters, sent bare or as a quoted string
// (Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"), and belongs to
// the token's client in the token's organization: other clients and
// organizations cannot see or spend it.
//
// The answer of a successful write is stored with its key, in the write's
// own transaction, and kept Registry.IdempotencyTTL (24 hours by default).
// A request that sends the key again:
//
//   - with the same request (method, resource, path and body, byte for
//     byte) gets the stored answer, its status, Location, ETag and body,
//     with Idempotent-Replayed: true. When the registry has a Middleware (a
//     rate limit, say), the stored answer is looked up before it, so a
//     replay is not charged there; that costs every keyed write one
//     lookup. Without a Middleware the write runs and finds the stored
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
const DefaultIdempotencyTTL = 24 * time.Hour

const (
	idempotencyTable     = "waybill_idempotency_keys"
	maxIdempotencyKeyLen = 255
	// migrationsTable records the versions of the registry's own tables.
	migrationsTable = "waybill_resource_migrations"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Migrate creates or updates the tables the registry keeps itself (today,
// waybill_idempotency_keys) in DB, recording its versions in
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
	text, args, err := g.Dialect.SQL(sq.Delete(idempotencyTable).Where("expires_at < ?", g.Dialect.Timestamp(g.now())))
	if err != nil {
		return 0, err
	}
	res, err := g.DB.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("resource: purge idempotency keys: %w", err)
	}
	return res.RowsAffected()
}

func (g *Registry) idempotencyTTL() time.Duration {
	if g.IdempotencyTTL > 0 {
		return g.IdempotencyTTL
	}
	return DefaultIdempotencyTTL
}

// idempotent is the Idempotency-Key of a request and what it asked.
type idempotent struct {
	key         string
	fingerprint string
}

type idempotentKey struct{}

// idempotencyKey returns the Idempotency-Key of r; ok is false without one.
func idempotencyKey(r *http.Request) (key string, ok bool, err error) {
	vs := r.Header.Values("Idempotency-Key")
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, apierrors.InvalidRequest("Idempotency-Key is sent more than once; send it once")
	}
	key = strings.TrimSpace(vs[0])
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if key == "" || len(key) > maxIdempotencyKeyLen {
		return "", false, apierrors.InvalidRequest("Idempotency-Key must be 1 to %d characters, e.g. a UUID", maxIdempotencyKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "", false, apierrors.InvalidRequest("Idempotency-Key may hold visible ASCII characters only (no spaces, quotes or backslashes), e.g. a UUID")
		}
	}
	return key, true, nil
}

// fingerprint is the SHA-256 of what a write asks: its method, resource,
// tenant, record id and body.
func fingerprint(r *http.Request, resource string, t tenancy.Tenant, body []byte) string {
	h := sha256.New()
	for _, s := range []string{r.Method, resource, t.OrganizationID, t.BranchID, r.PathValue("id")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// idempotency reads the Idempotency-Key of a POST or PATCH and hands it,
// with the request's fingerprint, to the handler in the context. When the
// registry has a Middleware, it answers a key that has a stored answer
// before next (the Middleware and the handler) runs. The body is read here
// and given to next unchanged.
func (h *handlers) idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok, err := idempotencyKey(r)
		if err != nil {
			h.registry.errors().Write(w, r, err)
			return
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			h.registry.errors().Write(w, r, apierrors.InvalidRequest("the request body could not be read"))
			return
		}
		if len(body) > MaxBodyBytes {
			// Too large: the handler refuses it with 413.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		t := tenant(r)
		idem := &idempotent{key: key, fingerprint: fingerprint(r, h.resource.Name, t, body)}
		if h.registry.Middleware != nil {
			stored, err := h.storedAnswer(r.Context(), h.db(), t, key)
			if err != nil {
				h.registry.errors().Write(w, r, apierrors.Internal(err))
				return
			}
			if stored != nil {
				h.replay(w, r, idem, stored)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idempotentKey{}, idem)))
	})
}

// idempotentOf returns the Idempotency-Key of a request that the
// idempotency middleware let through, or nil.
func idempotentOf(r *http.Request) *idempotent {
	idem, _ := r.Context().Value(idempotentKey{}).(*idempotent)
	return idem
}

// answer is the answer of a write, as stored for replay.
type answer struct {
	fingerprint string
	status      int
	headers     map[string]string
	body        []byte
}

// record returns the record in the body of an answer that recordAnswer
// made: the value of its "data" member.
func (a *answer) record() []byte {
	return a.body[len(`{"data":`) : len(a.body)-len(`,"version":"`+Version+`"}`)]
}

// replayed is the error of a write whose Idempotency-Key another request
// stored an answer for while this one ran: its transaction is rolled back
// and the stored answer is given instead.
type replayed struct{ answer *answer }

func (e *replayed) Error() string { return "resource: the idempotency key has an answer" }

// storedAnswer returns the answer stored for key in the tenant for the
// token's client, or nil when there is none or it has expired.
func (h *handlers) storedAnswer(ctx context.Context, q querier, t tenancy.Tenant, key string) (*answer, error) {
	d := h.dialect()
	text, args, err := d.SQL(sq.Select("fingerprint", "status", "headers", "body").From(idempotencyTable).
		Where("organization_id = ? AND client_id = ? AND idempotency_key = ? AND expires_at > ?",
			t.OrganizationID, t.Claims.ClientID, key, d.Timestamp(h.registry.now())))
	if err != nil {
		return nil, err
	}
	var a answer
	var headers, body string
	err = q.QueryRowContext(ctx, text, args...).Scan(&a.fingerprint, &a.status, &headers, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resource: read idempotency key: %w", err)
	}
	if err := json.Unmarshal([]byte(headers), &a.headers); err != nil {
		return nil, fmt.Errorf("resource: read idempotency key: headers: %w", err)
	}
	a.body = []byte(body)
	return &a, nil
}

// remember stores a, the answer of the write of tx, for idem. When another
// request with the key stored its answer first (it committed while this
// one ran), it returns a *replayed with that answer. A request that waits
// for another one with its key past its deadline is 409
// idempotency_in_progress.
func (h *handlers) remember(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, idem *idempotent, a *answer) error {
	d := h.dialect()
	now := h.registry.now()
	headers, err := json.Marshal(a.headers)
	if err != nil {
		return err
	}
	cols := []string{"organization_id", "client_id", "idempotency_key", "fingerprint", "status", "headers", "body", "created_at", "expires_at"}
	vals := []any{t.OrganizationID, t.Claims.ClientID, idem.key, idem.fingerprint, a.status, string(headers), string(a.body),
		d.Timestamp(now), d.Timestamp(now.Add(h.registry.idempotencyTTL()))}
	text, args, err := d.SQL(sq.Insert(idempotencyTable).Columns(cols...).Values(vals...).
		Suffix("ON CONFLICT (organization_id, client_id, idempotency_key) DO NOTHING"))
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, text, args...)
	if err != nil {
		if ctx.Err() != nil {
			// Waiting on the key's row: the first request still runs.
			return apierrors.New(apierrors.CodeIdempotencyInProgress,
				"a request with this Idempotency-Key is still being served; retry once it has been answered")
		}
		return fmt.Errorf("resource: store idempotency key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	stored, err := h.storedAnswer(ctx, tx, t, idem.key)
	if err != nil {
		return err
	}
	if stored != nil {
		return &replayed{answer: stored}
	}
	// The key's row has expired: it is this request's now, unless another
	// request took it first, whose answer is then given.
	set := map[string]any{}
	for i, c := range cols[3:] {
		set[c] = vals[3+i]
	}
	text, args, err = d.SQL(sq.Update(idempotencyTable).SetMap(set).
		Where("organization_id = ? AND client_id = ? AND idempotency_key = ? AND expires_at <= ?",
			t.OrganizationID, t.Claims.ClientID, idem.key, d.Timestamp(now)))
	if err != nil {
		return err
	}
	res, err = tx.ExecContext(ctx, text, args...)
	if err != nil {
		return fmt.Errorf("resource: store idempotency key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if stored, err = h.storedAnswer(ctx, tx, t, idem.key); err != nil || stored == nil {
		return errors.Join(err, errors.New("resource: the idempotency key's row changed while it was taken"))
	}
	return &replayed{answer: stored}
}

// replay answers with a stored answer when the request is the one it
// answered, else with 422 idempotency_key_reused.
func (h *handlers) replay(w http.ResponseWriter, r *http.Request, idem *idempotent, a *answer) {
	if a.fingerprint != idem.fingerprint {
		h.registry.errors().Write(w, r, apierrors.New(apierrors.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used for another request (another method, record or body); nothing was changed. Send a new key with a new request"))
		return
	}
	for k, v := range a.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, a.status, bytes.TrimSuffix(a.body, []byte("\n")))
}
