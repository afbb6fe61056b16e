package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// This file holds the events package webhook itself appends to an
// organization's feed: webhook_endpoint.disabled.

// The event the dispatcher appends when it disables an endpoint.
const (
	// EndpointDisabledType is its type.
	EndpointDisabledType = "webhook_endpoint.disabled"
	// endpointsResource is the resource it is stored under.
	endpointsResource = "webhook_endpoints"
)

// EventKinds returns the kinds of the events package webhook appends to
// the organizations' feeds: webhook_endpoint.disabled, which a token sees
// with ScopeRead (besides the feed's own scope). Give them to
// events.Feed.Kinds. An endpoint subscribes to them with
// "webhook_endpoint.disabled", "webhook_endpoint.*" or "*", and gets them
// when the token that set it up, or changed it last, had ScopeRead. The
// event of an endpoint limited to one branch is that branch's: the tokens
// and endpoints of that branch see it. That of an endpoint of several
// branches, or of every branch, is the organization's, and only a token
// that reaches every branch sees it, in the feed and through an endpoint
// (whose grant must hold every branch, see Dispatcher.Branches): an app
// limited to some branches may not see the endpoints of others.
func EventKinds() []events.Kind {
	return []events.Kind{{Resource: endpointsResource, Changes: []string{"disabled"}, ReadScope: ScopeRead, EveryBranch: true}}
}

// readable is what an endpoint may subscribe to: a registry's resource or
// a kind of EventKinds, with the scope that reads its events.
type readable struct {
	name, typeName, scope string
}

// readables returns the resources of the API and the kinds of EventKinds.
func (a *API) readables() []readable {
	var out []readable
	for _, r := range a.Registry.Resources() {
		out = append(out, readable{name: r.Name, typeName: events.TypeName(r.Name), scope: r.ReadScope()})
	}
	for _, k := range EventKinds() {
		out = append(out, readable{name: k.Resource, typeName: events.TypeName(k.Resource), scope: k.ReadScope})
	}
	return out
}

// endpointEvent returns the CloudEvent JSON of an event of type typ about
// the endpoint ep of org: source the endpoint's path under prefix, subject
// its id, and data {"record": the endpoint as the API shows it, without
// its secret, "changed": changed}; clientID and userID, when not "", say
// who caused it.
func endpointEvent(typ, eventID, prefix, org string, ep *endpointView, changed []string, now time.Time, clientID, userID string) ([]byte, error) {
	type data struct {
		Record  *endpointView `json:"record"`
		Changed []string      `json:"changed"`
	}
	ev := struct {
		SpecVersion     string `json:"specversion"`
		ID              string `json:"id"`
		Source          string `json:"source"`
		Type            string `json:"type"`
		Subject         string `json:"subject"`
		Time            string `json:"time"`
		DataContentType string `json:"datacontenttype"`
		OrganizationID  string `json:"organizationid"`
		ClientID        string `json:"clientid,omitempty"`
		UserID          string `json:"userid,omitempty"`
		Data            data   `json:"data"`
	}{
		SpecVersion: "1.0", ID: eventID, Source: endpointSource(prefix, org, ep.ID), Type: typ, Subject: ep.ID,
		Time: now.UTC().Format(query.SQLiteTimestampLayout), DataContentType: "application/json", OrganizationID: org,
		ClientID: clientID, UserID: userID, Data: data{Record: ep, Changed: changed},
	}
	return json.Marshal(ev)
}

// endpointSource returns the CloudEvents source of the events about the
// endpoint id of org: its path under prefix (/v1 when "").
func endpointSource(prefix, org, id string) string {
	if prefix == "" {
		prefix = "/v1"
	}
	return prefix + "/" + org + "/webhook_endpoints/" + id
}

// appendDisabled appends, in tx, the webhook_endpoint.disabled event of
// the endpoint id of org, which tx has just disabled.
func (d *Dispatcher) appendDisabled(ctx context.Context, tx *sql.Tx, org, id string, now time.Time) error {
	text, args, err := sqlbuild.SQL(d.Dialect, selectEndpoint(id))
	if err != nil {
		return err
	}
	ep, err := scanEndpoint(tx.QueryRowContext(ctx, text, args...))
	if err != nil {
		return err
	}
	eventID := uuid.Must(uuid.NewV7()).String()
	body, err := endpointEvent(EndpointDisabledType, eventID, d.PathPrefix, org, ep, []string{"status", "disabled_reason"}, now, "", "")
	if err != nil {
		return err
	}
	// An endpoint of one branch: an event of that branch, which the
	// tokens and endpoints of that branch see; of several or every branch:
	// of the organization, which those of every branch alone see (see
	// EventKinds).
	var branch string
	if len(ep.BranchIDs) == 1 {
		branch = ep.BranchIDs[0]
	}
	return eventstore.Append(ctx, tx, d.Dialect, org, eventstore.Stored{
		ID: eventID, Type: EndpointDisabledType, Resource: endpointsResource, BranchID: branch, RecordID: id, Time: now, Body: body,
	})
}
