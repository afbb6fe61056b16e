package resource

import (
	"strings"

	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// This file describes the schemas of a resource: its record as responses
// carry it, the bodies of create and update, and the envelopes.

// oaFieldSchema returns the schema of a field's value; nullable adds null.
func oaFieldSchema(f *Field, nullable bool) *openapi.Schema {
	s := &openapi.Schema{}
	var typ string
	switch f.Type {
	case query.UUID:
		typ, s.Format = "string", "uuid"
	case query.String:
		typ = "string"
		if f.Create || f.Update || f.MaxLength > 0 {
			max := f.MaxLength
			if max == 0 {
				max = defaultMaxLength
			}
			s.MaxLength = openapi.Ptr(max)
		}
	case query.Enum:
		typ = "string"
		for _, v := range f.Values {
			s.Enum = append(s.Enum, v)
		}
		if nullable {
			s.Enum = append(s.Enum, nil)
		}
	case query.Integer:
		typ, s.Format = "integer", "int64"
	case query.Number:
		typ, s.Format = "number", "double"
	case query.Date:
		typ, s.Format = "string", "date"
	case query.Timestamp:
		typ, s.Format = "string", "date-time"
	case query.Boolean:
		typ = "boolean"
	}
	if f.Min != nil {
		s.Minimum = openapi.Ptr(*f.Min)
	}
	if f.Max != nil {
		s.Maximum = openapi.Ptr(*f.Max)
	}
	if nullable {
		s.Type = []string{typ, "null"}
	} else {
		s.Type = typ
	}
	return s
}

// oaReferenceNote says what a reference field may name, as the handlers
// check it.
func oaReferenceNote(g *Registry, f *Field) string {
	target := g.Resource(f.References)
	if target == nil {
		return ""
	}
	what := oaWords(target.Name)
	switch target.ScopeType {
	case tenancy.Branch:
		return "The id of one of the " + what + " of the record's branch."
	case tenancy.BranchOrNull:
		return "The id of one of the " + what + " of the record's branch, or of an organization-wide one."
	}
	return "The id of one of the " + what + " of the organization."
}

func oaFieldDescription(g *Registry, f *Field) string {
	parts := []string{}
	if f.Description != "" {
		parts = append(parts, f.Description)
	}
	if f.References != "" {
		parts = append(parts, oaReferenceNote(g, f))
	}
	if f.Create && !f.Update {
		parts = append(parts, "Set on create; it cannot be changed afterwards.")
	}
	if f.Type == query.Timestamp && (f.Create || f.Update) {
		parts = append(parts, "A bare `YYYY-MM-DD` is taken as midnight UTC.")
	}
	return strings.Join(parts, " ")
}

// oaRecordSchema is the schema of a record as responses carry it: every
// column the handlers select (see selected). In the full record, which
// writes answer, every column is present; in the partial one, which the
// GETs answer since they take fields=, only id is sure to be.
func oaRecordSchema(g *Registry, r *Resource, n oaNames, partial bool) *openapi.Schema {
	s := &openapi.Schema{Type: "object", Description: r.Description}
	if s.Description != "" {
		s.Description += "\n\n"
	}
	if partial {
		whole := "every property"
		if !r.ReadOnly {
			whole += ", as in `" + n.schema + "`"
		}
		s.Description += "The " + n.single + " as a GET answers it: without `fields`, " + whole + "; " +
			"with `fields`, `id` and the fields named, and no other. So only `id` is required here."
	} else {
		s.Description += "The whole " + n.single + ", as a create, update or delete answers it (and a 412 carries it): every property is present."
	}
	for _, c := range selected(r) {
		var ps *openapi.Schema
		switch f := r.Field(c.name); {
		case f != nil:
			ps = oaFieldSchema(f, f.Nullable)
			ps.Description = oaFieldDescription(g, f)
			ps.ReadOnly = !f.Create && !f.Update
		case c.name == OrganizationColumn:
			ps = &openapi.Schema{Type: "string", Format: "uuid", ReadOnly: true,
				Description: "The organization that owns the record; set by the server, never sent by clients."}
		case c.name == BranchColumn && r.ScopeType == tenancy.BranchOrNull:
			ps = &openapi.Schema{Type: []string{"string", "null"}, Format: "uuid", ReadOnly: true,
				Description: "The branch the record belongs to, or null for an organization-wide record that every branch sees; set by the server from `{scopeId}`, never sent by clients."}
		default:
			ps = &openapi.Schema{Type: "string", Format: "uuid", ReadOnly: true,
				Description: "The branch the record belongs to; set by the server from `{scopeId}`, never sent by clients."}
		}
		s.Properties = append(s.Properties, openapi.Prop(c.name, ps))
		if !partial || c.name == "id" {
			s.Required = append(s.Required, c.name)
		}
	}
	return s
}

// oaWriteSchema is the body of a POST (create) or PATCH.
func oaWriteSchema(g *Registry, r *Resource, n oaNames, create bool) *openapi.Schema {
	s := &openapi.Schema{Type: "object", AdditionalProperties: openapi.Ptr(false)}
	if create {
		s.Description = "The body of a create of " + n.one + ". Fields left out get their defaults; unknown fields, and fields that may not be sent on create, are refused (400 `invalid_create`)."
	} else {
		s.Description = "The body of an update of " + n.one + ": the fields to change. Unknown fields, and fields that may not be changed, are refused (400 `invalid_update`)."
	}
	for i := range r.fields {
		f := &r.fields[i]
		if (create && !f.Create) || (!create && !f.Update) {
			continue
		}
		ps := oaFieldSchema(f, f.Nullable && !f.Required)
		ps.Description = oaFieldDescription(g, f)
		s.Properties = append(s.Properties, openapi.Prop(f.Name, ps))
		if create && f.Required {
			s.Required = append(s.Required, f.Name)
		}
	}
	return s
}

func oaVersion() *openapi.Schema {
	return &openapi.Schema{Type: "string", Const: Version, Description: "The API version."}
}

// oaListEnvelope is the answer of a list: its records are partial, since
// the list takes fields=.
func oaListEnvelope(n oaNames) *openapi.Schema {
	return openapi.Object([]string{"data", "pagination", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef(n.schema + "Partial"), Description: "The page of " + n.plural + ": whole, or with `fields`, `id` and the fields named."}),
		openapi.Prop("pagination", openapi.SchemaRef("Pagination")),
		openapi.Prop("version", oaVersion()))
}

// oaItemEnvelope is the answer of one record: of the schema record.
func oaItemEnvelope(record string) *openapi.Schema {
	return openapi.Object([]string{"data", "version"},
		openapi.Prop("data", openapi.SchemaRef(record)),
		openapi.Prop("version", oaVersion()))
}

func oaPagination() *openapi.Schema {
	return openapi.Object([]string{"limit", "offset", "total", "next_cursor"},
		openapi.Prop("limit", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Description: "The page size used."}),
		openapi.Prop("offset", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of records skipped."}),
		openapi.Prop("total", &openapi.Schema{Type: []string{"integer", "null"}, Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of records every filter matches, on every page: exact, or estimated with `Prefer: count=estimated` (see `Preference-Applied`), or null with `Prefer: count=none`."}),
		openapi.Prop("next_cursor", &openapi.Schema{Type: []string{"string", "null"}, Description: "The cursor of the next page, to send as `after`; null on the last page."}))
}
