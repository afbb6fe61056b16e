package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/webhook/signature"
)

// This file serves the actions on one endpoint: POST .../{id}/rotate_secret,
// .../{id}/test and .../{id}/recover. A bad body of theirs is 400
// invalid_request, not invalid_update: they set no member of the endpoint
// as a PATCH does.

// The grace of a rotation of the secret: how long the previous secret
// keeps signing deliveries with the new one.
const (
	// DefaultRotationGrace is the grace when grace_seconds is not given.
	DefaultRotationGrace = 24 * time.Hour
	// MaxRotationGrace is the longest grace: 7 days.
	MaxRotationGrace = 7 * 24 * time.Hour
)

// The actions of an endpoint, the last segment of their paths.
const (
	actionRotate  = "rotate_secret"
	actionTest    = "test"
	actionRecover = "recover"
)

// action returns the action r asks (the last segment of its path) when it
// is one, else "".
func action(r *http.Request) string {
	last := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	switch last {
	case actionRotate, actionTest, actionRecover:
		if r.PathValue("id") != "" && r.PathValue("delivery_id") == "" {
			return last
		}
	}
	return ""
}

// readActionBody reads the body of an action: no body at all is an empty
// object; else one JSON object of application/json whose members are all
// in allowed (400 invalid_request otherwise).
func readActionBody(w http.ResponseWriter, r *http.Request, allowed []string) (map[string]json.RawMessage, error) {
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	return readBody(w, r, allowed, apierrors.InvalidRequest)
}

// seal returns secret as stored for the endpoint id, and the id of the key
// that sealed it ("" in clear).
func (a *API) seal(id, secret string) ([]byte, string) {
	if a.Sealer == nil {
		return []byte(secret), ""
	}
	return a.Sealer.Seal([]byte(secret), []byte(id))
}

// rotateSecret is POST {prefix}/{organizationId}/webhook_endpoints/{id}/rotate_secret.
func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	members, err := readActionBody(w, r, []string{"grace_seconds"})
	if err != nil {
		return err
	}
	grace := DefaultRotationGrace
	if raw, ok := members["grace_seconds"]; ok {
		var n int64
		if isNull(raw) || json.Unmarshal(raw, &n) != nil || n < 0 || time.Duration(n)*time.Second > MaxRotationGrace {
			return apierrors.InvalidRequest("grace_seconds must be an integer from 0 to %d (7 days): how long the previous secret keeps signing deliveries", int64(MaxRotationGrace/time.Second))
		}
		grace = time.Duration(n) * time.Second
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	secret := signature.NewSecret()
	sealed, keyID := a.seal(id, secret)
	d := a.Registry.Dialect
	var (
		ans *idempotency.Answer
		ep  *endpointView
	)
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		if ep, err = a.endpointFor(ctx, tx, t, rc, id, true); err != nil {
			return err
		}
		// As a PATCH: a rotation changes the endpoint.
		if err := checkCutOff(t, ep); err != nil {
			return err
		}
		if err := a.checkCovers(t, ep.EventTypes, ep.grantResources); err != nil {
			return err
		}
		if err := checkIfMatch(r, ep); err != nil {
			return err
		}
		text, args, err := sqlbuild.SQL(d, sq.Select("secret", "secret_key_id").From(endpointsTable).Where(sq.Eq{"id": id}))
		if err != nil {
			return apierrors.Internal(err)
		}
		var (
			old      []byte
			oldKeyID string
		)
		if err := tx.QueryRowContext(ctx, text, args...).Scan(&old, &oldKeyID); err != nil {
			return dbError("read secret", err)
		}
		now := a.now()
		resources, branches := a.grant(t)
		ep.ClientID, ep.grantResources, ep.UpdatedAt = t.Claims.ClientID, resources, jsonTime(now)
		set := sq.Eq{"secret": sealed, "secret_key_id": keyID, "updated_at": d.Timestamp(now),
			"client_id": ep.ClientID, "grant_resources": jsonList(resources), "grant_branches": jsonList(branches),
			"previous_secret": nil, "previous_secret_key_id": "", "previous_secret_until": nil}
		ep.PreviousSecretExpiresAt = nil
		if grace > 0 {
			// Sealed with the endpoint's id as its additional data, the
			// old secret moves as it is.
			until := now.Add(grace)
			set["previous_secret"], set["previous_secret_key_id"], set["previous_secret_until"] = old, oldKeyID, d.Timestamp(until)
			ep.PreviousSecretExpiresAt = timePtr(until)
		}
		if err := a.exec(ctx, tx, "rotate secret", sq.Update(endpointsTable).SetMap(set).Where(sq.Eq{"organization_id": t.OrganizationID, "id": id})); err != nil {
			return err
		}
		// The answer is kept without the secret (see replay).
		if ans, err = endpointAnswer(http.StatusOK, ep, map[string]string{"Cache-Control": "no-store"}); err != nil {
			return err
		}
		if err := a.audit(ctx, tx, r, audit.WebhookEndpointSecretRotated, id, map[string]any{"grace_seconds": int64(grace / time.Second)}); err != nil {
			return err
		}
		return a.remember(ctx, tx, r, ans)
	})
	if err != nil {
		return a.failedWrite(w, r, err)
	}
	ep.Secret = secret
	body, err := json.Marshal(envelope{Data: ep, Version: apiVersion})
	if err != nil {
		return apierrors.Internal(err)
	}
	ans.Body = body
	send(w, ans)
	return nil
}

// TestEventType is the type of the event POST .../{id}/test delivers.
const TestEventType = "webhook.test"

// sendTest is POST {prefix}/{organizationId}/webhook_endpoints/{id}/test:
// it queues a webhook.test event for the endpoint alone and answers 202
// with its delivery.
func (a *API) sendTest(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	if _, err := readActionBody(w, r, nil); err != nil {
		return err
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	d := a.Registry.Dialect
	var ans *idempotency.Answer
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		// Locked: the tests of one endpoint take their numbers one at a
		// time.
		ep, err := a.endpointFor(ctx, tx, t, rc, id, true)
		if err != nil {
			return err
		}
		if ep.Status != statusEnabled {
			return apierrors.Conflict("the endpoint is disabled; enable it (PATCH status enabled), then send a test")
		}
		text, args, err := sqlbuild.SQL(d, sq.Select("coalesce(min(event_seq), 0)").From(deliveriesTable).
			Where(sq.And{sq.Eq{"endpoint_id": id}, sq.Lt{"event_seq": 0}}))
		if err != nil {
			return apierrors.Internal(err)
		}
		var lowest int64
		if err := tx.QueryRowContext(ctx, text, args...).Scan(&lowest); err != nil {
			return dbError("number a test", err)
		}
		now := a.now()
		eventID := newID()
		body, err := a.testEvent(r, t.OrganizationID, eventID, ep, now)
		if err != nil {
			return apierrors.Internal(err)
		}
		deliveryID := newID()
		ts := d.Timestamp(now)
		// The event is its own record: it waits for no other delivery and
		// holds none up.
		if err := a.exec(ctx, tx, "queue a test", sq.Insert(deliveriesTable).
			Columns("id", "endpoint_id", "organization_id", "event_seq", "event_id", "record_id", "status", "attempts",
				"next_attempt_at", "created_at", "updated_at", "body", "event_type").
			Values(deliveryID, id, t.OrganizationID, lowest-1, eventID, eventID, deliveryPending, 0, ts, ts, ts, string(body), TestEventType)); err != nil {
			return err
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

// testEvent returns the CloudEvent JSON of a test of the endpoint ep: its
// source is the endpoint's path, its subject the endpoint's id, and its
// data, in the shape of every event's, the endpoint as the API shows it
// (without its secret) with nothing changed.
func (a *API) testEvent(r *http.Request, org, eventID string, ep *endpointView, now time.Time) ([]byte, error) {
	t := tenant(r)
	var userID string
	if !t.Claims.ClientCredentials() {
		userID = t.Claims.Subject
	}
	prefix := ""
	if ps := a.prefixes(); len(ps) > 0 {
		prefix = ps[0]
	}
	return endpointEvent(TestEventType, eventID, prefix, org, ep, []string{}, now, t.Claims.ClientID, userID)
}

// wake tells the dispatcher that deliveries are due now (API.Wake).
func (a *API) wake() {
	if a.Wake != nil {
		a.Wake()
	}
}

// The bounds of one recovery.
const (
	// MaxRecover is how many events one recovery queues at most; a
	// recovery that had more answers next_since, where the next one
	// starts.
	MaxRecover = 10000
	// maxRecoverScan is how many events of the range one recovery reads
	// at most, however few of them the endpoint wants.
	maxRecoverScan = 2 * MaxRecover
	// recoverInsertBatch is how many deliveries one statement of a
	// recovery writes: 11 parameters each, well within the bounds of both
	// databases.
	recoverInsertBatch = 500
)

// recovered is the answer of a recovery.
type recovered struct {
	Queued    int       `json:"queued"`
	NextSince *jsonTime `json:"next_since"`
}

// parseTime reads the RFC 3339 timestamp of the member name of members;
// ok is false when it is absent.
func parseTime(members map[string]json.RawMessage, name string) (at time.Time, ok bool, err error) {
	raw, ok := members[name]
	if !ok {
		return time.Time{}, false, nil
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, true, apierrors.InvalidRequest("%s must be an RFC 3339 timestamp, such as 2026-11-24T10:00:00Z", name)
	}
	at, err = time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, true, apierrors.InvalidRequest("%s must be an RFC 3339 timestamp, such as 2026-11-24T10:00:00Z, not %q", name, excerpt.Cut(s, 64))
	}
	return at.UTC(), true, nil
}

// recoverEvents is POST {prefix}/{organizationId}/webhook_endpoints/{id}/recover.
func (a *API) recoverEvents(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	members, err := readActionBody(w, r, []string{"since", "until"})
	if err != nil {
		return err
	}
	since, ok, err := parseTime(members, "since")
	if err != nil {
		return err
	}
	if !ok {
		return apierrors.InvalidRequest("since is required: the time from which the events are sent again (RFC 3339)")
	}
	now := a.now()
	until, ok, err := parseTime(members, "until")
	if err != nil {
		return err
	}
	if !ok {
		until = now
	}
	switch {
	case since.After(now):
		return apierrors.InvalidRequest("since is in the future: give a time in the past from which the events are sent again")
	case !until.After(since):
		return apierrors.InvalidRequest("until must be after since: the events sent again are those from since (included) to until (excluded)")
	case a.EventRetention > 0 && since.Before(now.Add(-a.EventRetention)):
		return apierrors.InvalidRequest("since is older than the events are kept (%s): give a time after %s",
			a.EventRetention, now.Add(-a.EventRetention).Format(time.RFC3339))
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	d := a.Registry.Dialect
	// Number every event committed so far, so that the range holds them
	// all (one call of Sequence numbers a batch).
	for {
		n, err := eventstore.Sequence(ctx, a.Registry.DB, d)
		if err != nil {
			return apierrors.Internal(err)
		}
		if n < eventstore.SequenceBatch {
			break
		}
	}
	// The organization's branches, for the events about endpoints (see
	// coverBranches), before the transaction, which on SQLite holds the
	// one connection.
	all, err := orgBranches(ctx, a.Registry.Branches, t.OrganizationID)
	if err != nil {
		return apierrors.Internal(err)
	}
	var ans *idempotency.Answer
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		ep, err := a.endpointFor(ctx, tx, t, rc, id, true)
		if err != nil {
			return err
		}
		// As a redelivery: the token must be able to read everything it
		// sends, and it grants nothing.
		if err := checkCutOff(t, ep); err != nil {
			return err
		}
		if err := a.checkCovers(t, ep.EventTypes, ep.grantResources); err != nil {
			return err
		}
		logger := a.Registry.Logger
		if logger == nil {
			logger = slog.Default()
		}
		subs, err := readSubscriptions(ctx, tx, d, logger, sq.Eq{"id": id})
		if err != nil {
			return dbError("read endpoint", err)
		}
		coverBranches(all, subs)
		out := recovered{}
		if len(subs) == 1 {
			if out, err = a.queueRange(ctx, tx, t.OrganizationID, &subs[0], since, until, now); err != nil {
				return err
			}
		}
		body, err := json.Marshal(envelope{Data: out, Version: apiVersion})
		if err != nil {
			return apierrors.Internal(err)
		}
		ans = &idempotency.Answer{Status: http.StatusAccepted, Body: body}
		return a.remember(ctx, tx, r, ans)
	})
	if err != nil {
		return a.failedWrite(w, r, err)
	}
	a.wake()
	send(w, ans)
	return nil
}

// queueRange queues again, in tx, for the endpoint sub of org, the events
// with since <= time < until that it wants (subscription.wants), at most
// MaxRecover of them, reading at most maxRecoverScan: a delivery that
// exists and is not pending becomes pending and due now, with a new round
// of attempts (as a redelivery); a missing one is made. Every one is due
// at now, so the dispatcher sends them in the order of the events, each
// after the earlier deliveries of its record.
func (a *API) queueRange(ctx context.Context, tx *sql.Tx, org string, sub *subscription, since, until, now time.Time) (recovered, error) {
	d := a.Registry.Dialect
	head, purged, err := eventstore.Head(ctx, tx, d, org)
	if err != nil {
		return recovered{}, dbError("event head", err)
	}
	if purged > 0 && a.EventRetention <= 0 {
		// Without the retention, what retention removed says how far back
		// the events are whole: from the oldest kept.
		text, args, err := sqlbuild.SQL(d, sq.Select("min(time)").From(eventsTable).Where(sq.Eq{"organization_id": org}))
		if err != nil {
			return recovered{}, apierrors.Internal(err)
		}
		var oldest any
		if err := tx.QueryRowContext(ctx, text, args...).Scan(&oldest); err != nil {
			return recovered{}, dbError("oldest event", err)
		}
		if oldest != nil {
			at, err := query.ScanTimestamp(oldest)
			if err != nil {
				return recovered{}, dbError("oldest event", err)
			}
			if since.Before(at) {
				return recovered{}, apierrors.InvalidRequest("since is older than the events kept: give a time from %s, the oldest event kept", at.Format(time.RFC3339Nano))
			}
		}
	}
	text, args, err := sqlbuild.SQL(d, sq.Select("seq", "id", "type", "resource", "branch_id", "record_id", "time", "body").From(eventsTable).
		Where("organization_id = ? AND time >= ? AND time < ? AND seq > ? AND seq <= ?", org, d.Timestamp(since), d.Timestamp(until), sub.afterSeq, head).
		OrderBy("time", "seq").Limit(maxRecoverScan))
	if err != nil {
		return recovered{}, apierrors.Internal(err)
	}
	rows, err := tx.QueryContext(ctx, text, args...)
	if err != nil {
		return recovered{}, dbError("read events", err)
	}
	var (
		queue   []eventstore.Stored
		scanned int
		last    time.Time
		more    bool
	)
	for rows.Next() {
		var (
			e      eventstore.Stored
			branch sql.NullString
			at     any
			body   string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Resource, &branch, &e.RecordID, &at, &body); err != nil {
			rows.Close()
			return recovered{}, dbError("read events", err)
		}
		if e.Time, err = query.ScanTimestamp(at); err != nil {
			rows.Close()
			return recovered{}, dbError("read events", err)
		}
		e.BranchID, e.Body = branch.String, []byte(body)
		scanned++
		if !sub.wants(&fanEvent{Stored: &e}) {
			if scanned == maxRecoverScan {
				more, last = true, e.Time
			}
			continue
		}
		if len(queue) == MaxRecover {
			more = true // one more it wants: the next recovery starts at the last queued
			break
		}
		e.Body = nil
		queue = append(queue, e)
		last = e.Time
		if scanned == maxRecoverScan {
			more = true
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return recovered{}, dbError("read events", err)
	}
	ts := d.Timestamp(now)
	for start := 0; start < len(queue); start += recoverInsertBatch {
		b := sq.Insert(deliveriesTable).Columns("id", "endpoint_id", "organization_id", "event_seq", "event_id", "record_id",
			"status", "attempts", "next_attempt_at", "created_at", "updated_at")
		for _, e := range queue[start:min(start+recoverInsertBatch, len(queue))] {
			b = b.Values(newID(), sub.id, org, e.Seq, e.ID, e.RecordID, deliveryPending, 0, ts, ts, ts)
		}
		// A pending delivery is left as it is: it is sent anyway, and one
		// in flight keeps its lease.
		b = b.Suffix(`ON CONFLICT (endpoint_id, event_seq) DO UPDATE SET status = 'pending', attempts = 0,
	next_attempt_at = excluded.next_attempt_at, lease_until = NULL, updated_at = excluded.updated_at
WHERE ` + deliveriesTable + `.status <> 'pending'`)
		if err := a.exec(ctx, tx, "queue deliveries", b); err != nil {
			return recovered{}, err
		}
	}
	out := recovered{Queued: len(queue)}
	if more {
		out.NextSince = timePtr(last)
	}
	return out, nil
}
