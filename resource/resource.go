// Package resource is a declarative registry of REST resources over SQL
// tables, and the generic handlers that serve them: list, get, create,
// update and delete, each inside the tenant that package tenancy resolved,
// with the JSON envelopes ({"data", "pagination", "version"}) and the error
// shape of package errors.
//
// A Resource declares its name, table, scope type (organization, branch or
// branch-or-null), its fields — type, whether clients may send them on
// create or update, filter and sort, whether they are required, their
// bounds — whether it is read-only, and hooks for the rules of its domain
// (a status flow, a generated number). A Registry holds the resources and
// mounts every route under /v1 and /api/v1 on a plain http.ServeMux, and
// describes them all in an OpenAPI 3.1 document. A token reads a resource
// with its read scope and writes it with its write scope, named by the
// registry's ScopeNames policy (DefaultScopeNames: svc:<resource>:read and
// svc:<resource>:write); write does not imply read.
//
// The tenant columns (organization_id, and branch_id for branch-scoped
// resources) are set by the server and appear in the WHERE clause of every
// statement, UPDATE and DELETE included; clients can never send, filter or
// sort on them. Values are always bound parameters.
//
// Organization-wide data — every record of an organization-scoped
// resource, and the records of a branch-or-null resource whose branch_id
// is null — is every branch's: creating, changing or deleting it needs a
// token that covers every branch of the organization (see
// tenancy.Tenant.CoversAllBranches), else 403 insufficient_scope. A
// client-credentials token limited to some branches may still read it.
//
// The write rules every service needs come as Hooks to Combine with a
// domain's own: Default, Trim, Upper, Match, Rounded, NotBefore, Sum,
// LockedUnless and StatusFlow; Write.Invalid refuses a write with
// invalid_create on POST and invalid_update on PATCH. Package
// resource/resourcetest checks that a declared resource keeps the promises
// above.
//
// A POST or PATCH body is read only as far as it must be: the reading stops
// at the first member the resource does not take (an unknown field, say),
// so that no body of up to 1 MiB costs more than its length to refuse.
//
// For clients that retry, write concurrently and sync, every resource has,
// with no code of its own:
//
//   - a strong ETag on every single-record answer, a hash of the record as
//     shown; If-None-Match on GET (304), and If-Match on PATCH and DELETE,
//     checked under the write's row lock: a stale tag changes nothing and
//     gets 412 precondition_failed with the stored record.
//     Resource.RequireIfMatch makes If-Match mandatory (428);
//   - Idempotency-Key on POST and PATCH: the answer of a successful write is
//     stored in its transaction and given again to a retry of the same
//     client and user, which Registry.Middleware counts like any request
//     (see Registry.Migrate, which creates the table, and
//     Registry.IdempotencyTTL);
//   - cursor pages: pagination.next_cursor and a Link rel="next" on every
//     list, after=<cursor> for the next page in index order, authenticated
//     with Registry.CursorKey, or by default with a key derived from the
//     Verifier's signing key, so that every replica sharing that key
//     accepts the cursors of the others (a Registry with neither refuses
//     to Mount);
//   - Prefer: count=exact|estimated|none on lists (see ExactCountBelow);
//   - fields=a,b on GET, to return only those fields: at most as many
//     names as the resource has fields, counted as given, else 400.
//
// For integrations that load and sync in bulk, every writable resource
// also takes batch creates (a JSON array on POST of the collection), batch
// updates (a JSON array on PATCH of the collection), and, with
// Resource.ExternalID, upserts by the integrator's own id (POST with
// Prefer: resolution=merge-duplicates): all or nothing, every refused item
// named in the 400 invalid_batch answer's "errors" (see MaxBatchItems,
// MaxBatchBytes and Registry.ChargeExtra). Hooks.BeforeCreateBatch lets a
// hook do for a batch at once what it does for each record. A list asked
// for with Accept: application/x-ndjson or text/csv is an export: every
// matching record, streamed from one consistent snapshot, with the change
// feed's cursor after it when the Outbox is a Snapshotter (see NDJSON).
//
// For audit, a Registry with a History (SQLHistory keeps it in the
// registry's database) keeps every record's history: one entry for each
// create, update and delete, stored in the write's own transaction, with
// the values of the fields it changed before and after, the token's client
// and user, the time and the id of the write's event (Change.EventID), and
// serves it, oldest first and also after a delete, at
// GET {prefix}/{scopeId}/{resource}/{id}/history (see History).
package resource

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// The tenant columns every table of a resource has.
const (
	OrganizationColumn = "organization_id"
	BranchColumn       = "branch_id"
)

// Field declares one field of a resource.
type Field struct {
	// Name is the field's name in JSON, filters and sorts; also its column.
	Name string
	// Type is the field's type (query.UUID, query.String, ...).
	Type query.Type
	// Values are the allowed values of an Enum field.
	Values []string
	// Create lets clients send the field on POST; Update on PATCH.
	Create, Update bool
	// Required fields must be sent on POST (and may not be set to null).
	Required bool
	// Nullable fields may hold and be set to null.
	Nullable bool
	// Filterable and Sortable whitelist the field for the list parameters,
	// as in query.Field.
	Filterable, Sortable bool
	// Ops narrows the filter operators (nil: every operator of the type).
	Ops []query.Op
	// Min and Max bound an Integer or Number field (nil: unbounded).
	Min, Max *float64
	// MaxLength bounds a String field in characters (0: 1000).
	MaxLength int
	// References names the resource whose id a UUID field holds. The
	// database enforces it inside the tenant; a reference to no record of
	// the tenant is create_failed / invalid_update.
	References string
	// Description documents the field in the OpenAPI document.
	Description string

	visible bool // every character graphic and no space (external_id)
}

// Bound returns a pointer to v, for Field.Min and Field.Max.
func Bound(v float64) *float64 { return &v }

// Record is one record as the hooks see it: field name to value. Values
// have the Go types of query.Filter.Values: string for UUID, String, Enum
// and Date (YYYY-MM-DD); int64 for Integer; float64 for Number; time.Time
// for Timestamp; bool for Boolean; nil for null.
type Record map[string]any

// Hooks carry the domain rules of a resource. Each runs inside the
// transaction of the write; an error it returns (use apierrors, e.g.
// apierrors.InvalidUpdate) refuses the write and rolls it back.
type Hooks struct {
	// BeforeCreate may check and complete the new record, e.g. set a
	// generated number or a default status.
	BeforeCreate func(ctx context.Context, tx *sql.Tx, w *Write) error
	// BeforeUpdate may check the changes against the current record, e.g.
	// a status transition, and add to them.
	BeforeUpdate func(ctx context.Context, tx *sql.Tx, w *Write) error
	// BeforeDelete may refuse a delete.
	BeforeDelete func(ctx context.Context, tx *sql.Tx, w *Write) error
	// BeforeCreateBatch, when set, runs instead of BeforeCreate for the
	// new records of a batch write (a batch create, an upsert's creates),
	// once, with their writes in the order of the batch's items: for a
	// hook that takes something for each record from the database, such
	// as the next numbers of a sequence, in one statement rather than one
	// a record. Set BeforeCreate too, which single creates run. An error
	// it returns fails the whole batch; refusing one record is
	// BeforeCreate's.
	BeforeCreateBatch func(ctx context.Context, tx *sql.Tx, ws []*Write) error

	status string  // the field of StatusFlow
	parts  []Hooks // the hooks that Combine combined, in order
}

// Write is what a hook sees of a write.
type Write struct {
	// Resource is the resource written.
	Resource *Resource
	// Tenant is the request's tenant.
	Tenant tenancy.Tenant
	// Current is the record before the write (nil on create).
	Current Record
	// Changes are the fields the write sets: the body of POST or PATCH,
	// validated, which a hook may add to.
	Changes Record
	// Dialect is the database's dialect, for hooks that run SQL.
	Dialect query.Dialect
	// Time is when the write happens, on the registry's clock
	// (Registry.Now): the created_at and updated_at it stores. Hooks that
	// stamp or date a record use it rather than the wall clock.
	Time time.Time
}

// Value returns the value of field after the write: the change if there is
// one, else the current value.
func (w *Write) Value(field string) any {
	if v, ok := w.Changes[field]; ok {
		return v
	}
	return w.Current[field]
}

// Resource declares one resource.
type Resource struct {
	// Name is the path segment and the scope name: "quotations" is served
	// at /v1/{scopeId}/quotations with the scopes the registry's
	// ScopeNames gives it (by default svc:quotations:read and :write).
	Name string
	// Table is the SQL table or view ("" means Name).
	Table string
	// ScopeType says what {scopeId} names.
	ScopeType tenancy.ScopeType
	// Fields are the resource's fields besides id, organization_id,
	// branch_id, created_at and updated_at, which every resource has and
	// the server sets.
	Fields []Field
	// ReadOnly resources answer POST, PATCH and DELETE with 405.
	ReadOnly bool
	// ExternalID gives a writable resource the field external_id (see
	// ExternalIDField): the integrator's own id of a record, which upserts
	// (Prefer: resolution=merge-duplicates) and batch updates find records
	// by. Its table needs the column and the unique indexes that
	// ExternalIDField describes.
	ExternalID bool
	// RequireIfMatch makes PATCH and DELETE conditional: a write without
	// an If-Match header naming the record's ETag is refused with 428
	// precondition_required, so that no client overwrites a change it has
	// not seen. Without it If-Match is optional and honoured when sent.
	RequireIfMatch bool
	// MaxLimit is the largest page (0 means query.MaxLimit, 1000).
	MaxLimit int
	// DefaultSort is the order without a sort parameter ("" means
	// "created_at:desc").
	DefaultSort string
	// Hooks are the resource's domain rules.
	Hooks Hooks
	// Description documents the resource in the OpenAPI document.
	Description string

	fields []Field // the declared fields and the common ones
	schema *query.Schema
	// readScope and writeScope are the scopes Register gave the resource
	// ("" before: DefaultScopeNames).
	readScope, writeScope string
}

// ScopeNames names the scopes of a resource: the one a token needs to read
// it (GET) and the one it needs to write it (POST, PATCH, DELETE). Write
// does not imply read.
type ScopeNames func(resource string) (read, write string)

// DefaultScopeNames is the ScopeNames of a Registry that sets none:
// svc:<resource>:read and svc:<resource>:write.
func DefaultScopeNames(resource string) (read, write string) {
	return "svc:" + resource + ":read", "svc:" + resource + ":write"
}

// ReadScope is the scope a token needs to read the resource: as its
// registry's ScopeNames names it.
func (r *Resource) ReadScope() string {
	if r.readScope == "" {
		read, _ := DefaultScopeNames(r.Name)
		return read
	}
	return r.readScope
}

// WriteScope is the scope a token needs to write the resource, like
// ReadScope.
func (r *Resource) WriteScope() string {
	if r.writeScope == "" {
		_, write := DefaultScopeNames(r.Name)
		return write
	}
	return r.writeScope
}

// AllFields returns every field of a compiled resource: id, the declared
// fields, created_at and updated_at.
func (r *Resource) AllFields() []Field { return r.fields }

// Field returns the field with name, or nil.
func (r *Resource) Field(name string) *Field {
	for i := range r.fields {
		if r.fields[i].Name == name {
			return &r.fields[i]
		}
	}
	return nil
}

func (r *Resource) table() string {
	if r.Table != "" {
		return r.Table
	}
	return r.Name
}

// commonFields are the fields the server sets on every resource.
var commonFields = struct{ id, externalID, createdAt, updatedAt Field }{
	id: Field{Name: "id", Type: query.UUID, Filterable: true, Sortable: true, Description: "Identifier, set by the server."},
	externalID: Field{Name: ExternalIDColumn, Type: query.String, MaxLength: maxExternalID, Nullable: true, Create: true, Update: true,
		Filterable: true, Ops: []query.Op{query.Eq, query.In, query.IsNull}, visible: true,
		Description: "The record's id in the client's own system (an ERP's order number, say): 1 to 200 characters, none of them a space or a control character, or null. " +
			"Unique among the records of the tenant scope: a create or update that would repeat one is 409 conflict. " +
			"An upsert (POST with Prefer: resolution=merge-duplicates) and a batch update find records by it."},
	createdAt: Field{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true, Description: "When the record was created, set by the server."},
	updatedAt: Field{Name: "updated_at", Type: query.Timestamp, Filterable: true, Sortable: true, Description: "When the record was last changed, set by the server."},
}

// ExternalIDField is the field that Resource.ExternalID adds, after id: a
// string of 1 to 200 characters, each a graphic character and none a
// space (Unicode), or null; sent on create and PATCH; filterable with eq,
// in and isnull.
//
// An external_id is unique among the records of its tenant scope: of the
// branch for branch-scoped resources and for the records of a
// branch-or-null resource that have a branch, of the organization for
// organization-scoped resources and for the organization-wide records of
// a branch-or-null resource. The database enforces it, so that concurrent
// writes cannot break it: the table has a nullable text column
// external_id and partial unique indexes, on PostgreSQL and SQLite alike:
//
//	-- branch-scoped
//	CREATE UNIQUE INDEX ... ON t (branch_id, external_id) WHERE external_id IS NOT NULL;
//	-- organization-scoped
//	CREATE UNIQUE INDEX ... ON t (organization_id, external_id) WHERE external_id IS NOT NULL;
//	-- branch-or-null: both of
//	CREATE UNIQUE INDEX ... ON t (branch_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NOT NULL;
//	CREATE UNIQUE INDEX ... ON t (organization_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NULL;
//
// A create or PATCH that would give a second record of the scope the same
// external_id is 409 conflict, and writes nothing.
func ExternalIDField() Field { return commonFields.externalID }

// ExternalIDColumn is the name of the field and column of ExternalIDField.
const ExternalIDColumn = "external_id"

// maxExternalID is the longest external_id, in characters.
const maxExternalID = 200

// compile checks the declaration and builds its query schema, whose cursors
// cursorKey authenticates (nil: no cursor pages).
func (r *Resource) compile(cursorKey ...[]byte) error {
	if r.Name == "" {
		return fmt.Errorf("resource: a resource has no name")
	}
	if r.ScopeType < tenancy.Organization || r.ScopeType > tenancy.BranchOrNull {
		return fmt.Errorf("resource %s: unknown scope type", r.Name)
	}
	r.fields = []Field{commonFields.id}
	if r.ExternalID {
		if r.ReadOnly {
			return fmt.Errorf("resource %s: read-only, but has an external_id, which clients write", r.Name)
		}
		r.fields = append(r.fields, commonFields.externalID)
	}
	for _, f := range r.Fields {
		if f.Name == ExternalIDColumn {
			return fmt.Errorf("resource %s: declare external_id with Resource.ExternalID, not as a field", r.Name)
		}
	}
	r.fields = append(r.fields, r.Fields...)
	r.fields = append(r.fields, commonFields.createdAt, commonFields.updatedAt)
	schema := &query.Schema{
		Name:        r.Name,
		MaxLimit:    r.MaxLimit,
		DefaultSort: r.DefaultSort,
		Reserved:    []string{OrganizationColumn, BranchColumn},
		Params:      []string{fieldsParam},
	}
	if len(cursorKey) > 0 {
		schema.CursorKey = cursorKey[0]
	}
	if schema.DefaultSort == "" {
		schema.DefaultSort = "created_at:desc"
	}
	for _, f := range r.fields {
		switch {
		case f.Name == OrganizationColumn || f.Name == BranchColumn:
			return fmt.Errorf("resource %s: %s is a tenant column the server sets; do not declare it", r.Name, f.Name)
		case r.ReadOnly && (f.Create || f.Update):
			return fmt.Errorf("resource %s: read-only, but field %s may be written", r.Name, f.Name)
		case f.Required && !f.Create:
			return fmt.Errorf("resource %s: field %s is required but cannot be created", r.Name, f.Name)
		case f.References != "" && f.Type != query.UUID:
			return fmt.Errorf("resource %s: field %s references %s but is not a UUID", r.Name, f.Name, f.References)
		case (f.Min != nil || f.Max != nil) && f.Type != query.Integer && f.Type != query.Number:
			return fmt.Errorf("resource %s: field %s has bounds but is not a number", r.Name, f.Name)
		}
		schema.Fields = append(schema.Fields, query.Field{
			Name: f.Name, Type: f.Type, Values: f.Values, Filterable: f.Filterable, Ops: f.Ops,
			Sortable: f.Sortable, Nullable: f.Nullable,
		})
	}
	if err := schema.Validate(); err != nil {
		return fmt.Errorf("resource %s: %w", r.Name, err)
	}
	r.schema = schema
	return nil
}

// Schema returns the query schema of a compiled resource: its list
// parameters' whitelist.
func (r *Resource) Schema() *query.Schema { return r.schema }

// writable returns the names of the fields a client may send on create
// (create true) or update.
func (r *Resource) writable(create bool) []string {
	var names []string
	for _, f := range r.fields {
		if (create && f.Create) || (!create && f.Update) {
			names = append(names, f.Name)
		}
	}
	return names
}
