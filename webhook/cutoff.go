package webhook

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// DisableAppEndpoints ends what an app set up when it is cut off from an
// organization (disconnected at at): every enabled endpoint of the
// organization that acts under the authority of the app clientID (its
// client_id: a token of the app registered it or changed it last) is
// disabled, with a disabled_reason that says so, and gets nothing more
// until the app, once connected again, enables it with a token issued
// after at. No other app's token may change it, enable it or send its
// deliveries again (the API answers 409 conflict); one may delete it. Each
// endpoint disabled is a webhook_endpoint.disabled entry of the
// organization's audit log (package audit), appended in the same
// transaction, by the system ("app disconnection").
//
// Each cut-off is handled once, by the first process that calls it: a
// call for a cut-off handled before disables nothing, so an endpoint the
// app enabled again after connecting again stays enabled. It returns how
// many endpoints it disabled. A server calls it for every cut-off it
// learns of (bearer.CutOffList.OnCutOff), and so does a command that
// disconnects an app.
func DisableAppEndpoints(ctx context.Context, db *sql.DB, d query.Dialect, organizationID, clientID string, at time.Time) (int, error) {
	at = at.UTC()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("webhook: disable the endpoints of app %s: %w", clientID, err)
	}
	defer func() { _ = tx.Rollback() }()
	text, args, err := sqlbuild.SQL(d, sq.Insert("waybill_webhook_cutoffs").Columns("organization_id", "client_id", "at").
		Values(organizationID, clientID, d.Timestamp(at)).Suffix("ON CONFLICT DO NOTHING"))
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: record the cut-off of app %s: %w", clientID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, err // handled before
	}
	reason := fmt.Sprintf("the app %s that registered it or last changed it was disconnected from the organization at %s", clientID, at.Format(time.RFC3339))
	// The endpoints about to be disabled, for the audit log: the UPDATE
	// below disables these and no other, in this transaction.
	text, args, err = sqlbuild.SQL(d, sq.Select("id").From(endpointsTable).
		Where(sq.Eq{"organization_id": organizationID, "client_id": clientID, "status": statusEnabled}).OrderBy("id"))
	if err != nil {
		return 0, err
	}
	ids, err := selectStrings(ctx, tx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: disable the endpoints of app %s: %w", clientID, err)
	}
	for _, id := range ids {
		if err := auditdb.Append(ctx, tx, d, &audit.Entry{
			OrganizationID: organizationID, Action: audit.WebhookEndpointDisabled, Time: at,
			Actor:  audit.Actor{Kind: audit.ActorSystem, ID: "app disconnection"},
			Target: audit.Target{Kind: "webhook_endpoint", ID: id}, Details: map[string]any{"reason": reason},
		}); err != nil {
			return 0, fmt.Errorf("webhook: disable the endpoints of app %s: %w", clientID, err)
		}
	}
	text, args, err = sqlbuild.SQL(d, sq.Update(endpointsTable).
		Set("status", statusDisabled).Set("disabled_reason", reason).Set("cut_off_at", d.Timestamp(at)).
		Set("updated_at", d.Timestamp(time.Now().UTC().Truncate(time.Microsecond))).
		Where(sq.Eq{"organization_id": organizationID, "client_id": clientID, "status": statusEnabled}))
	if err != nil {
		return 0, err
	}
	res, err = tx.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: disable the endpoints of app %s: %w", clientID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("webhook: disable the endpoints of app %s: %w", clientID, err)
	}
	return int(n), nil
}

// selectStrings runs a query of one text column in tx and returns its
// values.
func selectStrings(ctx context.Context, tx *sql.Tx, text string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
