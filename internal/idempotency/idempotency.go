// Package idempotency keeps the answers of writes sent with an
// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), so that a
// retry gets the first answer again instead of writing twice. The resource
// and webhook packages share it, and one table: waybill_idempotency_keys,
// which package resource's migrations create.
//
// A key is 1 to 255 visible ASCII characters, sent bare or as a quoted
// string, and belongs to its Owner: one client (the token's client_id) in
// one organization and, for a token that acts for a user (the
// authorization code's, a product user's), that user (the token's sub).
// Other clients, organizations and users cannot see or spend it, nor learn
// that it was used: the same key of another owner is a new key.
// The answer of a successful write is stored with the key in the write's
// own transaction (Store.Remember), with a fingerprint of what the request
// asked; a request that sends the key again gets the stored answer when it
// asks the same (Replay), and 422 idempotency_key_reused when it asks
// something else. Middleware does this for a route: it reads the key and
// the body, replays a stored answer, and hands the rest to the handler.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/httpbody"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// Table is the table of the keys and their answers.
const Table = "waybill_idempotency_keys"

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = 255

// DefaultTTL is how long a key is kept when Store.TTL is zero: long
// enough for the retries of a day's sync job.
const DefaultTTL = 24 * time.Hour

// Key returns the Idempotency-Key header of r, unquoted; ok is false
// without one. A malformed key, or one sent twice, is a 400.
func Key(r *http.Request) (key string, ok bool, err error) {
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
	if key == "" || len(key) > MaxKeyLen {
		return "", false, apierrors.InvalidRequest("Idempotency-Key must be 1 to %d characters, e.g. a UUID", MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "", false, apierrors.InvalidRequest("Idempotency-Key may hold visible ASCII characters only (no spaces, quotes or backslashes), e.g. a UUID")
		}
	}
	return key, true, nil
}

// ReadBody reads the body of r for Fingerprint, at most limit bytes and
// one more, and gives r a body that reads the same bytes again, then what
// was left: a handler that refuses bodies over limit still does.
func ReadBody(r *http.Request, limit int) ([]byte, error) {
	body, err := httpbody.Peek(r, limit)
	if err != nil {
		return nil, apierrors.InvalidRequest("the request body could not be read")
	}
	return body, nil
}

// Fingerprint is the SHA-256, in hex, of what a write asks: the parts that
// name it (method, resource, tenant, record id, ...) and its body.
func Fingerprint(body []byte, parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Owner is whom a key belongs to: its stored answer is seen by requests of
// the same owner only.
type Owner struct {
	// OrganizationID is the token's organization.
	OrganizationID string
	// ClientID is the token's OAuth client; "" for a product user token.
	ClientID string
	// UserID is the user the token acts for (its subject); "" for a
	// client-credentials token, which acts for its app alone.
	UserID string
}

// OwnerOf returns the owner of the keys of the requests of t: the token's
// organization and client, and its user unless the token is a
// client-credentials token.
func OwnerOf(t tenancy.Tenant) Owner {
	o := Owner{OrganizationID: t.OrganizationID, ClientID: t.Claims.ClientID}
	if !t.Claims.ClientCredentials() {
		o.UserID = t.Claims.Subject
	}
	return o
}

// lookupSQL reads the answer of a key of one owner that has not expired,
// with the arguments of Owner.args and the time; both dialects take $n
// placeholders. It is a constant, so that every keyed write and every
// replay costs its read and no building of it.
const lookupSQL = "SELECT fingerprint, status, headers, body FROM " + Table +
	" WHERE organization_id = $1 AND client_id = $2 AND user_id = $3 AND idempotency_key = $4 AND expires_at > $5"

// ownerAnd picks the row of a key of one owner and a condition on its
// expiry; see Owner.args.
const ownerAnd = "organization_id = ? AND client_id = ? AND user_id = ? AND idempotency_key = ? AND "

// args returns the arguments of ownerAnd for key, then more.
func (o Owner) args(key string, more any) []any {
	return []any{o.OrganizationID, o.ClientID, o.UserID, key, more}
}

// Answer is the answer of a write, as stored for replay.
type Answer struct {
	// Fingerprint is what the request asked (see Fingerprint).
	Fingerprint string
	// Status is the HTTP status.
	Status int
	// Headers are the headers replayed with it (Location, ETag).
	Headers map[string]string
	// Body is the JSON body.
	Body []byte
}

// Replayed is the error of a write whose key another request stored an
// answer for while this one ran: its transaction is rolled back and
// Answer is given instead.
type Replayed struct{ Answer *Answer }

func (e *Replayed) Error() string { return "idempotency: the key has an answer" }

// Querier runs a query: a *sql.DB, or a *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store reads and writes the answers of one database.
type Store struct {
	// Dialect is the database's SQL dialect.
	Dialect query.Dialect
	// TTL is how long an answer is kept; zero means DefaultTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// TTLOrDefault is how long the store keeps an answer: TTL, or DefaultTTL.
func (s Store) TTLOrDefault() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return DefaultTTL
}

// Lookup returns the answer stored for key of the owner, or nil when there
// is none or it has expired.
func (s Store) Lookup(ctx context.Context, q Querier, owner Owner, key string) (*Answer, error) {
	var a Answer
	var headers, body string
	err := q.QueryRowContext(ctx, lookupSQL, owner.args(key, s.Dialect.Timestamp(s.now()))...).
		Scan(&a.Fingerprint, &a.Status, &headers, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("idempotency: read key: %w", err)
	}
	if err := json.Unmarshal([]byte(headers), &a.Headers); err != nil {
		return nil, fmt.Errorf("idempotency: read key: headers: %w", err)
	}
	a.Body = []byte(body)
	return &a, nil
}

// Remember stores a, the answer of the write of tx, for key of the owner.
// When another request with the key stored its answer first (it committed
// while this one ran), it returns a *Replayed with that answer. A request
// that waits for another one with its key past its deadline is 409
// idempotency_in_progress.
func (s Store) Remember(ctx context.Context, tx *sql.Tx, owner Owner, key string, a *Answer) error {
	d := s.Dialect
	now := s.now()
	headers, err := json.Marshal(a.Headers)
	if err != nil {
		return err
	}
	const owned = 4 // the columns of the owner and the key, first
	cols := []string{"organization_id", "client_id", "user_id", "idempotency_key", "fingerprint", "status", "headers", "body", "created_at", "expires_at"}
	vals := []any{owner.OrganizationID, owner.ClientID, owner.UserID, key, a.Fingerprint, a.Status, string(headers), string(a.Body),
		d.Timestamp(now), d.Timestamp(now.Add(s.TTLOrDefault()))}
	text, args, err := sqlbuild.SQL(d, sq.Insert(Table).Columns(cols...).Values(vals...).
		Suffix("ON CONFLICT (organization_id, client_id, user_id, idempotency_key) DO NOTHING"))
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
		return fmt.Errorf("idempotency: store key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	stored, err := s.Lookup(ctx, tx, owner, key)
	if err != nil {
		return err
	}
	if stored != nil {
		return &Replayed{Answer: stored}
	}
	// The key's row has expired: it is this request's now, unless another
	// request took it first, whose answer is then given.
	set := map[string]any{}
	for i, c := range cols[owned:] {
		set[c] = vals[owned+i]
	}
	text, args, err = sqlbuild.SQL(d, sq.Update(Table).SetMap(set).
		Where(ownerAnd+"expires_at <= ?", owner.args(key, d.Timestamp(now))...))
	if err != nil {
		return err
	}
	res, err = tx.ExecContext(ctx, text, args...)
	if err != nil {
		return fmt.Errorf("idempotency: store key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if stored, err = s.Lookup(ctx, tx, owner, key); err != nil || stored == nil {
		return errors.Join(err, errors.New("idempotency: the key's row changed while it was taken"))
	}
	return &Replayed{Answer: stored}
}

// Replay writes a, a stored answer, with Idempotent-Replayed: true, when
// fingerprint is the request it answered. For another request it writes
// nothing and returns 422 idempotency_key_reused.
func Replay(w http.ResponseWriter, fingerprint string, a *Answer) error {
	if a.Fingerprint != fingerprint {
		return apierrors.New(apierrors.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used for another request (another method, record or body); nothing was changed. Send a new key with a new request")
	}
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	body := bytes.TrimSuffix(a.Body, []byte("\n"))
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(a.Status)
	_, _ = w.Write(append(body[:len(body):len(body)], '\n'))
	return nil
}
