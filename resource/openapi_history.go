package resource

import (
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// This file describes the history of a resource's records
// (Registry.History): its path, operation and schemas.

// addHistory adds the schemas of r's history and its path under item, the
// path of one record.
func (b *openAPIBuilder) addHistory(r *Resource, n oaNames, item string, params []*openapi.Parameter) error {
	values := &openapi.Schema{Type: "object", AdditionalProperties: openapi.Ptr(false),
		Description: "Values of fields of " + n.one + ", as the API shows them: exactly the fields the entry's `changed` names."}
	for _, c := range selected(r) {
		if f := r.Field(c.name); f != nil && !isCommon(c.name) {
			ps := oaFieldSchema(f, true)
			ps.Description = oaFieldDescription(b.g, f)
			values.Properties = append(values.Properties, openapi.Prop(c.name, ps))
		}
	}
	entry := openapi.Object([]string{"id", "type", "time", "clientid", "userid", "changed", "before", "after"},
		openapi.Prop("id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The id of the write's event: the `id` of the CloudEvent the change feed and the webhooks give of the same write."}),
		openapi.Prop("type", &openapi.Schema{Type: "string", Enum: []any{Singular(r.Name) + ".created", Singular(r.Name) + ".updated", Singular(r.Name) + ".deleted"},
			Description: "What the write did. A move of the status is part of its update's entry (the change feed's `status_changed` event repeats it)."}),
		openapi.Prop("time", &openapi.Schema{Type: "string", Format: "date-time", Description: "When the write happened, in UTC, to the microsecond: the record's `updated_at` after a create or update."}),
		openapi.Prop("clientid", &openapi.Schema{Type: []string{"string", "null"}, Description: "The client of the token that wrote."}),
		openapi.Prop("userid", &openapi.Schema{Type: []string{"string", "null"}, Description: "The user the token acted for; null for a client-credentials token."}),
		openapi.Prop("changed", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"},
			Description: "The fields the write changed, in the order of the record's fields: on create, those given a value other than null; on update, those whose value differs from before; on delete, every field. `id`, `created_at` and `updated_at` are never named."}),
		openapi.Prop("before", &openapi.Schema{Ref: openapi.Ref("schemas", n.schema+"HistoryValues"), Description: "The values of the changed fields before the write; `{}` on create."}),
		openapi.Prop("after", &openapi.Schema{Ref: openapi.Ref("schemas", n.schema+"HistoryValues"), Description: "The values of the changed fields after the write; `{}` on delete."}))
	entry.Description = "One write of " + n.one + "."
	envelope := openapi.Object([]string{"data", "next_cursor", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef(n.schema + "HistoryEntry"), Description: "The entries of the page, oldest first."}),
		openapi.Prop("next_cursor", &openapi.Schema{Type: []string{"string", "null"}, Description: "The cursor of the next page, to send as `after`; null on the last page."}),
		openapi.Prop("version", oaVersion()))
	for _, s := range []struct {
		name   string
		schema *openapi.Schema
	}{{n.schema + "HistoryValues", values}, {n.schema + "HistoryEntry", entry}, {n.schema + "HistoryEnvelope", envelope}} {
		if err := b.addSchema(s.name, s.schema); err != nil {
			return err
		}
	}
	op := &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Get the history of " + n.one, OperationID: "get" + n.singleOp + "History",
		Description: strings.Join([]string{
			"Returns the history of " + n.one + ", oldest first: one entry for each create, update and delete, with the values of the fields it changed before and after, who wrote (`clientid`, `userid`), when, and the id of its event. " +
				"It is kept after the " + n.single + " is deleted, for as long as the server's audit retention, whatever the change feed's retention. " +
				"A " + n.single + " that exists but has no entries (written before the history was kept, or past the retention) has an empty history.",
			oaScopeSentence(r.ScopeType, oaRead) + " The history of " + n.one + " that `{scopeId}` does not see, existing or deleted, is 404 `not_found`, as for a GET.",
			oaNeedsScope(r.ReadScope()),
		}, "\n\n"),
		Parameters: []*openapi.Parameter{
			{Name: "limit", In: "query", Description: "Entries per page: 1 to " + strconv.Itoa(MaxHistoryLimit) + ", default " + strconv.Itoa(DefaultHistoryLimit) + ".",
				Schema: &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(MaxHistoryLimit)), Default: DefaultHistoryLimit}},
			{Name: "after", In: "query", Description: "The `next_cursor` of the page before: opaque, bound to this record and tamper-evident.",
				Schema: &openapi.Schema{Type: "string"}},
		},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("A page of the history.", n.schema+"HistoryEnvelope", map[string]*openapi.Header{"Link": openapi.HeaderRef("Link")}),
			"400": openapi.ErrorResponse("`invalid_request`: a limit out of range or not an integer, a cursor that is not the `next_cursor` of this record's history, an unknown parameter, or a query string that does not decode.",
				oaErr(apierrors.CodeInvalidRequest, "limit: must be an integer from 1 to "+strconv.Itoa(MaxHistoryLimit))),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.ReadScope(), oaRead),
			"404": oaNotFound(true, n),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
		},
		Security: oaSecurity(r.ReadScope()),
	}
	return b.addPath(item+"/history", &openapi.PathItem{Parameters: params, Get: op})
}
