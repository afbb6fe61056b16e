package oauth

import (
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// oaAuditLog describes the audit log endpoint in d, with the errors of
// endpoints that take an admin's product user token.
func (s *Server) oaAuditLog(d *openapi.Document, p Paths, userAuthErrors func(notFound, forbidden string) map[string]*openapi.Response, security []openapi.SecurityRequirement) {
	str := func(description string, values ...any) *openapi.Schema {
		return &openapi.Schema{Type: "string", Description: description, Enum: values}
	}
	ref := func(kinds string, values ...any) *openapi.Schema {
		return openapi.Object([]string{"kind", "id"}, openapi.Prop("kind", str(kinds, values...)), openapi.Prop("id", str("Its id; empty for the command line.")))
	}
	entry := openapi.Object([]string{"id", "time", "action", "actor", "target", "remote_addr", "details"},
		openapi.Prop("id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The entry's id."}),
		openapi.Prop("time", &openapi.Schema{Type: "string", Format: "date-time", Description: "When the action happened."}),
		openapi.Prop("action", str("What was done.", "app.created", "app.secret_rotated", "app.disconnected", "app.quota_set", "consent.granted",
			"member.added", "member.removed", "user.deleted", "webhook_endpoint.created", "webhook_endpoint.changed", "webhook_endpoint.deleted",
			"webhook_endpoint.disabled", "webhook_endpoint.secret_rotated", "registration_token.created", "signing_key.rotated")),
		openapi.Prop("actor", ref("Who did it: a product user, an app (its client id), the operator's command line, or the server itself.", "user", "app", "cli", "system")),
		openapi.Prop("target", ref("What it was done to: `app` (a client id), `user`, `webhook_endpoint`, `registration_token`, `signing_key`.")),
		openapi.Prop("remote_addr", str("The address of the request, without its port; empty for the command line and the server itself.")),
		openapi.Prop("details", &openapi.Schema{Type: "object", Description: "More about the action: the scopes granted, the fields changed, ..."}))
	entry.Description = "An action of the audit log."
	page := openapi.Object([]string{"data", "next_cursor", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef("AuditLogEntry")}),
		openapi.Prop("next_cursor", &openapi.Schema{Type: []string{"string", "null"}, Description: "The `after` of the next page; null on the last page (one shorter than `limit`)."}),
		openapi.Prop("version", str("`v1`.")))
	page.Description = "A page of the audit log, oldest first."
	d.Components.Schemas["AuditLogEntry"] = entry
	d.Components.Schemas["AuditLog"] = page

	responses := userAuthErrors("the user is no member of the organization (its existence is not revealed).", "the user is a member of the organization but not an admin.")
	responses["200"] = openapi.WithHeaders(&openapi.Response{Description: "The page.", Content: openapi.JSON(openapi.SchemaRef("AuditLog"))}, "Cache-Control")
	responses["400"] = openapi.ErrorResponse("`invalid_request`: an unknown or repeated parameter, a `limit` out of range, or an `after` that is not a cursor of this log.",
		oaErr(apierrors.CodeInvalidRequest, "limit must be a whole number from 1 to 1000"))
	d.Paths[p.AuditLog] = &openapi.PathItem{
		Parameters: []*openapi.Parameter{{Name: "organization_id", In: "path", Required: true, Description: "The organization's id.", Schema: &openapi.Schema{Type: "string", Format: "uuid"}}},
		Get: &openapi.Operation{
			Tags: []string{tagOAuth}, Summary: "Read an organization's audit log", OperationID: "getAuditLog",
			Description: "The security-relevant actions done to the organization, oldest first, each appended in the transaction of its action and never changed: " +
				"apps registered, their secrets rotated, apps disconnected, consents given, and the actions of the whole installation that concern every organization " +
				"(registration tokens made). Takes the product user token of an admin of the organization.",
			Parameters: []*openapi.Parameter{
				{Name: "after", In: "query", Description: "The `next_cursor` of the page before.", Schema: &openapi.Schema{Type: "string"}},
				{Name: "limit", In: "query", Description: "Entries per page, 1 to 1000 (default 50).", Schema: &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(1000.0)}},
			},
			Responses: responses,
			Security:  security,
		},
	}
}
