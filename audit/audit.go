// Package audit keeps the audit log of organizations: the security-relevant
// actions done to an organization (an app registered, its secret rotated,
// a consent given, a member added, a webhook endpoint changed, ...), each
// with who did it (a user, an app, or the command line), what it was done
// to, from which address, and its details.
//
// An entry is appended in the transaction of the action it records
// (auditdb.Append takes the transaction), so that the log holds an action
// exactly when the action happened; entries are never updated. auditdb.Log
// reads an organization's entries, oldest first, a page at a time.
//
// The packages that own the actions append their entries: a caller that
// acts for someone says who with NewContext, and the package reads it with
// FromContext when it appends. An action of the whole installation (a
// signing key rotated, a registration token made) has no organization
// (Entry.OrganizationID ""), and every organization's log shows it: it
// concerns each of them.
//
// Package github.com/waybillhq/waybill/audit/auditdb keeps the log in
// PostgreSQL or SQLite: auditdb.Append, auditdb.Log, auditdb.Migrate. This
// package holds what the packages that act need, and no storage: it
// imports the standard library alone.
package audit

import (
	"context"
	"errors"
	"time"
)

// The actions of the audit log.
const (
	AppCreated                   = "app.created"
	AppSecretRotated             = "app.secret_rotated"
	AppDisconnected              = "app.disconnected"
	AppQuotaSet                  = "app.quota_set"
	ConsentGranted               = "consent.granted"
	MemberAdded                  = "member.added"
	MemberRemoved                = "member.removed"
	UserDeleted                  = "user.deleted"
	WebhookEndpointCreated       = "webhook_endpoint.created"
	WebhookEndpointChanged       = "webhook_endpoint.changed"
	WebhookEndpointDeleted       = "webhook_endpoint.deleted"
	WebhookEndpointDisabled      = "webhook_endpoint.disabled"
	WebhookEndpointSecretRotated = "webhook_endpoint.secret_rotated"
	RegistrationTokenCreated     = "registration_token.created"
	SigningKeyRotated            = "signing_key.rotated"
)

// The kinds of actors.
const (
	// ActorUser is a product user (a product user token, a browser
	// session); Actor.ID is the user's id.
	ActorUser = "user"
	// ActorApp is an OAuth app acting with its token; Actor.ID is its
	// client id.
	ActorApp = "app"
	// ActorCLI is the operator on the command line (waybill admin);
	// Actor.ID is empty.
	ActorCLI = "cli"
	// ActorSystem is the server itself (the webhook dispatcher disabling
	// an endpoint); Actor.ID names the part of it.
	ActorSystem = "system"
)

// Actor is who did an action.
type Actor struct {
	// Kind is ActorUser, ActorApp, ActorCLI or ActorSystem.
	Kind string `json:"kind"`
	// ID is the user's id, the app's client id, or "" for the CLI.
	ID string `json:"id"`
}

// Target is what an action was done to.
type Target struct {
	// Kind is "app", "user", "webhook_endpoint", "registration_token",
	// "signing_key", ...
	Kind string `json:"kind"`
	// ID is its id: a client id, a user id, an endpoint id, a key id.
	ID string `json:"id"`
}

// Entry is one action of the log.
type Entry struct {
	// ID is the entry's id, a UUID; auditdb.Append sets it when empty.
	ID string `json:"id"`
	// Time is when the action happened; auditdb.Append sets it when zero.
	Time time.Time `json:"time"`
	// OrganizationID is the organization the action was done to; "" for
	// an action of the whole installation.
	OrganizationID string `json:"-"`
	// Action is one of the action constants.
	Action string `json:"action"`
	Actor  Actor  `json:"actor"`
	Target Target `json:"target"`
	// RemoteAddr is the address of the request that did the action
	// (without its port); "" for the CLI and the server itself.
	RemoteAddr string `json:"remote_addr"`
	// Details says more, a JSON object of the action's own members (the
	// scopes granted, the fields changed, ...); nil is {}.
	Details map[string]any `json:"details"`
}

// Who is the actor of the actions a context's caller does, and the
// address the request came from.
type Who struct {
	Actor      Actor
	RemoteAddr string
}

type whoKey struct{}

// NewContext returns ctx carrying who: the packages that append entries
// read it with FromContext, so that the actor of an action is the caller's
// (a user, an app) rather than what the package can tell by itself.
func NewContext(ctx context.Context, who Who) context.Context {
	return context.WithValue(ctx, whoKey{}, who)
}

// FromContext returns the Who of ctx, and false when ctx carries none.
func FromContext(ctx context.Context) (Who, bool) {
	w, ok := ctx.Value(whoKey{}).(Who)
	return w, ok
}

// DefaultPageSize and MaxPageSize bound a page of the log.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// ErrBadCursor is the error of a page asked after a cursor that the log did
// not make.
var ErrBadCursor = errors.New("audit: the cursor is not valid")
