package webhook

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// This file serves the deliveries of an endpoint: their list, with the
// attempts of each, and redelivery.

// The statuses of a delivery.
const (
	deliveryPending   = "pending"
	deliveryDelivered = "delivered"
	deliveryFailed    = "failed"
)

// delivery is a delivery as the API shows it.
type deliveryView struct {
	ID            string        `json:"id"`
	EventID       string        `json:"event_id"`
	EventType     *string       `json:"event_type"`
	Status        string        `json:"status"`
	Attempts      []attemptView `json:"attempts"`
	NextAttemptAt *jsonTime     `json:"next_attempt_at"`
	CreatedAt     jsonTime      `json:"created_at"`

	createdAt time.Time
}

// attempt is one attempt of a delivery.
type attemptView struct {
	At         jsonTime `json:"at"`
	StatusCode *int64   `json:"status_code"`
	Error      *string  `json:"error"`
	DurationMS int64    `json:"duration_ms"`
}

// deliveryCursor is the position after which a page of deliveries starts,
// bound to the page's status filter.
type deliveryCursor struct {
	createdAt time.Time
	id        string
	status    string
}

// encode returns c as the opaque text of next_cursor.
func (c deliveryCursor) encode() string {
	raw := c.createdAt.UTC().Format(query.SQLiteTimestampLayout) + "|" + c.id + "|" + c.status
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeCursor reads the after= of a page whose status filter is status.
func decodeCursor(s, status string) (*deliveryCursor, error) {
	bad := apierrors.InvalidRequest("after is not a cursor of this list: give the next_cursor of the page before, with the same status filter")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[2] != status {
		return nil, bad
	}
	at, err := time.Parse(query.SQLiteTimestampLayout, parts[0])
	if err != nil {
		return nil, bad
	}
	id, ok := query.CanonicalUUID(parts[1])
	if !ok {
		return nil, bad
	}
	return &deliveryCursor{createdAt: at, id: id, status: status}, nil
}

// deliveryFilter selects deliveries of one endpoint.
type deliveryFilter struct {
	org, endpointID string
	status          string // "" for every status
	id              string // "" for every delivery
	after           *deliveryCursor
	limit           int // 0: no limit
}

// readDeliveries returns the deliveries f selects, newest first, with
// their attempts.
func (a *API) readDeliveries(ctx context.Context, q eventstore.Querier, f deliveryFilter) ([]*deliveryView, error) {
	d := a.Registry.Dialect
	b := sq.Select("d.id", "d.event_id", "coalesce(d.event_type, e.type)", "d.status", "d.next_attempt_at", "d.created_at").
		From(deliveriesTable + " d").
		LeftJoin(eventsTable + " e ON e.organization_id = d.organization_id AND e.seq = d.event_seq").
		Where(sq.Eq{"d.organization_id": f.org, "d.endpoint_id": f.endpointID})
	if f.status != "" {
		b = b.Where(sq.Eq{"d.status": f.status})
	}
	if f.id != "" {
		b = b.Where(sq.Eq{"d.id": f.id})
	}
	if f.after != nil {
		b = b.Where("(d.created_at < ? OR (d.created_at = ? AND d.id < ?))", d.Timestamp(f.after.createdAt), d.Timestamp(f.after.createdAt), f.after.id)
	}
	b = b.OrderBy("d.created_at DESC", "d.id DESC")
	if f.limit > 0 {
		b = b.Suffix("LIMIT ?", f.limit)
	}
	text, args, err := sqlbuild.SQL(d, b)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	rows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, dbError("list deliveries", err)
	}
	defer rows.Close()
	out := []*deliveryView{} // an empty page is [], not null
	byID := map[string]*deliveryView{}
	for rows.Next() {
		var (
			dl            deliveryView
			typ           sql.NullString
			next, created any
		)
		if err := rows.Scan(&dl.ID, &dl.EventID, &typ, &dl.Status, &next, &created); err != nil {
			return nil, dbError("list deliveries", err)
		}
		if typ.Valid {
			dl.EventType = &typ.String
		}
		nextAt, err := query.ScanTimestamp(next)
		if err != nil {
			return nil, dbError("list deliveries", err)
		}
		if dl.Status == deliveryPending {
			dl.NextAttemptAt = timePtr(nextAt)
		}
		if dl.createdAt, err = query.ScanTimestamp(created); err != nil {
			return nil, dbError("list deliveries", err)
		}
		dl.CreatedAt = jsonTime(dl.createdAt)
		dl.Attempts = []attemptView{}
		out = append(out, &dl)
		byID[dl.ID] = &dl
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list deliveries", err)
	}
	rows.Close()
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i, dl := range out {
		ids[i] = dl.ID
	}
	text, args, err = sqlbuild.SQL(d, sq.Select("delivery_id", "at", "status_code", "error", "duration_ms").From(attemptsTable).
		Where(sq.Eq{"delivery_id": ids}).OrderBy("delivery_id", "n"))
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	arows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, dbError("list attempts", err)
	}
	defer arows.Close()
	for arows.Next() {
		var (
			id     string
			at     any
			code   sql.NullInt64
			errMsg string
			at0    attemptView
		)
		if err := arows.Scan(&id, &at, &code, &errMsg, &at0.DurationMS); err != nil {
			return nil, dbError("list attempts", err)
		}
		t, err := query.ScanTimestamp(at)
		if err != nil {
			return nil, dbError("list attempts", err)
		}
		at0.At = jsonTime(t)
		if code.Valid {
			at0.StatusCode = &code.Int64
		}
		if errMsg != "" {
			at0.Error = &errMsg
		}
		if dl := byID[id]; dl != nil {
			dl.Attempts = append(dl.Attempts, at0)
		}
	}
	if err := arows.Err(); err != nil {
		return nil, dbError("list attempts", err)
	}
	return out, nil
}

// deliveryList is the answer of the list of deliveries.
type deliveryList struct {
	Data       []*deliveryView    `json:"data"`
	Pagination deliveryPagination `json:"pagination"`
	Version    string             `json:"version"`
}

type deliveryPagination struct {
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
}

// listDeliveries is GET {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries.
func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	params, err := queryParams(r, "limit", "after", "status")
	if err != nil {
		return err
	}
	f := deliveryFilter{org: t.OrganizationID, endpointID: id, status: params["status"]}
	switch f.status {
	case "", deliveryPending, deliveryDelivered, deliveryFailed:
	default:
		return apierrors.InvalidRequest("status must be %s, %s or %s", deliveryPending, deliveryDelivered, deliveryFailed)
	}
	if f.limit, err = intParam(params, "limit", defaultDeliveryLimit, 1, maxDeliveryLimit); err != nil {
		return err
	}
	if s, ok := params["after"]; ok {
		if f.after, err = decodeCursor(s, f.status); err != nil {
			return err
		}
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	if _, err := a.endpointFor(ctx, a.Registry.DB, t, rc, id, false); err != nil {
		return err
	}
	limit := f.limit
	f.limit++ // one more: when it exists, the page is not the last
	list, err := a.readDeliveries(ctx, a.Registry.DB, f)
	if err != nil {
		return err
	}
	out := deliveryList{Data: list, Pagination: deliveryPagination{Limit: limit}, Version: apiVersion}
	if len(list) > limit {
		out.Data = list[:limit]
		last := list[limit-1]
		next := deliveryCursor{createdAt: last.createdAt, id: last.ID, status: f.status}.encode()
		out.Pagination.NextCursor = &next
		w.Header().Set("Link", "<"+nextLink(r, next)+`>; rel="next"`)
	}
	return writeJSON(w, http.StatusOK, out)
}

// nextLink returns the path and query of the page after r's, at cursor.
func nextLink(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Set("after", cursor)
	return (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()
}

// redeliver is POST {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver.
func (a *API) redeliver(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	noDelivery := apierrors.NotFound("no delivery with this id")
	deliveryID, ok := query.CanonicalUUID(r.PathValue("delivery_id"))
	if !ok {
		return noDelivery
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	d := a.Registry.Dialect
	var ans *idempotency.Answer
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		ep, err := a.endpointFor(ctx, tx, t, rc, id, false)
		if err != nil {
			return err
		}
		if err := checkCutOff(t, ep); err != nil {
			return err
		}
		if err := a.checkCovers(t, ep.EventTypes, ep.grantResources); err != nil {
			return err
		}
		b := sq.Select("event_seq", "body IS NOT NULL").From(deliveriesTable).
			Where(sq.Eq{"organization_id": t.OrganizationID, "endpoint_id": id, "id": deliveryID})
		if d == query.Postgres {
			b = b.Suffix("FOR UPDATE")
		}
		text, args, err := sqlbuild.SQL(d, b)
		if err != nil {
			return apierrors.Internal(err)
		}
		var (
			seq int64
			own bool // a test: the delivery carries its event
		)
		switch err := tx.QueryRowContext(ctx, text, args...).Scan(&seq, &own); {
		case errors.Is(err, sql.ErrNoRows):
			return noDelivery
		case err != nil:
			return dbError("read delivery", err)
		}
		text, args, err = sqlbuild.SQL(d, sq.Select("count(*)").From(eventsTable).Where(sq.Eq{"organization_id": t.OrganizationID, "seq": seq}))
		if err != nil {
			return apierrors.Internal(err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, text, args...).Scan(&n); err != nil {
			return dbError("read event", err)
		}
		if n == 0 && !own {
			return apierrors.Conflict("the event of this delivery is no longer kept (retention removed it), so it cannot be sent again")
		}
		now := d.Timestamp(a.now())
		text, args, err = sqlbuild.SQL(d, sq.Update(deliveriesTable).
			SetMap(sq.Eq{"status": deliveryPending, "attempts": 0, "next_attempt_at": now, "lease_until": nil, "updated_at": now}).
			Where(sq.Eq{"id": deliveryID}))
		if err != nil {
			return apierrors.Internal(err)
		}
		if _, err := tx.ExecContext(ctx, text, args...); err != nil {
			return dbError("redeliver", err)
		}
		ans, err = a.deliveryAnswer(ctx, tx, r, t.OrganizationID, id, deliveryID)
		return err
	})
	if err != nil {
		return a.failedWrite(w, r, err)
	}
	a.wake()
	send(w, ans)
	return nil
}

// deliveryAnswer returns the 202 answer of an action that queued the
// delivery deliveryID of the endpoint endpointID of org (a redelivery, a
// test): the delivery as the list of deliveries shows it. It stores the
// answer with r's Idempotency-Key, in tx.
func (a *API) deliveryAnswer(ctx context.Context, tx *sql.Tx, r *http.Request, org, endpointID, deliveryID string) (*idempotency.Answer, error) {
	list, err := a.readDeliveries(ctx, tx, deliveryFilter{org: org, endpointID: endpointID, id: deliveryID})
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(envelope{Data: list[0], Version: apiVersion})
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	ans := &idempotency.Answer{Status: http.StatusAccepted, Body: body}
	return ans, a.remember(ctx, tx, r, ans)
}
