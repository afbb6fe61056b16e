package webhook

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/webhook/signature"
)

// This file serves the actions on one endpoint: POST .../{id}/rotate_secret,
// .../{id}/test and .../{id}/recover. Their bodies are refused with 400
// invalid_request (they change no member of the endpoint the way a PATCH
// does).

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
		text, args, err := d.SQL(sq.Select("secret", "secret_key_id").From(endpointsTable).Where(sq.Eq{"id": id}))
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
		text, args, err := d.SQL(sq.Select("coalesce(min(event_seq), 0)").From(deliveriesTable).
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
		list, err := a.readDeliveries(ctx, tx, deliveryFilter{org: t.OrganizationID, endpointID: id, id: deliveryID})
		if err != nil {
			return err
		}
		out, err := json.Marshal(envelope{Data: list[0], Version: apiVersion})
		if err != nil {
			return apierrors.Internal(err)
		}
		ans = &idempotency.Answer{Status: http.StatusAccepted, Body: out}
		return a.remember(ctx, tx, r, ans)
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
