package webhook

import (
	"context"
	"errors"
	"slices"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/tenancy"
)

// This file holds who may do what with an endpoint: what a token may
// subscribe to, which endpoints it sees, and under whose authority an
// endpoint acts.

// authorize checks what the token of t may subscribe to: the read scopes
// of the resources the patterns name, and the branches (see API). orgBranches
// are the organization's branches, read before the transaction; current
// is the branch_ids the endpoint has when the input leaves them (nil on
// POST: every branch). An input that sets neither event_types nor
// branch_ids leaves the branches as they are, which the token's reach
// already covers (reach.sees); checkCovers checks the resources.
func (a *API) authorize(t tenancy.Tenant, in *endpointInput, orgBranches []string, current []string) error {
	for _, p := range in.eventTypes {
		if err := a.checkScope(t, p); err != nil {
			return err
		}
	}
	if in.givenBranches {
		for _, b := range in.branchIDs {
			if !slices.Contains(orgBranches, b) {
				return in.refuse("branch_ids: %q is not a branch of the organization", b)
			}
		}
	}
	if !t.Claims.ClientCredentials() || !in.setsSubscription() {
		return nil
	}
	branches := current
	if in.setBranches {
		branches = in.branchIDs
	}
	if branches == nil {
		for _, b := range orgBranches {
			if !slices.Contains(t.Claims.BranchIDs, b) {
				return apierrors.InsufficientScope("", "the token does not cover every branch of the organization: give branch_ids, a list of the branches it may use")
			}
		}
		return nil
	}
	for _, b := range branches {
		if !slices.Contains(t.Claims.BranchIDs, b) {
			return apierrors.InsufficientScope("", "the token may not use the branch %s of branch_ids", b)
		}
	}
	return nil
}

// checkScope checks that the token of t may read what the pattern p names.
func (a *API) checkScope(t tenancy.Tenant, p string) error {
	if p == "*" {
		for _, r := range a.Registry.Resources() {
			if t.HasScope(r.ReadScope()) {
				return nil
			}
		}
		return apierrors.InsufficientScope("", "the event type * needs the read scope of at least one resource (svc:<resource>:read); the token has none")
	}
	name, _, _ := strings.Cut(p, ".")
	for _, r := range a.readables() {
		if r.typeName == name && !t.HasScope(r.scope) {
			return apierrors.InsufficientScope(r.scope, "the event type %s needs the scope %s", p, r.scope)
		}
	}
	return nil
}

// grant returns what the token of t may read: the names of the resources
// whose read scope it has (and webhook_endpoints, the resource of the
// events of EventKinds, with ScopeRead), and its branches for a
// client-credentials token (nil, every branch, for an authorization-code
// token).
func (a *API) grant(t tenancy.Tenant) (resources, branches []string) {
	resources = []string{}
	for _, r := range a.readables() {
		if t.HasScope(r.scope) {
			resources = append(resources, r.name)
		}
	}
	if t.Claims.ClientCredentials() {
		branches = append([]string{}, t.Claims.BranchIDs...)
	}
	return resources, branches
}

// orgBranches returns the branches of the organization of t when the input
// needs them: to check the branch_ids it names, or the branches of a
// client-credentials token that sets what the endpoint subscribes to.
func (a *API) orgBranches(ctx context.Context, t tenancy.Tenant, in *endpointInput) ([]string, error) {
	if !in.givenBranches && !(t.Claims.ClientCredentials() && in.setsSubscription()) {
		return nil, nil
	}
	if a.Registry.Branches == nil {
		return nil, apierrors.Internal(errors.New("webhook: API.Branches is required"))
	}
	bs, err := a.Registry.Branches.List(ctx, t.OrganizationID)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	return bs, nil
}

// reach is which of the organization's endpoints a token may see and
// manage: all of them for a token that covers every branch of the
// organization; for a client-credentials token limited to some branches,
// those limited to branches among its own. Another app's endpoint that
// reaches further is not the token's to read, redirect or delete: to such
// a token it does not exist (404).
type reach struct {
	all      bool
	branches []string
}

// reachOf returns the reach of t's token. It asks the organization's
// branches, so it runs before any transaction (SQLite has one connection).
func (a *API) reachOf(ctx context.Context, t tenancy.Tenant) (reach, error) {
	if !t.Claims.ClientCredentials() {
		return reach{all: true}, nil
	}
	all, err := t.CoversAllBranches(ctx)
	if err != nil {
		return reach{}, apierrors.Internal(err)
	}
	return reach{all: all, branches: t.Claims.BranchIDs}, nil
}

// sees reports whether ep is within the reach.
func (r reach) sees(ep *endpointView) bool {
	if r.all {
		return true
	}
	if ep.BranchIDs == nil {
		return false
	}
	for _, b := range ep.BranchIDs {
		if !slices.Contains(r.branches, b) {
			return false
		}
	}
	return true
}

// endpointFor reads the endpoint id of t's organization if it is within
// rc, else answers 404 (see findEndpoint).
func (a *API) endpointFor(ctx context.Context, q eventstore.Querier, t tenancy.Tenant, rc reach, id string, forUpdate bool) (*endpointView, error) {
	ep, err := a.findEndpoint(ctx, q, t.OrganizationID, id, forUpdate)
	if err != nil {
		return nil, err
	}
	if !rc.sees(ep) {
		return nil, errNoEndpoint()
	}
	return ep, nil
}

// checkCovers checks that the token of t may read everything an endpoint
// of the event types eventTypes (as it is, or will be after a change) and
// the grant grantResources (what the token that last changed it could
// read) gets: the events of every resource that both name. The branches
// it gets are the reach's business (reach.sees, authorize). Every change
// of an endpoint and every redelivery needs it, so that ScopeWrite never
// lets a token send another app's endpoint, or its own URL, events it
// could not read.
func (a *API) checkCovers(t tenancy.Tenant, eventTypes, grantResources []string) error {
	var missing, what []string
	for _, r := range a.readables() {
		if !slices.Contains(grantResources, r.name) || t.HasScope(r.scope) {
			continue
		}
		var types []string
		for _, p := range eventTypes {
			if name, _, _ := strings.Cut(p, "."); p == "*" || name == r.typeName {
				types = append(types, p)
			}
		}
		if len(types) > 0 && !slices.Contains(missing, r.scope) {
			missing = append(missing, r.scope)
			what = append(what, r.name+" ("+strings.Join(types, ", ")+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return apierrors.InsufficientScope(strings.Join(missing, " "),
		"the endpoint gets the events of %s, and the token lacks %s: changing an endpoint, or sending its deliveries again, needs the read scope of every resource whose events it gets",
		strings.Join(what, ", "), strings.Join(missing, " and "))
}

// checkCutOff refuses an action on an endpoint disabled by the
// disconnection of the app it acted for (DisableAppEndpoints) by any token
// but one of that app issued after the disconnection, which only an app
// connected again gets: 409 conflict. So no other app brings back the
// deliveries the organization cut off, to the disconnected app's URL and
// under its secret; it may delete the endpoint, and register its own.
func checkCutOff(t tenancy.Tenant, ep *endpointView) error {
	if ep.cutOffAt == nil || (t.Claims.ClientID == ep.ClientID && t.Claims.IssuedAt > ep.cutOffAt.Unix()) {
		return nil
	}
	return apierrors.Conflict("the endpoint was disabled when the app %s, under whose authority it acted, was disconnected from the organization; "+
		"only that app, with a token issued after it is connected again, may change or enable it or send its deliveries again. "+
		"Delete it, or register an endpoint of your own", ep.ClientID)
}
