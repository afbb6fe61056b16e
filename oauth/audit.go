package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
)

// This file records the token service's security-relevant actions in the
// organizations' audit log (package audit), when Server.Audit is set:
//
//	app.created          RegisterApp (an admin, or the CLI)        target: the app
//	app.secret_rotated   RotateAppSecret                           target: the app
//	app.disconnected     DisconnectApp                             target: the app
//	consent.granted      IssueCode (a user approved at consent)    target: the app
//	registration_token.created  CreateInitialAccessToken (no organization: every log shows it)
//
// The entry is appended by the Store in the transaction of the write that
// does the action (see AuditEntry), so that the log holds an action exactly
// when it happened. Its actor is the caller's, from audit.FromContext: the
// token service's HTTP endpoints set the user of the product user token or
// of the browser session and the request's address; a host that calls the
// methods itself sets its own (the reference's admin commands set the
// CLI). A call without one is recorded as done by the system ("oauth").

type auditEntryKey struct{}

// AuditEntry returns the audit log entry that a Store must append, with
// audit.Append, in the transaction of the write it is asked to do with ctx
// (CreateApp, SetSecretHash, SaveGrant, ConnectedAppStore.DisconnectApp,
// RegistrationStore.SaveInitialAccessToken), or nil. Package
// oauth/sqlstore does; a Store that keeps no audit log ignores it.
func AuditEntry(ctx context.Context) *audit.Entry {
	e, _ := ctx.Value(auditEntryKey{}).(*audit.Entry)
	return e
}

// withAudit returns ctx carrying the entry of action, done to target in the
// organization, for the Store's next write; ctx itself when the server
// keeps no audit log.
func (s *Server) withAudit(ctx context.Context, action, organizationID string, target audit.Target, details map[string]any) context.Context {
	if !s.Audit {
		return ctx
	}
	who, ok := audit.FromContext(ctx)
	if !ok {
		who = audit.Who{Actor: audit.Actor{Kind: audit.ActorSystem, ID: "oauth"}}
	}
	return context.WithValue(ctx, auditEntryKey{}, &audit.Entry{
		Time: s.now(), OrganizationID: organizationID, Action: action, Actor: who.Actor, Target: target,
		RemoteAddr: who.RemoteAddr, Details: details,
	})
}

// asUser returns r's context saying that its user, userID, does what it
// asks from its remote address, unless the host said who already.
func asUser(r *http.Request, userID string) context.Context {
	if _, ok := audit.FromContext(r.Context()); ok {
		return r.Context()
	}
	return audit.NewContext(r.Context(), audit.Who{Actor: audit.Actor{Kind: audit.ActorUser, ID: userID}, RemoteAddr: remoteHost(r)})
}

// remoteHost is the host of r's remote address, without its port.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// appTarget is the target of an action on the app with clientID.
func appTarget(clientID string) audit.Target { return audit.Target{Kind: "app", ID: clientID} }

// AuditLogStore reads the audit log: a Store that keeps one (package
// oauth/sqlstore does) gets the audit log endpoint; without it the
// endpoint answers 500.
type AuditLogStore interface {
	// AuditLog returns the entries of the organization and of the whole
	// installation, oldest first, after the cursor (see audit.Log.List).
	AuditLog(ctx context.Context, organizationID, after string, limit int) (entries []audit.Entry, next string, err error)
}

// auditLogPage is the answer of the audit log endpoint.
type auditLogPage struct {
	Data       []audit.Entry `json:"data"`
	NextCursor *string       `json:"next_cursor"`
	Version    string        `json:"version"`
}

// handleAuditLog is GET Paths.AuditLog: the organization's audit log,
// oldest first, for an admin of the organization (a product user token,
// as the connected apps take): 404 to a user of another organization, 403
// to a member who is no admin. Query parameters: after (the cursor of the
// previous page's next_cursor) and limit (1 to 1000, default 50); any
// other is 400.
func (s *Server) handleAuditLog(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	org, err := s.connectedAppsAdmin(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 0
	for k, vs := range q {
		switch {
		case len(vs) > 1:
			return apierrors.InvalidRequest("parameter %q is given more than once", excerpt.Cut(k, 64))
		case k == "limit":
			n, err := strconv.Atoi(vs[0])
			if err != nil || n < 1 || n > audit.MaxPageSize {
				return apierrors.InvalidRequest("limit must be a whole number from 1 to %d", audit.MaxPageSize)
			}
			limit = n
		case k != "after":
			return apierrors.InvalidRequest("unknown parameter %q: the audit log takes after and limit", excerpt.Cut(k, 64))
		}
	}
	store, ok := s.Store.(AuditLogStore)
	if !ok {
		return apierrors.Internal(errors.New("oauth: the store keeps no audit log (it does not implement AuditLogStore)"))
	}
	entries, next, err := store.AuditLog(r.Context(), org, q.Get("after"), limit)
	switch {
	case errors.Is(err, audit.ErrBadCursor):
		return apierrors.InvalidRequest("after is not a cursor of this audit log")
	case err != nil:
		return apierrors.Internal(err)
	}
	page := auditLogPage{Data: entries, Version: "v1"}
	if next != "" {
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
