package events

import (
	"slices"
	"strconv"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// The names of the feed's components and tag.
const (
	oaTag       = "events"
	oaEvent     = "CloudEvent"
	oaEventData = "EventData"
	oaPage      = "EventPage"
)

// OpenAPI returns the OpenAPI 3.1 description of the feed at its first
// prefix (Registry.PathPrefixes; no path when it has none), with the schema of its events (CloudEvent, which webhooks deliver
// too), for the host to merge into its document (resource.OpenAPIInfo
// takes it in Sections). Its security scheme is "oauth2", which the
// registry's document declares.
func (f *Feed) OpenAPI() *openapi.Document {
	d := openapi.New(openapi.Info{Title: "Change feed", Version: "v1"})
	d.Tags = append(d.Tags, openapi.Tag{Name: oaTag, Description: "The change feed: every create, update and delete of the API's records, " +
		"as CloudEvents 1.0 in commit order, kept for a limited time. The same events are delivered to webhook endpoints."})
	d.Components.Schemas[oaEvent] = f.oaEventSchema()
	d.Components.Schemas[oaEventData] = oaDataSchema()
	d.Components.Schemas[oaPage] = openapi.Object([]string{"data", "next_cursor", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef(oaEvent), Description: "The events after the cursor, in commit order."}),
		openapi.Prop("next_cursor", openapi.String("Where to go on from: give it as `after` for the next page. Always a string, also on an empty page, so that a consumer follows it and polls. Opaque.")),
		openapi.Prop("version", &openapi.Schema{Type: "string", Const: "v1"}))
	d.Components.Schemas["Error"] = openapi.ErrorSchema()
	d.Components.Headers = openapi.Headers()
	d.Components.Responses["RateLimited"] = openapi.RateLimitedResponse()
	d.Components.Responses["ServerError"] = openapi.ServerErrorResponse()
	d.Components.Responses["Unavailable"] = openapi.UnavailableResponse()

	prefixes := f.Registry.PathPrefixes()
	if len(prefixes) == 0 {
		return d // mounted nowhere (see Mount): no path to describe
	}
	prefix := prefixes[0]
	d.Paths[prefix+"/{scopeId}/events"] = &openapi.PathItem{Get: &openapi.Operation{
		Tags: []string{oaTag}, Summary: "Follow the change feed", OperationID: "listEvents",
		Description: "The events of the records the token may read, in commit order: a token needs `" + ReadScope + "` and sees the events of a resource only with that resource's read scope, " +
			"and of the branches it may use (a client-credentials token: its `oauth_branch_ids`). `{scopeId}` is the organization (every branch the token may use) or a branch (that branch, and the organization-wide records).\n\n" +
			"Follow `next_cursor`: a consumer that does never misses an event, also while many writers commit at once, because events are numbered only once they have committed, one after the other. " +
			"Without `after` the feed starts at the oldest event it keeps. A cursor older than what the feed keeps (7 days by default) is answered 410 `cursor_expired`: read the current state from the lists, then follow the feed from a new cursor.",
		Parameters: []*openapi.Parameter{
			{Name: "scopeId", In: "path", Required: true, Description: "The organization or one of its branches.", Schema: &openapi.Schema{Type: "string", Format: "uuid"}},
			{Name: "after", In: "query", Description: "The `next_cursor` of the previous page.", Schema: &openapi.Schema{Type: "string"}},
			{Name: "types", In: "query", Description: "Comma-separated event types to keep: whole types (`quotation.created`), a record's types (`quotation.*`) or `*`; at most " + strconv.Itoa(MaxTypes) + " of them, counted as given (a type given twice counts twice and is kept once), else 400 `invalid_request`.", Schema: &openapi.Schema{Type: "string"}, Example: "quotation.*,shipment.status_changed"},
			{Name: "limit", In: "query", Description: "The most events on the page.", Schema: &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(MaxLimit)), Default: DefaultLimit}},
		},
		Responses: map[string]*openapi.Response{
			"200": openapi.WithHeaders(&openapi.Response{Description: "A page of the feed.", Content: openapi.JSON(openapi.SchemaRef(oaPage))}, "RateLimit-Policy", "RateLimit"),
			"400": openapi.ErrorResponse("`invalid_request`: an unknown parameter or event type, a `limit` out of range, or a cursor this organization's feed never gave.",
				openapi.ErrorExample{Code: apierrors.CodeInvalidRequest, Description: "types: \"invoice.moved\" is not an event type"}),
			"401": openapi.WithHeaders(openapi.ErrorResponse("`unauthorized` or `invalid_token`.",
				openapi.ErrorExample{Code: apierrors.CodeInvalidToken, Description: "the token has expired"}), "WWW-Authenticate"),
			"403": openapi.ErrorResponse("`insufficient_scope`: the token lacks `"+ReadScope+"`, or is a client-credentials token that may not use the branch `{scopeId}`. `invalid_token_type`: a product user token.",
				openapi.ErrorExample{Code: apierrors.CodeInsufficientScope, Description: "the token lacks the scope " + ReadScope}),
			"404": openapi.ErrorResponse("`not_found`: `{scopeId}` names no organization or branch of the token's organization.",
				openapi.ErrorExample{Code: apierrors.CodeNotFound, Description: "no such organization or branch"}),
			"410": openapi.ErrorResponse("`cursor_expired`: the events after the cursor are no longer kept.",
				openapi.ErrorExample{Code: apierrors.CodeCursorExpired, Description: "the cursor is older than the events this feed keeps"}),
			"429": openapi.ResponseRef("RateLimited"),
			"500": openapi.ResponseRef("ServerError"),
			"503": openapi.ResponseRef("Unavailable"),
		},
		Security: []openapi.SecurityRequirement{{"oauth2": {ReadScope}}},
	}}
	return d
}

// oaEventSchema describes an event.
func (f *Feed) oaEventSchema() *openapi.Schema {
	var names []string
	for _, r := range f.Registry.Resources() {
		for _, c := range changes {
			if c == StatusChanged && r.StatusField() == "" {
				continue
			}
			names = append(names, Type(r.Name, c))
		}
	}
	for _, k := range f.Kinds {
		for _, c := range k.Changes {
			names = append(names, Type(k.Resource, c))
		}
	}
	slices.Sort(names)
	types := make([]any, len(names))
	for i, n := range names {
		types[i] = n
	}
	uuid := func(d string) *openapi.Schema { return &openapi.Schema{Type: "string", Format: "uuid", Description: d} }
	s := openapi.Object([]string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "organizationid", "data"},
		openapi.Prop("specversion", &openapi.Schema{Type: "string", Const: "1.0"}),
		openapi.Prop("id", uuid("The event's id, unique; a webhook delivery's `webhook-id`. Handle an event once per id.")),
		openapi.Prop("source", openapi.String("The record's path: `/v1/{scopeId}/{resource}/{id}`.")),
		openapi.Prop("type", &openapi.Schema{Type: "string", Enum: types, Description: "The record's kind and the change: `created`, `updated`, `deleted`, or `status_changed` (an update that moved the status, which also gives `updated`)."}),
		openapi.Prop("subject", uuid("The record's id.")),
		openapi.Prop("time", &openapi.Schema{Type: "string", Format: "date-time", Description: "When the write happened, UTC, to the microsecond: the `updated_at` of the record in `data` (for a delete, when the record was deleted)."}),
		openapi.Prop("datacontenttype", &openapi.Schema{Type: "string", Const: "application/json"}),
		openapi.Prop("organizationid", uuid("The record's organization.")),
		openapi.Prop("branchid", uuid("The record's branch; absent for organization-wide records.")),
		openapi.Prop("clientid", openapi.String("The OAuth client (app) whose token made the write.")),
		openapi.Prop("userid", uuid("The user whose token made the write; absent for client-credentials tokens.")),
		openapi.Prop("data", openapi.SchemaRef(oaEventData)))
	s.Description = "A CloudEvents 1.0 event (JSON format) of a write."
	return s
}

// oaDataSchema describes the data of an event.
func oaDataSchema() *openapi.Schema {
	s := openapi.Object([]string{"record", "changed"},
		openapi.Prop("record", &openapi.Schema{Type: "object", Description: "The record after the write, as the API shows it (the schema of its resource); for `deleted`, `{\"id\"}` alone."}),
		openapi.Prop("changed", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, Description: "The fields the write changed: on `created`, those the record was given; on `updated`, those whose value differs from before; on `deleted`, none."}),
		openapi.Prop("status", openapi.Object([]string{"field", "from", "to"},
			openapi.Prop("field", openapi.String("The status field.")),
			openapi.Prop("from", openapi.String("The state before.")),
			openapi.Prop("to", openapi.String("The state after.")))))
	s.Properties[2].Schema.Description = "Only on `status_changed`: the move."
	return s
}
