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
