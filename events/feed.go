package events

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// The page sizes of the feed.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// MaxTypes is how many event types the types parameter of the feed may
// list, counted as given: duplicates count, then are dropped. A webhook
// endpoint's event_types has the same bound.
const MaxTypes = 50

// ReadScope is the scope the feed asks besides the read scope of each
// event's resource.
const ReadScope = "svc:events:read"

// scanWindow bounds the events one request of the feed looks at, however
// few of them the token may see: a page ends after at most this many
// sequence numbers, with a next_cursor past them.
const scanWindow = 10000

// Feed serves the change feed of the events an Outbox kept:
//
//	GET {prefix}/{scopeId}/events?after=<cursor>&types=<types>&limit=<n>
//
// It answers {"data": [CloudEvent, ...], "next_cursor": "<cursor>",
// "version": "v1"}, the events in commit order. {scopeId} is the token's
// organization (every branch the token may use) or one of its branches
// (that branch and the organization-wide records). A token sees an event
// only when it has ReadScope and the read scope of the event's resource,
// and may use the record's branch; events of organization-wide records are
// seen from every branch.
//
// next_cursor is always a string: the place to go on from, also on an
// empty page, so that a consumer follows it and polls. Following it never
// misses an event, also while many writers commit at once: events are
// numbered only once they have committed, one after the other (see
// Sequence), and the feed numbers what waits before it reads. Without after,
// the feed starts at the oldest event it keeps. A cursor belongs to its
// organization, for its organization and branch paths alike; one older than
// what Purge kept gets 410 cursor_expired (start again from the lists), and
// one the feed never gave 400 invalid_request.
//
// Kinds adds the events that other packages append (package webhook's
// webhook_endpoint.disabled): a token sees those with ReadScope and the
// kind's ReadScope, from every scope of the organization.
//
// types takes comma-separated event types, a record's types with a
// trailing "*" ("quotation.*"), or "*": at most MaxTypes of them, a type
// given twice counting twice and kept once. An unknown one, or more than
// MaxTypes, is 400 invalid_request.
type Feed struct {
	// Registry is the API whose writes the feed serves, configured once:
	// its database (DB, Dialect), tokens (Verifier), branches, resources
	// (those whose events its Outbox keeps), path prefixes, Middleware
	// (rate limits, after tenancy resolved the tenant), Logger, Realm and
	// ResourceMetadata. Required.
	Registry *resource.Registry
	// Kinds are the events besides the resources' writes that the feed
	// serves (see Kind): their types are accepted in types, and a token
	// sees them with ReadScope and the kind's ReadScope. They belong to no
	// branch: every scope of the organization shows them.
	Kinds []Kind
}

// Mount registers the feed on mux under every prefix.
func (f *Feed) Mount(mux *http.ServeMux) {
	g := f.Registry
	mw := tenancy.Middleware(tenancy.Options{
		Verifier: g.Verifier, Branches: g.Branches, ScopeType: tenancy.OrganizationOrBranch,
		Scope: func(*http.Request) string { return ReadScope }, Logger: g.Logger, Realm: g.Realm,
		ResourceMetadata: g.ResourceMetadata,
	})
	ew := g.ErrorWriter()
	h := ew.Handle(f.serve)
	if g.Middleware != nil {
		h = g.Middleware(h)
	}
	h = mw(h)
	notAllowed := apierrors.MethodNotAllowed("GET", "HEAD")
	refuse := ew.Handle(func(http.ResponseWriter, *http.Request) error { return notAllowed })
	for _, p := range g.PathPrefixes() {
		mux.Handle("GET "+p+"/{scopeId}/events", h)
		mux.Handle(p+"/{scopeId}/events", refuse)
	}
}

// feedQuery is what a request of the feed asks.
type feedQuery struct {
	after    int64
	hasAfter bool
	limit    int
	types    []string // whole types
	prefixes []string // the resources of "x.*" patterns
	all      bool     // "*", or no types
}

func (f *Feed) parse(raw string) (*feedQuery, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, apierrors.InvalidRequest("the query string is malformed")
	}
	q := &feedQuery{limit: DefaultLimit, all: true}
	for name, vs := range values {
		if len(vs) != 1 {
			return nil, apierrors.InvalidRequest("%s: give it once", name)
		}
		v := vs[0]
		switch name {
		case "after":
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
				return nil, apierrors.InvalidRequest("after: not a cursor of this feed")
			}
			q.after, q.hasAfter = n, true
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxLimit {
				return nil, apierrors.InvalidRequest("limit: an integer from 1 to %d", MaxLimit)
			}
			q.limit = n
		case "types":
			if err := f.parseTypes(q, v); err != nil {
				return nil, err
			}
		default:
			return nil, apierrors.InvalidRequest("unknown parameter %q; the feed takes after, types and limit", name)
		}
	}
	return q, nil
}

// parseTypes reads the types parameter v into q: at most MaxTypes
// patterns, counted before a single one is split off, so that a long list
// costs nothing; each kept once.
func (f *Feed) parseTypes(q *feedQuery, v string) error {
	if n := strings.Count(v, ",") + 1; n > MaxTypes {
		return apierrors.InvalidRequest("types lists %d event types; at most %d are allowed", n, MaxTypes)
	}
	names := make([]string, len(f.Registry.Resources()))
	for i, r := range f.Registry.Resources() {
		names[i] = r.Name
	}
	q.all = false
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		p, ok := ParsePattern(s, names)
		if !ok {
			p, ok = ParseKindPattern(s, f.Kinds)
		}
		if !ok {
			return apierrors.InvalidRequest("types: %q is not an event type (such as %s, or %s.* for all of its types)", excerpt.Cut(s, 64), Type(names[0], Created), TypeName(names[0]))
		}
		switch prefix, wildcard := strings.CutSuffix(string(p), "*"); {
		case p == "*":
			q.all = true
		case wildcard:
			if prefix = strings.TrimSuffix(prefix, "."); !slices.Contains(q.prefixes, prefix) {
				q.prefixes = append(q.prefixes, prefix)
			}
		case !slices.Contains(q.types, string(p)):
			q.types = append(q.types, string(p))
		}
	}
	return nil
}

// visible returns the condition on events that keeps those of q's types
// that the tenant may see; ok is false when it may see none.
func (f *Feed) visible(ctx context.Context, t tenancy.Tenant, q *feedQuery) (cond sq.Sqlizer, ok bool, err error) {
	var readable []string
	for _, r := range f.Registry.Resources() {
		if t.HasScope(r.ReadScope()) && (q.all || slices.Contains(q.prefixes, TypeName(r.Name)) || slices.ContainsFunc(q.types, func(typ string) bool { return strings.HasPrefix(typ, TypeName(r.Name)+".") })) {
			readable = append(readable, r.Name)
		}
	}
	everyBranch, err := t.CoversAllBranches(ctx)
	if err != nil {
		return nil, false, err
	}
	var organizationOnly []string // kinds whose events of no branch the tenant may not see
	for _, k := range f.Kinds {
		if k.EveryBranch && !everyBranch {
			organizationOnly = append(organizationOnly, k.Resource)
		}
		if t.HasScope(k.ReadScope) && (q.all || slices.Contains(q.prefixes, TypeName(k.Resource)) || slices.ContainsFunc(q.types, func(typ string) bool { return strings.HasPrefix(typ, TypeName(k.Resource)+".") })) {
			readable = append(readable, k.Resource)
		}
	}
	if len(readable) == 0 {
		return nil, false, nil
	}
	and := sq.And{sq.Eq{"resource": readable}}
	if !q.all {
		// A record's whole types, or every type of a record: both name the
		// resource, so the second is a condition on the resource.
		var resources []string
		for _, r := range f.Registry.Resources() {
			if slices.Contains(q.prefixes, TypeName(r.Name)) {
				resources = append(resources, r.Name)
			}
		}
		for _, k := range f.Kinds {
			if slices.Contains(q.prefixes, TypeName(k.Resource)) {
				resources = append(resources, k.Resource)
			}
		}
		and = append(and, sq.Or{sq.Eq{"type": q.types}, sq.Eq{"resource": resources}})
	}
	if len(organizationOnly) > 0 {
		and = append(and, sq.Or{sq.NotEq{"resource": organizationOnly}, sq.NotEq{"branch_id": nil}})
	}
	switch {
	case t.BranchID != "":
		and = append(and, sq.Or{sq.Eq{"branch_id": nil}, sq.Eq{"branch_id": t.BranchID}})
	case t.Claims.ClientCredentials():
		and = append(and, sq.Or{sq.Eq{"branch_id": nil}, sq.Eq{"branch_id": t.Claims.BranchIDs}})
	}
	return and, true, nil
}

// serve is GET {prefix}/{scopeId}/events: it answers with the page the
// query asks, or returns the error of a query it refuses or a page it
// cannot read, having written nothing.
func (f *Feed) serve(w http.ResponseWriter, r *http.Request) error {
	t, _ := tenancy.FromContext(r.Context())
	q, err := f.parse(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, next, err := f.page(r.Context(), t, q)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 64+len(page)*768)
	buf = append(buf, `{"data":[`...)
	for i, e := range page {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e.Body...)
	}
	buf = append(buf, `],"next_cursor":"`...)
	buf = strconv.AppendInt(buf, next, 10)
	buf = append(buf, `","version":"`+resource.Version+`"}`+"\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	_, _ = w.Write(buf)
	return nil
}

// page reads the page q asks of the tenant's feed and returns it with the
// cursor after it.
func (f *Feed) page(ctx context.Context, t tenancy.Tenant, q *feedQuery) ([]eventstore.Stored, int64, error) {
	if _, err := eventstore.Sequence(ctx, f.Registry.DB, f.Registry.Dialect); err != nil {
		return nil, 0, apierrors.Internal(err)
	}
	head, purged, err := eventstore.Head(ctx, f.Registry.DB, f.Registry.Dialect, t.OrganizationID)
	if err != nil {
		return nil, 0, apierrors.Internal(err)
	}
	after := q.after
	switch {
	case !q.hasAfter:
		after = purged
	case after < purged:
		return nil, 0, apierrors.CursorExpired("the cursor is older than the events this feed keeps; read the current state from the lists and follow the feed from a new cursor")
	case after > head:
		return nil, 0, apierrors.InvalidRequest("after: not a cursor of this organization's feed")
	}
	through := min(head, after+scanWindow)
	if through == after {
		return nil, after, nil
	}
	cond, ok, err := f.visible(ctx, t, q)
	if err != nil {
		return nil, 0, apierrors.Internal(err)
	}
	if !ok {
		return nil, through, nil
	}
	page, err := f.read(ctx, sq.And{sq.Eq{"organization_id": t.OrganizationID}, cond}, after, through, q.limit)
	if err != nil {
		return nil, 0, apierrors.Internal(err)
	}
	if len(page) == q.limit {
		return page, page[len(page)-1].Seq, nil
	}
	return page, through, nil
}

// read returns the seq and body of up to limit events that match where,
// with after < seq <= through, in seq order: what a page shows.
func (f *Feed) read(ctx context.Context, where sq.Sqlizer, after, through int64, limit int) ([]eventstore.Stored, error) {
	text, args, err := sqlbuild.SQL(f.Registry.Dialect, sq.Select("seq", "body").From(eventstore.Table).
		Where(where).Where("seq > ? AND seq <= ?", after, through).OrderBy("seq").Limit(uint64(limit)))
	if err != nil {
		return nil, err
	}
	rows, err := f.Registry.DB.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]eventstore.Stored, 0, limit)
	for rows.Next() {
		var e eventstore.Stored
		if err := rows.Scan(&e.Seq, &e.Body); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
