package events

import (
	"slices"
	"strings"

	"github.com/waybillhq/waybill/resource"
)

// The changes an event type names after the resource: a record was
// created, updated or deleted, or an update moved its status (which also
// gives an updated event).
const (
	Created       = "created"
	Updated       = "updated"
	Deleted       = "deleted"
	StatusChanged = "status_changed"
)

// changes lists the changes of event types, in the order above.
var changes = []string{Created, Updated, Deleted, StatusChanged}

// TypeName returns the name of a record of the resource called resource,
// the part of an event type before the dot (resource.Singular):
// "quotations" gives "quotation", "branches" "branch", "master_data"
// "master_data".
func TypeName(name string) string { return resource.Singular(name) }

// Type returns the event type of change to a record of resource:
// Type("quotations", Created) is "quotation.created".
func Type(resource, change string) string { return TypeName(resource) + "." + change }

// Pattern is an event type, or a prefix of one that ends in "*":
// "quotation.created", "quotation.*", "*".
type Pattern string

// Matches reports whether typ is one of the types p names.
func (p Pattern) Matches(typ string) bool {
	if prefix, ok := strings.CutSuffix(string(p), "*"); ok {
		return strings.HasPrefix(typ, prefix)
	}
	return string(p) == typ
}

// ParsePattern checks s against the resources an API has (their names, as
// registered: "quotations") and returns it as a Pattern: a whole type of
// one of them ("quotation.created"), a resource's types ("quotation.*"),
// or every type ("*"). ok is false for anything else.
func ParsePattern(s string, resources []string) (p Pattern, ok bool) {
	if s == "*" {
		return Pattern(s), true
	}
	name, change, found := strings.Cut(s, ".")
	if !found || !slices.ContainsFunc(resources, func(r string) bool { return TypeName(r) == name }) {
		return "", false
	}
	if change != "*" && !slices.Contains(changes, change) {
		return "", false
	}
	return Pattern(s), true
}

// Kind describes events that are not the writes of a registry's resources
// but that the same outbox keeps, the feed serves and webhooks deliver:
// those a package appends itself (package webhook's
// "webhook_endpoint.disabled"). Give them to Feed.Kinds; their types are
// TypeName(Resource) and one of Changes.
type Kind struct {
	// Resource is the name the events are stored under (the events'
	// resource), whose TypeName starts their types: "webhook_endpoints"
	// gives "webhook_endpoint.disabled".
	Resource string
	// Changes are the changes the types name after the dot ("disabled").
	Changes []string
	// ReadScope is the scope a token needs to see the events, in the feed
	// and through a webhook endpoint.
	ReadScope string
	// EveryBranch keeps the events of the kind that are of no branch (the
	// organization's) to tokens that reach every branch of the
	// organization (tenancy.Tenant.CoversAllBranches): events about things
	// a token limited to some branches may not see (the webhook endpoints
	// of other branches). Those of a branch are that branch's, as any.
	EveryBranch bool
}

// Matches reports whether p names some type of k.
func (k Kind) Matches(p Pattern) bool {
	if p == "*" {
		return true
	}
	for _, c := range k.Changes {
		if p.Matches(TypeName(k.Resource) + "." + c) {
			return true
		}
	}
	return false
}

// ParseKindPattern checks s against kinds and returns it as a Pattern: a
// whole type of one of them ("webhook_endpoint.disabled") or all the types
// of one ("webhook_endpoint.*"). ok is false for anything else, "*"
// included (ParsePattern takes it).
func ParseKindPattern(s string, kinds []Kind) (p Pattern, ok bool) {
	name, change, found := strings.Cut(s, ".")
	if !found {
		return "", false
	}
	for _, k := range kinds {
		if TypeName(k.Resource) == name && (change == "*" || slices.Contains(k.Changes, change)) {
			return Pattern(s), true
		}
	}
	return "", false
}
