package webhook

import (
	"context"
	"database/sql"
	"net"
	"net/http"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
)

// audit appends, in tx, the audit log entry of action done to the endpoint
// id by the request r, when the API keeps the audit log (API.Audit): the
// actor is the token's app (its client id; the user a token acts for is in
// details), the address r's remote address. A host that said who acts
// (audit.NewContext) is believed instead.
func (a *API) audit(ctx context.Context, tx *sql.Tx, r *http.Request, action, id string, details map[string]any) error {
	if !a.Audit {
		return nil
	}
	t := tenant(r)
	who, ok := audit.FromContext(ctx)
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		who = audit.Who{Actor: audit.Actor{Kind: audit.ActorApp, ID: t.Claims.ClientID}, RemoteAddr: host}
	}
	if details == nil {
		details = map[string]any{}
	}
	if !t.Claims.ClientCredentials() {
		details["user_id"] = t.Subject()
	}
	return auditdb.Append(ctx, tx, a.Registry.Dialect, &audit.Entry{
		OrganizationID: t.OrganizationID, Action: action, Actor: who.Actor, RemoteAddr: who.RemoteAddr,
		Target: audit.Target{Kind: "webhook_endpoint", ID: id}, Details: details,
	})
}
