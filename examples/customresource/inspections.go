package main

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// inspections declares the service's one resource: vehicle inspections of a
// branch, served at /v1/{scopeId}/inspections with the scopes
// svc:inspections:read and svc:inspections:write. The server adds id,
// created_at and updated_at, and sets organization_id and branch_id from the
// token and the path; clients can never send, filter or sort on those two.
func inspections() *resource.Resource {
	return &resource.Resource{
		Name:        "inspections",
		ScopeType:   tenancy.Branch,
		Description: "Roadworthiness inspections of the branch's vehicles.",
		Fields: []resource.Field{
			{Name: "vehicle_plate", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true, MaxLength: 20,
				Description: "Registration plate of the inspected vehicle."},
			{Name: "inspected_on", Type: query.Date, Create: true, Update: true, Required: true, Filterable: true, Sortable: true,
				Description: "Day of the inspection."},
			{Name: "result", Type: query.Enum, Values: []string{"pass", "fail", "pending"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Outcome; pending until known. Only an inspection dated today or earlier can pass."},
			{Name: "status", Type: query.Enum, Values: []string{"scheduled", "done", "cancelled"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "scheduled (default) → done | cancelled; done and cancelled are final."},
			{Name: "notes", Type: query.String, Create: true, Update: true, Nullable: true, Filterable: true, MaxLength: 2000,
				Description: "Free text of the inspector."},
		},
		Hooks: resource.Combine(
			// The library's status flow: a move outside it is
			// invalid_create on POST and invalid_update on PATCH.
			resource.StatusFlow("status", "scheduled", map[string][]string{
				"scheduled": {"done", "cancelled"},
			}),
			inspectionRules(),
		),
	}
}

// inspectionRules are the hooks of this domain: a new inspection's result
// is pending unless the client says otherwise (resource.Default, one of the
// library's generic rules), and an inspection dated after today cannot
// pass. Hooks run inside the write's transaction; an *apierrors.Error they
// return is the answer, and the write is rolled back.
func inspectionRules() resource.Hooks {
	return resource.Combine(
		resource.Default(resource.Record{"result": "pending"}),
		resource.OnWrite(checkPass),
	)
}

// checkPass refuses result "pass" for an inspection dated after today (UTC),
// looking at the record as the write leaves it: the changes over the current
// values. w.Invalid is invalid_create on POST and invalid_update on PATCH.
func checkPass(_ context.Context, _ *sql.Tx, w *resource.Write) error {
	on, _ := w.Value("inspected_on").(string) // YYYY-MM-DD: text order is date order
	if w.Value("result") == "pass" && on > time.Now().UTC().Format(time.DateOnly) {
		return w.Invalid("result: the inspection of %s has not taken place yet and cannot pass", on)
	}
	return nil
}

// branches implements tenancy.Branches over the branches table: tenancy
// asks it who owns the branch a path names, on every request.
type branches struct{ db *sql.DB }

// Organization returns the organization of the branch, or an error
// wrapping tenancy.ErrNoBranch.
func (b branches) Organization(ctx context.Context, branchID string) (string, error) {
	var org string
	err := b.db.QueryRowContext(ctx, "SELECT organization_id FROM branches WHERE id = $1", branchID).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", tenancy.ErrNoBranch
	}
	return org, err
}

// List returns the ids of every branch of the organization.
func (b branches) List(ctx context.Context, organizationID string) ([]string, error) {
	rows, err := b.db.QueryContext(ctx, "SELECT id FROM branches WHERE organization_id = $1 ORDER BY id", organizationID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
