package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/conditional"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/webhook/signature"
)

// This file serves the endpoints themselves: create, list, get, update,
// delete.

// The tables of the package.
const (
	endpointsTable  = "waybill_webhook_endpoints"
	deliveriesTable = "waybill_webhook_deliveries"
	attemptsTable   = "waybill_webhook_attempts"
	eventsTable     = eventstore.Table
)

// The statuses of an endpoint.
const (
	statusEnabled  = "enabled"
	statusDisabled = "disabled"
)

// disabledByAPI is the disabled_reason of an endpoint a PATCH disabled.
const disabledByAPI = "disabled through the API"

// endpoint is an endpoint as the API shows it.
type endpointView struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	EventTypes     []string `json:"event_types"`
	BranchIDs      []string `json:"branch_ids"`
	Filter         []string `json:"filter"`
	RateLimit      *int     `json:"rate_limit"`
	Status         string   `json:"status"`
	DisabledReason *string  `json:"disabled_reason"`
	ClientID       string   `json:"client_id"`
	CreatedAt      jsonTime `json:"created_at"`
	UpdatedAt      jsonTime `json:"updated_at"`
	// PreviousSecretExpiresAt is, after a rotation of the secret, when the
	// previous secret stops signing deliveries; null when it no longer
	// does (or was never rotated).
	PreviousSecretExpiresAt *jsonTime `json:"previous_secret_expires_at"`
	// Secret is set in the answers of POST and rotate_secret only.
	Secret string `json:"secret,omitempty"`

	reason         string            // disabled_reason as stored
	filter         []storedCondition // filter as stored; nil: none
	grantResources []string          // grant_resources
	cutOffAt       *time.Time        // cut_off_at: when set, the endpoint was disabled by the disconnection of ClientID then
}

// endpointColumns are the columns scanEndpoint reads.
var endpointColumns = []string{"id", "url", "event_types", "branch_ids", "status", "disabled_reason", "client_id", "created_at", "updated_at",
	"grant_resources", "cut_off_at", "filter", "rate_limit", "previous_secret_until"}

// scanEndpoint reads a row of endpointColumns.
func scanEndpoint(row interface{ Scan(...any) error }) (*endpointView, error) {
	var (
		ep                       endpointView
		types, grant             string
		branches                 sql.NullString
		created, updated, cutOff any
		filter                   *string
		rateLimit                sql.NullInt64
		previousUntil            any
	)
	if err := row.Scan(&ep.ID, &ep.URL, &types, &branches, &ep.Status, &ep.reason, &ep.ClientID, &created, &updated, &grant, &cutOff, &filter, &rateLimit, &previousUntil); err != nil {
		return nil, err
	}
	errs := []error{json.Unmarshal([]byte(types), &ep.EventTypes), json.Unmarshal([]byte(grant), &ep.grantResources)}
	var err error
	ep.filter, err = readStoredFilter(filter)
	errs = append(errs, err)
	ep.Filter = filterConditions(ep.filter)
	if rateLimit.Valid {
		n := int(rateLimit.Int64)
		ep.RateLimit = &n
	}
	if branches.Valid {
		errs = append(errs, json.Unmarshal([]byte(branches.String), &ep.BranchIDs))
	}
	if cutOff != nil {
		at, err := query.ScanTimestamp(cutOff)
		errs = append(errs, err)
		ep.cutOffAt = &at
	}
	if previousUntil != nil {
		at, err := query.ScanTimestamp(previousUntil)
		errs = append(errs, err)
		if at.After(time.Now()) {
			ep.PreviousSecretExpiresAt = timePtr(at)
		}
	}
	c, err := query.ScanTimestamp(created)
	errs = append(errs, err)
	u, err := query.ScanTimestamp(updated)
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	ep.CreatedAt, ep.UpdatedAt = jsonTime(c), jsonTime(u)
	ep.show()
	return &ep, nil
}

// show sets the DisabledReason the API shows: null while enabled.
func (ep *endpointView) show() {
	ep.DisabledReason = nil
	if ep.Status == statusDisabled {
		r := ep.reason
		ep.DisabledReason = &r
	}
}

// endpointInput is what a POST or PATCH body sets.
type endpointInput struct {
	url           *string
	eventTypes    []string // nil: not set
	setBranches   bool
	branchIDs     []string // nil with setBranches: every branch
	status        *string
	setFilter     bool     // the body gives filter
	filter        []string // nil with setFilter: no filter
	setRateLimit  bool     // the body gives rate_limit
	rateLimit     *int     // nil with setRateLimit: no limit
	refuse        refusal
	givenBranches bool // branch_ids named branches (checked against the organization)
}

// setsSubscription reports whether the input sets what the endpoint
// subscribes to: event_types or branch_ids.
func (in *endpointInput) setsSubscription() bool { return in.eventTypes != nil || in.setBranches }

// fields names the members the input gives, for the audit log.
func (in *endpointInput) fields() []string {
	out := []string{}
	for _, f := range []struct {
		name  string
		given bool
	}{{"url", in.url != nil}, {"event_types", in.eventTypes != nil}, {"branch_ids", in.setBranches}, {"status", in.status != nil},
		{"filter", in.setFilter}, {"rate_limit", in.setRateLimit}} {
		if f.given {
			out = append(out, f.name)
		}
	}
	return out
}

// readEndpoint reads and validates the body of a POST (create) or PATCH:
// the types and shapes of its members, the URL (Guard.CheckURL) and the
// event types. What the token may do is checked later (authorize).
func (a *API) readEndpoint(w http.ResponseWriter, r *http.Request, create bool) (*endpointInput, error) {
	refuse, allowed := refusal(apierrors.InvalidUpdate), []string{"url", "event_types", "branch_ids", "filter", "rate_limit", "status"}
	if create {
		refuse, allowed = apierrors.InvalidCreate, []string{"url", "event_types", "branch_ids", "filter", "rate_limit"}
	}
	members, err := readBody(w, r, allowed, refuse)
	if err != nil {
		return nil, err
	}
	in := &endpointInput{refuse: refuse}
	if create {
		for _, name := range []string{"url", "event_types"} {
			if _, ok := members[name]; !ok {
				return nil, refuse("%s is required", name)
			}
		}
	}
	if raw, ok := members["url"]; ok {
		u, err := decodeString(raw, "url", refuse)
		if err != nil {
			return nil, err
		}
		if len(u) > maxURLLength {
			return nil, refuse("url is longer than %d characters", maxURLLength)
		}
		if err := a.Guard.CheckURL(r.Context(), u); err != nil {
			return nil, refuse("url: %s", err.Error())
		}
		in.url = &u
	}
	if raw, ok := members["event_types"]; ok {
		types, err := decodeStrings(raw, "event_types", refuse)
		if err != nil {
			return nil, err
		}
		if in.eventTypes, err = a.parsePatterns(types, refuse); err != nil {
			return nil, err
		}
	}
	if raw, ok := members["branch_ids"]; ok {
		in.setBranches = true
		if !isNull(raw) {
			ids, err := decodeStrings(raw, "branch_ids", refuse)
			if err != nil {
				return nil, refuse("branch_ids must be an array of branch ids, or null for every branch")
			}
			if len(ids) == 0 {
				return nil, refuse("branch_ids must name at least one branch, or be null for every branch")
			}
			for i, id := range ids {
				c, ok := query.CanonicalUUID(id)
				if !ok {
					return nil, refuse("branch_ids: %q is not a branch of the organization", excerpt.Cut(id, 64))
				}
				ids[i] = c
			}
			in.branchIDs, in.givenBranches = dedupe(ids), true
		}
	}
	if raw, ok := members["filter"]; ok {
		in.setFilter = true
		if !isNull(raw) {
			l, err := decodeStrings(raw, "filter", refuse)
			if err != nil {
				return nil, refuse("filter must be an array of conditions field:operator:value, or null for every event")
			}
			in.filter = nonNilStrings(l)
		}
	}
	if raw, ok := members["rate_limit"]; ok {
		in.setRateLimit = true
		if !isNull(raw) {
			n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil || n < 1 || n > MaxRateLimit {
				return nil, refuse("rate_limit must be a whole number of deliveries a second from 1 to %d, or null for no limit", MaxRateLimit)
			}
			in.rateLimit = &n
		}
	}
	if raw, ok := members["status"]; ok {
		s, err := decodeString(raw, "status", refuse)
		if err != nil || (s != statusEnabled && s != statusDisabled) {
			return nil, refuse("status must be %q or %q", statusEnabled, statusDisabled)
		}
		in.status = &s
	}
	return in, nil
}

// nonNilStrings returns l, or an empty slice for nil.
func nonNilStrings(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// checkFilter checks the filter of the endpoint as the write leaves it —
// the filter in, or else the stored one, against the event types in, or
// else the stored ones — and returns it as stored (nil: none).
func (a *API) checkFilter(in *endpointInput, stored []storedCondition, types []string) ([]storedCondition, error) {
	conditions := filterConditions(stored)
	if in.setFilter {
		conditions = in.filter
	}
	if conditions == nil {
		return nil, nil
	}
	return a.parseFilter(conditions, types, in.refuse)
}

// parsePatterns checks the event types of a body (see API): 1 to
// MaxEventTypes patterns of the API's resources, returned without
// duplicates.
func (a *API) parsePatterns(types []string, refuse refusal) ([]string, error) {
	if len(types) == 0 {
		return nil, refuse("event_types must list at least one event type, or \"*\" for every type")
	}
	if len(types) > MaxEventTypes {
		return nil, refuse("event_types lists %d event types; at most %d are allowed", len(types), MaxEventTypes)
	}
	names := a.resourceNames()
	for _, s := range types {
		_, ok := events.ParsePattern(s, names)
		if !ok {
			_, ok = events.ParseKindPattern(s, EventKinds())
		}
		if !ok {
			return nil, refuse("event_types: %q is not an event type: give <resource>.<change> (as quotation.created), <resource>.*, %s, or *", excerpt.Cut(s, 64), EndpointDisabledType)
		}
	}
	return dedupe(types), nil
}

// jsonList returns l as the JSON array stored in a text column, nil (NULL)
// for a nil l.
func jsonList(l []string) any {
	if l == nil {
		return nil
	}
	b, _ := json.Marshal(l) // a []string always marshals
	return string(b)
}

// lockOrganization serializes, on PostgreSQL, the transactions that add
// endpoints to one organization with each other and with the fan-out of
// its events: it locks the organization's row of the fan-out (made at the
// event head when missing). So two concurrent POSTs cannot both pass
// MaxEndpoints, and a new endpoint's after_seq, read under the lock, is
// never behind what the fan-out already handed out without it: it gets
// every event after it. SQLite has one writer already.
func (a *API) lockOrganization(ctx context.Context, tx *sql.Tx, org string) error {
	if a.Registry.Dialect != query.Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO waybill_webhook_fanout (organization_id, seq)
		VALUES ($1, coalesce((SELECT seq FROM waybill_event_heads WHERE organization_id = $1), 0))
		ON CONFLICT (organization_id) DO NOTHING`, org); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `SELECT 1 FROM waybill_webhook_fanout WHERE organization_id = $1 FOR UPDATE`, org)
	return err
}

// create is POST {prefix}/{organizationId}/webhook_endpoints.
func (a *API) create(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	in, err := a.readEndpoint(w, r, true)
	if err != nil {
		return err
	}
	orgBranches, err := a.orgBranches(ctx, t, in)
	if err != nil {
		return err
	}
	in.setBranches = true // POST always sets them: absent is every branch
	if err := a.authorize(t, in, orgBranches, nil); err != nil {
		return err
	}
	filter, err := a.checkFilter(in, nil, in.eventTypes)
	if err != nil {
		return err
	}
	now := a.now()
	ep := &endpointView{
		ID: newID(), URL: *in.url, EventTypes: in.eventTypes, BranchIDs: in.branchIDs, Status: statusEnabled,
		Filter: filterConditions(filter), RateLimit: in.rateLimit,
		ClientID: t.Claims.ClientID, CreatedAt: jsonTime(now), UpdatedAt: jsonTime(now), filter: filter,
	}
	grantResources, grantBranches := a.grant(t)
	// Number the events committed so far, so that the head read below
	// counts them: the endpoint gets only what comes after it.
	if _, err := eventstore.Sequence(ctx, a.Registry.DB, a.Registry.Dialect); err != nil {
		return apierrors.Internal(err)
	}
	secret := signature.NewSecret()
	sealed, keyID := []byte(secret), ""
	if a.Sealer != nil {
		sealed, keyID = a.Sealer.Seal([]byte(secret), []byte(ep.ID))
	}
	d := a.Registry.Dialect
	var ans *idempotency.Answer
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		if err := a.lockOrganization(ctx, tx, t.OrganizationID); err != nil {
			return dbError("lock", err)
		}
		text, args, err := sqlbuild.SQL(d, sq.Select("count(*)").From(endpointsTable).Where(sq.Eq{"organization_id": t.OrganizationID}))
		if err != nil {
			return apierrors.Internal(err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, text, args...).Scan(&n); err != nil {
			return dbError("count endpoints", err)
		}
		if n >= a.maxEndpoints() {
			return apierrors.Conflict("the organization has %d webhook endpoints, the most it may have; delete one first", n)
		}
		head, _, err := eventstore.Head(ctx, tx, d, t.OrganizationID)
		if err != nil {
			return dbError("event head", err)
		}
		text, args, err = sqlbuild.SQL(d, sq.Insert(endpointsTable).
			Columns("id", "organization_id", "url", "event_types", "branch_ids", "grant_resources", "grant_branches",
				"secret", "secret_key_id", "status", "disabled_reason", "client_id", "after_seq", "created_at", "updated_at", "filter", "rate_limit").
			Values(ep.ID, t.OrganizationID, ep.URL, jsonList(ep.EventTypes), jsonList(ep.BranchIDs), jsonList(grantResources), jsonList(grantBranches),
				sealed, keyID, ep.Status, "", ep.ClientID, head, d.Timestamp(now), d.Timestamp(now), storedFilter(filter), rateLimitColumn(ep.RateLimit)))
		if err != nil {
			return apierrors.Internal(err)
		}
		if _, err := tx.ExecContext(ctx, text, args...); err != nil {
			return dbError("insert endpoint", err)
		}
		ep.show()
		// The answer is kept without the secret (see replay).
		ans, err = endpointAnswer(http.StatusCreated, ep, map[string]string{
			"Location":      location(r, ep.ID),
			"Cache-Control": "no-store", // the answer holds a credential
		})
		if err != nil {
			return err
		}
		if err := a.audit(ctx, tx, r, audit.WebhookEndpointCreated, ep.ID, map[string]any{"url": ep.URL, "event_types": ep.EventTypes}); err != nil {
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

// errNoEndpoint is the answer for an id that names no endpoint of the
// organization, or is not a UUID.
func errNoEndpoint() error { return apierrors.NotFound("no webhook endpoint with this id") }

// selectEndpoint selects the endpointColumns of the endpoint id.
func selectEndpoint(id string) sq.SelectBuilder {
	return sq.Select(endpointColumns...).From(endpointsTable).Where(sq.Eq{"id": id})
}

// findEndpoint reads the endpoint id of org, locked for update on
// PostgreSQL when forUpdate.
func (a *API) findEndpoint(ctx context.Context, q eventstore.Querier, org, id string, forUpdate bool) (*endpointView, error) {
	b := selectEndpoint(id).Where(sq.Eq{"organization_id": org})
	if forUpdate && a.Registry.Dialect == query.Postgres {
		b = b.Suffix("FOR UPDATE")
	}
	text, args, err := sqlbuild.SQL(a.Registry.Dialect, b)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	ep, err := scanEndpoint(q.QueryRowContext(ctx, text, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoEndpoint()
	}
	if err != nil {
		return nil, dbError("read endpoint", err)
	}
	return ep, nil
}

// endpointID returns the {id} of r, canonical, or the 404.
func endpointID(r *http.Request) (string, error) {
	id, ok := query.CanonicalUUID(r.PathValue("id"))
	if !ok {
		return "", errNoEndpoint()
	}
	return id, nil
}

// get is GET {prefix}/{organizationId}/webhook_endpoints/{id}.
func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	rc, err := a.reachOf(r.Context(), t)
	if err != nil {
		return err
	}
	ep, err := a.endpointFor(r.Context(), a.Registry.DB, t, rc, id, false)
	if err != nil {
		return err
	}
	ans, err := endpointAnswer(http.StatusOK, ep, nil)
	if err != nil {
		return err
	}
	if l, ok := conditional.IfNoneMatch(r); ok && l.Matches(ans.Headers["ETag"], true) {
		conditional.NotModified(w, ans.Headers["ETag"])
		return nil
	}
	send(w, ans)
	return nil
}

// endpointList is the answer of the list.
type endpointList struct {
	Data       []*endpointView `json:"data"`
	Pagination listPagination  `json:"pagination"`
	Version    string          `json:"version"`
}

type listPagination struct {
	Limit      int     `json:"limit"`
	Offset     int     `json:"offset"`
	Total      int     `json:"total"`
	NextCursor *string `json:"next_cursor"`
}

// list is GET {prefix}/{organizationId}/webhook_endpoints: the endpoints
// of the organization, oldest first, by limit (1 to 100, default 100) and
// offset.
func (a *API) list(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	params, err := queryParams(r, "limit", "offset")
	if err != nil {
		return err
	}
	limit, err := intParam(params, "limit", maxEndpointLimit, 1, maxEndpointLimit)
	if err != nil {
		return err
	}
	offset, err := intParam(params, "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	// An organization has at most MaxEndpoints: the page is cut here, after
	// the endpoints out of the token's reach are left out.
	text, args, err := sqlbuild.SQL(a.Registry.Dialect, sq.Select(endpointColumns...).From(endpointsTable).Where(sq.Eq{"organization_id": t.OrganizationID}).
		OrderBy("created_at", "id"))
	if err != nil {
		return apierrors.Internal(err)
	}
	rows, err := a.Registry.DB.QueryContext(ctx, text, args...)
	if err != nil {
		return dbError("list endpoints", err)
	}
	defer rows.Close()
	var visible []*endpointView
	for rows.Next() {
		ep, err := scanEndpoint(rows)
		if err != nil {
			return dbError("list endpoints", err)
		}
		if rc.sees(ep) {
			visible = append(visible, ep)
		}
	}
	if err := rows.Err(); err != nil {
		return dbError("list endpoints", err)
	}
	out := endpointList{Data: []*endpointView{}, Pagination: listPagination{Limit: limit, Offset: offset, Total: len(visible)}, Version: apiVersion}
	if offset < len(visible) {
		out.Data = append(out.Data, visible[offset:min(len(visible), offset+limit)]...)
	}
	return writeJSON(w, http.StatusOK, out)
}

// update is PATCH {prefix}/{organizationId}/webhook_endpoints/{id}.
func (a *API) update(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	in, err := a.readEndpoint(w, r, false)
	if err != nil {
		return err
	}
	orgBranches, err := a.orgBranches(ctx, t, in)
	if err != nil {
		return err
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	d := a.Registry.Dialect
	var ans *idempotency.Answer
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		ep, err := a.endpointFor(ctx, tx, t, rc, id, true)
		if err != nil {
			return err
		}
		// Who may change it comes before If-Match: a refused change is
		// refused whatever version it names.
		if err := checkCutOff(t, ep); err != nil {
			return err
		}
		if err := a.authorize(t, in, orgBranches, ep.BranchIDs); err != nil {
			return err
		}
		types := ep.EventTypes
		if in.eventTypes != nil {
			types = in.eventTypes
		}
		// The endpoint as changed must get nothing the token could not
		// read itself; it then acts under the token's authority.
		if err := a.checkCovers(t, types, ep.grantResources); err != nil {
			return err
		}
		filter, err := a.checkFilter(in, ep.filter, types)
		if err != nil {
			return err
		}
		if err := checkIfMatch(r, ep); err != nil {
			return err
		}
		now := a.now()
		set := sq.Eq{"updated_at": d.Timestamp(now)}
		if in.url != nil {
			ep.URL, set["url"] = *in.url, *in.url
		}
		if in.eventTypes != nil {
			ep.EventTypes, set["event_types"] = in.eventTypes, jsonList(in.eventTypes)
		}
		if in.setBranches {
			ep.BranchIDs, set["branch_ids"] = in.branchIDs, jsonList(in.branchIDs)
		}
		if in.setFilter || in.eventTypes != nil {
			// New event types may give a field another resource's type.
			ep.filter, set["filter"] = filter, storedFilter(filter)
			ep.Filter = filterConditions(filter)
		}
		if in.setRateLimit {
			ep.RateLimit, set["rate_limit"] = in.rateLimit, rateLimitColumn(in.rateLimit)
		}
		resources, branches := a.grant(t)
		ep.ClientID, ep.grantResources = t.Claims.ClientID, resources
		set["client_id"], set["grant_resources"], set["grant_branches"] = ep.ClientID, jsonList(resources), jsonList(branches)
		if in.status != nil && *in.status != ep.Status {
			ep.Status, ep.reason = *in.status, ""
			if ep.Status == statusDisabled {
				ep.reason = disabledByAPI
			}
			ep.cutOffAt = nil
			set["status"], set["disabled_reason"], set["cut_off_at"] = ep.Status, ep.reason, nil
		}
		ep.UpdatedAt = jsonTime(now)
		ep.show()
		if err := a.exec(ctx, tx, "update endpoint", sq.Update(endpointsTable).SetMap(set).Where(sq.Eq{"organization_id": t.OrganizationID, "id": id})); err != nil {
			return err
		}
		if ans, err = endpointAnswer(http.StatusOK, ep, nil); err != nil {
			return err
		}
		if err := a.audit(ctx, tx, r, audit.WebhookEndpointChanged, id, map[string]any{"fields": in.fields()}); err != nil {
			return err
		}
		return a.remember(ctx, tx, r, ans)
	})
	if err != nil {
		return a.failedWrite(w, r, err)
	}
	send(w, ans)
	return nil
}

// delete is DELETE {prefix}/{organizationId}/webhook_endpoints/{id}: it
// removes the endpoint with its deliveries and their attempts, and answers
// with the endpoint as it was.
func (a *API) delete(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	ctx := r.Context()
	id, err := endpointID(r)
	if err != nil {
		return err
	}
	rc, err := a.reachOf(ctx, t)
	if err != nil {
		return err
	}
	var ep *endpointView
	err = a.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if ep, err = a.endpointFor(ctx, tx, t, rc, id, true); err != nil {
			return err
		}
		if err := checkIfMatch(r, ep); err != nil {
			return err
		}
		// Explicitly, not by ON DELETE CASCADE alone: a SQLite connection
		// enforces foreign keys only when it was opened with them on.
		deliveries := sq.Select("id").From(deliveriesTable).Where(sq.Eq{"endpoint_id": id})
		for _, b := range []sq.Sqlizer{
			sq.Delete(attemptsTable).Where(sq.Expr("delivery_id IN (?)", deliveries)),
			sq.Delete(deliveriesTable).Where(sq.Eq{"endpoint_id": id}),
			sq.Delete(endpointsTable).Where(sq.Eq{"organization_id": t.OrganizationID, "id": id}),
		} {
			if err := a.exec(ctx, tx, "delete endpoint", b); err != nil {
				return err
			}
		}
		return a.audit(ctx, tx, r, audit.WebhookEndpointDeleted, id, map[string]any{"url": ep.URL})
	})
	if err != nil {
		return a.failedWrite(w, r, err)
	}
	ans, err := endpointAnswer(http.StatusOK, ep, nil)
	if err != nil {
		return err
	}
	send(w, ans)
	return nil
}

// MaxRateLimit is the highest rate_limit of an endpoint: deliveries a
// second.
const MaxRateLimit = 10000

// rateLimitColumn returns n as the rate_limit column holds it: NULL for no
// limit.
func rateLimitColumn(n *int) any {
	if n == nil {
		return nil
	}
	return int64(*n)
}
