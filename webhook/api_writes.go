package webhook

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/conditional"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// This file holds what the writes of the endpoints API share with the
// resources' writes: Idempotency-Key and conditional requests.
//
// POST (create, redeliver) and PATCH take an Idempotency-Key: the answer
// of a successful write is stored with the key, for the token's client in
// the token's organization (and the token's user, for a token that acts
// for one: the same key of another user is a new key), in the write's
// transaction, and kept API.IdempotencyTTL; the same request with the key
// gets it again with Idempotent-Replayed: true, and another request with
// the key 422 idempotency_key_reused. Either is a request like any other
// for Middleware, which runs first: a rate limit counts it and may refuse
// it.
// The stored answer of a create or of a rotation of the secret leaves the
// signing secret out: a replay reads it from the endpoint again (the
// current secret), so the secret is kept sealed in one place only. The keys live in the table of package resource
// (waybill_idempotency_keys), which Migrate creates.
//
// Every answer with one endpoint carries a strong ETag of the endpoint as
// GET shows it; GET with If-None-Match naming it is 304, and PATCH or
// DELETE with If-Match naming another version changes nothing and is 412
// precondition_failed with the endpoint as stored in data and its ETag.

// keyedOf returns the Idempotency-Key of r that idempotent let through, or
// nil.
func keyedOf(r *http.Request) *idempotency.Keyed {
	k, _ := idempotency.FromContext(r.Context())
	return k
}

func (a *API) idempotencyStore() idempotency.Store {
	return idempotency.Store{Dialect: a.Registry.Dialect, TTL: a.Registry.IdempotencyTTL, Now: a.Now}
}

// idempotent is the Idempotency-Key middleware of the writes (see
// idempotency.Middleware); a replay of a create shows the secret again.
func (a *API) idempotent(next http.Handler) http.Handler {
	ew := a.Registry.ErrorWriter()
	return idempotency.Middleware(idempotency.Options{
		Limit: MaxBodyBytes,
		Fingerprint: func(r *http.Request, body []byte) string {
			parts := []string{r.Method, "webhook_endpoints", tenant(r).OrganizationID, r.PathValue("id"), r.PathValue("delivery_id")}
			if act := action(r); act != "" {
				// The actions of one endpoint share its id: the action
				// tells their requests apart.
				parts = append(parts, act)
			}
			return idempotency.Fingerprint(body, parts...)
		},
		Lookup: func(r *http.Request, key string) (*idempotency.Answer, error) {
			return a.idempotencyStore().Lookup(r.Context(), a.Registry.DB, idempotency.OwnerOf(tenant(r)), key)
		},
		// The middleware's callbacks return nothing: they answer the
		// errors themselves, with the Writer the handlers' errors get.
		Replay: func(w http.ResponseWriter, r *http.Request, k *idempotency.Keyed, ans *idempotency.Answer) {
			if err := a.replay(w, r, k, ans); err != nil {
				ew.Write(w, r, err)
			}
		},
		Error: ew.Write,
	})(next)
}

// remember stores ans, the answer of the write of tx, when r has an
// Idempotency-Key; see idempotency.Store.Remember.
func (a *API) remember(ctx context.Context, tx *sql.Tx, r *http.Request, ans *idempotency.Answer) error {
	k := keyedOf(r)
	if k == nil {
		return nil
	}
	t := tenant(r)
	ans.Fingerprint = k.Fingerprint
	return a.idempotencyStore().Remember(ctx, tx, idempotency.OwnerOf(t), k.Key, ans)
}

// replay answers a request whose Idempotency-Key has the stored answer
// ans: ans again when the request is the one it answered (the answer of a
// create or a rotation with the endpoint's secret read again); else it writes nothing
// and returns the error to answer, the 422 of a key used for another
// request.
func (a *API) replay(w http.ResponseWriter, r *http.Request, k *idempotency.Keyed, ans *idempotency.Answer) error {
	created := r.PathValue("id") == "" && ans.Status == http.StatusCreated
	rotated := action(r) == actionRotate && ans.Status == http.StatusOK
	if ans.Fingerprint == k.Fingerprint && (created || rotated) {
		withSecret, err := a.withSecret(r, ans)
		if err != nil {
			return apierrors.Internal(err)
		}
		ans = withSecret
	}
	return idempotency.Replay(w, k.Fingerprint, ans)
}

// withSecret returns the stored answer of a create with the endpoint's
// signing secret put back, as the first answer showed it; the answer as
// stored when the endpoint has been deleted since.
func (a *API) withSecret(r *http.Request, ans *idempotency.Answer) (*idempotency.Answer, error) {
	var created struct {
		Data json.RawMessage `json:"data"`
	}
	var ep struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ans.Body, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(created.Data, &ep); err != nil {
		return nil, err
	}
	text, args, err := sqlbuild.SQL(a.Registry.Dialect, sq.Select("secret", "secret_key_id").From(endpointsTable).
		Where(sq.Eq{"organization_id": tenant(r).OrganizationID, "id": ep.ID}))
	if err != nil {
		return nil, err
	}
	var sealed []byte
	var keyID string
	switch err := a.Registry.DB.QueryRowContext(r.Context(), text, args...).Scan(&sealed, &keyID); {
	case errors.Is(err, sql.ErrNoRows):
		return ans, nil
	case err != nil:
		return nil, err
	}
	secret, err := openSecret(a.Sealer, ep.ID, sealed, keyID)
	if err != nil {
		return nil, err
	}
	quoted, err := json.Marshal(secret)
	if err != nil {
		return nil, err
	}
	// The secret is the endpoint's last member, as in the first answer.
	data := bytes.TrimSuffix(bytes.TrimSpace(created.Data), []byte("}"))
	body := make([]byte, 0, len(ans.Body)+len(quoted)+16)
	body = append(body, `{"data":`...)
	body = append(body, data...)
	body = append(body, `,"secret":`...)
	body = append(body, quoted...)
	body = append(body, `},"version":"`+apiVersion+`"}`...)
	out := *ans
	out.Body = body
	return &out, nil
}

// endpointAnswer returns the answer of status with the endpoint ep, its
// ETag, and the headers given.
func endpointAnswer(status int, ep *endpointView, headers map[string]string) (*idempotency.Answer, error) {
	data, err := json.Marshal(ep)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	h := map[string]string{"ETag": conditional.ETag(data)}
	for k, v := range headers {
		h[k] = v
	}
	body := make([]byte, 0, len(data)+32)
	body = append(body, `{"data":`...)
	body = append(body, data...)
	body = append(body, `,"version":"`+apiVersion+`"}`...)
	return &idempotency.Answer{Status: status, Headers: h, Body: body}, nil
}

// send writes ans.
func send(w http.ResponseWriter, ans *idempotency.Answer) {
	for k, v := range ans.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(ans.Body)+1))
	w.WriteHeader(ans.Status)
	_, _ = w.Write(append(ans.Body, '\n'))
}

// checkIfMatch returns a *conditional.Stale when r's If-Match does not
// name the ETag of ep, the endpoint as stored and locked.
func checkIfMatch(r *http.Request, ep *endpointView) error {
	if _, ok := conditional.IfMatch(r); !ok {
		return nil
	}
	data, err := json.Marshal(ep)
	if err != nil {
		return apierrors.Internal(err)
	}
	return conditional.CheckIfMatch(r, data)
}

// failedWrite answers a write that err ended with the stored answer of
// its Idempotency-Key or 412 with the endpoint as stored, and returns nil;
// for any other err (or a replay that fails) it writes nothing and
// returns the error to answer.
func (a *API) failedWrite(w http.ResponseWriter, r *http.Request, err error) error {
	var stale *conditional.Stale
	var rep *idempotency.Replayed
	switch {
	case errors.As(err, &rep):
		return a.replay(w, r, keyedOf(r), rep.Answer)
	case errors.As(err, &stale):
		conditional.WriteStale(w, stale, "the endpoint has changed since the version If-Match names; nothing was changed. data holds the endpoint as stored, ETag its version: apply your change to it and send again with that ETag", apiVersion)
		return nil
	default:
		return err
	}
}
