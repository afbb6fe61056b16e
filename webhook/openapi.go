package webhook

import (
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/webhook/signature"
)

// This file describes the endpoints API as an OpenAPI section (see package
// openapi), for the host to merge into the document it serves: package
// resource takes it in resource.OpenAPIInfo.Sections.
//
// Decisions:
//
//   - The paths are under the first prefix (/v1), as the resource
//     document's are; its description says the other prefixes are
//     aliases.
//   - The operations name the security scheme "oauth2" with ScopeRead or
//     ScopeWrite, but the section does not declare the scheme: the token
//     service's section (oauth.Server.OpenAPI) does, with its flows and
//     its ScopesSupported, which must list ScopeRead and ScopeWrite for
//     apps to get them at all. Declaring it here too would make the
//     first section that declares it decide the flows.
//   - Components that other sections also declare (the Error schema, the
//     Unauthorized, RateLimited and ServerError responses, the shared
//     headers) have the same names and content as there, so that merging
//     keeps one of each; what only this section has is named Webhook....

// The names of the section's tag and security scheme.
const (
	oaTag          = "webhook_endpoints"
	oaSchemeOAuth2 = "oauth2"
)

// OpenAPI returns the OpenAPI 3.1 description of the API's paths under its
// first prefix, under the tag "webhook_endpoints", with the schemas
// (WebhookEndpoint, WebhookEndpointCreated with the secret,
// WebhookEndpointCreate, WebhookEndpointUpdate, WebhookDelivery,
// WebhookAttempt and their envelopes), responses and headers they use. It
// names, and does not declare, the security scheme "oauth2" (the token
// service's section declares it). Merge it into the host's document with
// openapi.Document.Merge or resource.OpenAPIInfo.Sections. Each call
// returns a new document; it needs no database.
func (a *API) OpenAPI() *openapi.Document {
	d := openapi.New(openapi.Info{Title: "Webhook endpoints", Version: apiVersion})
	d.Tags = []openapi.Tag{{Name: oaTag, Description: oaTagDescription}}
	d.Components.Headers = openapi.Headers()
	d.Components.Schemas = oaSchemas()
	d.Components.Responses = map[string]*openapi.Response{
		"Unauthorized":           oaUnauthorized(),
		"RateLimited":            openapi.RateLimitedResponse(),
		"ServerError":            openapi.ServerErrorResponse(),
		"Unavailable":            openapi.UnavailableResponse(),
		"WebhookPayloadTooLarge": openapi.PayloadTooLargeResponse(MaxBodyBytes),
		"IdempotencyInProgress":  openapi.IdempotencyInProgressResponse(),
		"IdempotencyKeyReused":   openapi.IdempotencyKeyReusedResponse(),
	}
	prefixes := a.prefixes()
	if len(prefixes) == 0 {
		return d
	}
	collection := prefixes[0] + "/{organizationId}/webhook_endpoints"
	item := collection + "/{id}"
	org := &openapi.Parameter{
		Name: "organizationId", In: "path", Required: true,
		Description: "The organization's UUID; it must equal the token's `organization_id`. Any other value gives 404 `not_found`.",
		Schema:      &openapi.Schema{Type: "string", Format: "uuid"},
	}
	id := &openapi.Parameter{
		Name: "id", In: "path", Required: true,
		Description: "The id of a webhook endpoint of the organization. An id that is not a UUID, or of no endpoint of the organization, gives 404 `not_found`.",
		Schema:      &openapi.Schema{Type: "string", Format: "uuid"},
	}
	deliveryID := &openapi.Parameter{
		Name: "delivery_id", In: "path", Required: true,
		Description: "The id of a delivery of the endpoint. An id that is not a UUID, or of no delivery of this endpoint, gives 404 `not_found`.",
		Schema:      &openapi.Schema{Type: "string", Format: "uuid"},
	}
	d.Paths[collection] = &openapi.PathItem{Parameters: []*openapi.Parameter{org}, Get: a.oaList(), Post: a.oaCreate()}
	d.Paths[item] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id}, Get: oaGet(), Patch: a.oaUpdate(), Delete: oaDelete()}
	d.Paths[item+"/deliveries"] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id}, Get: oaListDeliveries()}
	d.Paths[item+"/deliveries/{delivery_id}/redeliver"] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id, deliveryID}, Post: a.oaRedeliver()}
	d.Paths[item+"/"+actionRotate] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id}, Post: a.oaRotateSecret()}
	d.Paths[item+"/"+actionTest] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id}, Post: a.oaTest()}
	d.Paths[item+"/"+actionRecover] = &openapi.PathItem{Parameters: []*openapi.Parameter{org, id}, Post: a.oaRecover()}
	a.oaDelivery(d)
	return d
}

// oaDelivery adds the webhook a receiver is called with, and the schemas of
// the event it carries (the feed's: package events describes them).
func (a *API) oaDelivery(d *openapi.Document) {
	feed := (&events.Feed{Registry: a.Registry, Kinds: EventKinds()}).OpenAPI()
	for _, name := range []string{"CloudEvent", "EventData"} {
		d.Components.Schemas[name] = feed.Components.Schemas[name]
	}
	test := *feed.Components.Schemas["CloudEvent"]
	test.Properties = append([]openapi.Property(nil), test.Properties...)
	for i, p := range test.Properties {
		switch p.Name {
		case "type":
			test.Properties[i] = openapi.Prop("type", &openapi.Schema{Type: "string", Const: TestEventType})
		case "source":
			test.Properties[i] = openapi.Prop("source", openapi.String("The endpoint's path: `/v1/{organizationId}/webhook_endpoints/{id}`."))
		case "subject":
			test.Properties[i] = openapi.Prop("subject", &openapi.Schema{Type: "string", Format: "uuid", Description: "The endpoint's id."})
		}
	}
	test.Description = "The event a test of an endpoint (POST .../{id}/test) delivers to it alone: `data.record` is the endpoint (without its secret), `data.changed` empty. It is never in the feed."
	d.Components.Schemas["WebhookTestEvent"] = &test
	header := func(name, description string, s *openapi.Schema) *openapi.Parameter {
		return &openapi.Parameter{Name: name, In: "header", Required: true, Description: description, Schema: s}
	}
	d.Webhooks = map[string]*openapi.PathItem{"event": {Post: &openapi.Operation{
		Tags: []string{oaTag}, Summary: "An event, delivered to an endpoint", OperationID: "deliverEvent",
		Description: "What a webhook endpoint receives: a POST of one event's CloudEvent JSON in structured mode (`Content-Type: application/cloudevents+json`), signed as the Standard Webhooks specification says. " +
			"Verify the signature before anything else (with the `whsec_` secret of the endpoint), and handle each `webhook-id` once: " +
			"a delivery may come again (a retry after a timeout, a replica that stopped after sending). The events of one record come in their order.",
		Parameters: []*openapi.Parameter{
			header("webhook-id", "The event's id, the same in every attempt of the delivery.", &openapi.Schema{Type: "string", Format: "uuid"}),
			header("webhook-timestamp", "When the attempt was signed, in Unix seconds; refuse one more than five minutes from now.", &openapi.Schema{Type: "string", Pattern: "^[0-9]+$"}),
			header("webhook-signature", "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the base64-decoded part of the secret after `whsec_`; "+
				"several space-separated signatures may come, one of which must match.", &openapi.Schema{Type: "string"}),
		},
		RequestBody: &openapi.RequestBody{Description: "The event, in the structured mode of the CloudEvents HTTP binding.", Required: true,
			Content: map[string]*openapi.MediaType{signature.ContentType: {Schema: &openapi.Schema{OneOf: []*openapi.Schema{openapi.SchemaRef("CloudEvent"), openapi.SchemaRef("WebhookTestEvent")}}}}},
		Responses: map[string]*openapi.Response{
			"2XX":     {Description: "Delivered: any 2xx answer ends the delivery."},
			"default": {Description: "Any other answer (a redirect included), or none within the server's timeout: the attempt failed, and the delivery is tried again with backoff, as the server's retry schedule says (by default for about a day)."},
		},
		Security: []openapi.SecurityRequirement{},
	}}}
}

const oaTagDescription = "The HTTP endpoints an organization registers to receive its events as webhooks, signed as the Standard Webhooks specification says " +
	"(headers `webhook-id`, the event id; `webhook-timestamp`; `webhook-signature: v1,<base64 HMAC-SHA256 of \"id.timestamp.body\">` under the key " +
	"of the endpoint's `whsec_` secret). The body of a delivery is the event's CloudEvent JSON (structured mode, `Content-Type: application/cloudevents+json`); any 2xx answer is success, anything else is retried " +
	"with backoff, and an endpoint that keeps failing is disabled with its `disabled_reason`.\n\n" +
	"An endpoint gets the events committed after its creation whose type matches `event_types`, of the branches in `branch_ids` (null: every branch), " +
	"and only those that the token that registered it or changed it last could read: the resources whose read scope it had and, for a " +
	"client-credentials token, its branches. The endpoint acts under the authority of that token's app (`client_id`): changing it, or sending " +
	"its deliveries again, needs a token that may read everything it gets. The other prefixes of the API (`/api/v1`) serve the same paths."

// oaSchemas are the section's schema components.
func oaSchemas() map[string]*openapi.Schema {
	uuid := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: "string", Format: "uuid", Description: description}
	}
	timestamp := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: "string", Format: "date-time", Description: description}
	}
	url := func() *openapi.Schema {
		return &openapi.Schema{Type: "string", Format: "uri", MaxLength: openapi.Ptr(maxURLLength),
			Description: "The URL the events are POSTed to: absolute, http or https, without user or fragment; its host must not be or resolve to a loopback, private, link-local or otherwise non-public address (unless the server allows them).",
			Examples:    []any{"https://tms.example.com/hooks/waybill"}}
	}
	eventTypes := func() *openapi.Schema {
		return &openapi.Schema{Type: "array", MinItems: openapi.Ptr(1), MaxItems: openapi.Ptr(MaxEventTypes),
			Items: &openapi.Schema{Type: "string", Examples: []any{"quotation.status_changed"}},
			Description: "The event types the endpoint gets: an event type (`quotation.created`, `quotation.updated`, `quotation.deleted`, `quotation.status_changed`), " +
				"all the types of a resource (`quotation.*`) or every type (`*`). A type of a resource needs that resource's read scope (`*` at least one read scope). " +
				"`" + EndpointDisabledType + "` (or `webhook_endpoint.*`), the event of an endpoint the server disabled after its deliveries kept failing, needs `" + ScopeRead + "`.",
			Examples: []any{[]string{"quotation.*", "account.created"}}}
	}
	branchIDs := func() *openapi.Schema {
		return &openapi.Schema{Type: []string{"array", "null"}, MinItems: openapi.Ptr(1), Items: &openapi.Schema{Type: "string", Format: "uuid"},
			Description: "The branches whose events the endpoint gets; null for every branch. A client-credentials token may name only its own branches, and must name some unless it covers every branch of the organization."}
	}
	filter := func() *openapi.Schema {
		return &openapi.Schema{Type: []string{"array", "null"}, MinItems: openapi.Ptr(1), MaxItems: openapi.Ptr(MaxFilterConditions),
			Items: &openapi.Schema{Type: "string", Pattern: "^[^:]+:[^:]+:", Examples: []any{"status.to:eq:delivered"}},
			Description: "Conditions `field:operator:value` that every event the endpoint gets meets, all of them; null for every event. " +
				"The grammar of the lists' `filter` parameter, split on the first two colons: operators `eq`, `ne`, `in` (comma-separated; a value that holds a comma in double quotes), " +
				"`gt`, `gte`, `lt`, `lte` and `isnull` (`true` or `false`), each where the field's type allows it; values parse as the field's type and compare as it (numbers as numbers, dates and timestamps as times). " +
				"A field is one of `data.record`, or `status.from` and `status.to` (the move a `status_changed` event carries; null on every other event), " +
				"or `changed` (`changed:eq:eta` holds when `eta` is among `data.changed`; `in` when any of them is; `ne` when it is not). " +
				"A condition names a field that every resource the event types name has, with one type in all of them (`status.from`/`status.to`: every one has a status flow), " +
				"else 400. A field the event's record lacks (a deleted record carries its `id` only) or holds as null is null: only `isnull:true` holds for it, and `ne` never does. " +
				"Changing `event_types` checks the filter again.",
			Examples: []any{[]string{"status.to:eq:delivered"}, []string{"changed:in:eta,delivery_until", "weight_kg:gt:1000"}}}
	}
	rateLimit := func() *openapi.Schema {
		return &openapi.Schema{Type: []string{"integer", "null"}, Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(MaxRateLimit)),
			Description: "The most deliveries a second the endpoint gets, across every replica of the server; null for no limit. " +
				"Deliveries beyond it wait their turn (one every 1/rate_limit seconds, with no burst beyond one): they stay pending and cost no attempt.",
			Examples: []any{10}}
	}
	status := func() *openapi.Schema {
		return &openapi.Schema{Type: "string", Enum: []any{statusEnabled, statusDisabled},
			Description: "`enabled`, or `disabled`: by a PATCH, by the server after deliveries kept failing, or when the app under whose authority it acts was disconnected from the organization (see `disabled_reason`; then no other app may change or enable it). A disabled endpoint gets no deliveries; enabling it clears `disabled_reason`."}
	}
	endpointProps := func() []openapi.Property {
		return []openapi.Property{
			openapi.Prop("id", uuid("The endpoint's id.")),
			openapi.Prop("url", url()),
			openapi.Prop("event_types", eventTypes()),
			openapi.Prop("branch_ids", branchIDs()),
			openapi.Prop("filter", filter()),
			openapi.Prop("rate_limit", rateLimit()),
			openapi.Prop("status", status()),
			openapi.Prop("disabled_reason", &openapi.Schema{Type: []string{"string", "null"}, Description: "Why the endpoint is disabled; null while it is enabled."}),
			openapi.Prop("client_id", &openapi.Schema{Type: "string",
				Description: "The app under whose authority the endpoint acts: the app whose token registered it or changed it last. Disconnecting the app from the organization disables the endpoints it acts for."}),
			openapi.Prop("created_at", timestamp("When the endpoint was registered.")),
			openapi.Prop("updated_at", timestamp("When the endpoint was last changed.")),
			openapi.Prop("previous_secret_expires_at", &openapi.Schema{Type: []string{"string", "null"}, Format: "date-time",
				Description: "After a rotation of the secret (`rotate_secret`), when the previous secret stops signing deliveries; until then each delivery carries two signatures. Null when only the current secret signs."}),
		}
	}
	endpointRequired := []string{"id", "url", "event_types", "branch_ids", "filter", "rate_limit", "status", "disabled_reason", "client_id", "created_at", "updated_at", "previous_secret_expires_at"}
	endpointSchema := openapi.Object(endpointRequired, endpointProps()...)
	endpointSchema.Description = "A webhook endpoint. Its signing secret is shown once, when it is created (WebhookEndpointCreated), and never again."
	created := openapi.Object(append(append([]string{}, endpointRequired...), "secret"), append(endpointProps(),
		openapi.Prop("secret", &openapi.Schema{Type: "string", Pattern: "^whsec_[A-Za-z0-9+/]+=*$",
			Description: "The signing secret: `whsec_` and the base64 of a 32-byte key. Keep it: no other answer shows it.",
			Examples:    []any{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}))...)
	created.Description = "A webhook endpoint as its creation, or a rotation of its secret, answers: with its signing secret."
	rotate := openapi.Object(nil, openapi.Prop("grace_seconds", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(0.0),
		Maximum: openapi.Ptr(float64(MaxRotationGrace / time.Second)), Default: int(DefaultRotationGrace / time.Second),
		Description: "How long, in seconds, the previous secret keeps signing deliveries beside the new one (at most 7 days); 0 stops it at once."}))
	rotate.AdditionalProperties = openapi.Ptr(false)
	recovery := openapi.Object([]string{"since"},
		openapi.Prop("since", timestamp("The start of the range, included: no earlier than the events are kept, and not in the future.")),
		openapi.Prop("until", timestamp("The end of the range, excluded; after `since`. Default: now.")))
	recovery.AdditionalProperties = openapi.Ptr(false)
	recovery.Description = "The range of events to send again. Any other member is refused (400 `invalid_request`)."
	recovered := openapi.Object([]string{"queued", "next_since"},
		openapi.Prop("queued", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(0.0), Maximum: openapi.Ptr(float64(MaxRecover)),
			Description: "How many events were queued again for the endpoint (at most " + strconv.Itoa(MaxRecover) + ")."}),
		openapi.Prop("next_since", &openapi.Schema{Type: []string{"string", "null"}, Format: "date-time",
			Description: "Null when the whole range was queued. Else the range held more than one call queues: send the recovery again with this as `since` (and the same `until`); the events at exactly this time may come twice."}))
	rotate.Description = "A rotation of the signing secret. The body may be left out (the default grace). Any other member is refused (400 `invalid_request`)."
	noMore := openapi.Ptr(false)
	create := openapi.Object([]string{"url", "event_types"},
		openapi.Prop("url", url()), openapi.Prop("event_types", eventTypes()), openapi.Prop("branch_ids", branchIDs()),
		openapi.Prop("filter", filter()), openapi.Prop("rate_limit", rateLimit()))
	create.AdditionalProperties = noMore
	create.Description = "A new webhook endpoint. Any other member is refused (400 `invalid_create`)."
	update := openapi.Object(nil,
		openapi.Prop("url", url()), openapi.Prop("event_types", eventTypes()), openapi.Prop("branch_ids", branchIDs()),
		openapi.Prop("filter", filter()), openapi.Prop("rate_limit", rateLimit()), openapi.Prop("status", status()))
	update.AdditionalProperties = noMore
	update.Description = "The changes to a webhook endpoint: the members given. Every change grants the endpoint anew what the token reads. Any other member is refused (400 `invalid_update`)."

	attemptSchema := openapi.Object([]string{"at", "status_code", "error", "duration_ms"},
		openapi.Prop("at", timestamp("When the attempt started.")),
		openapi.Prop("status_code", &openapi.Schema{Type: []string{"integer", "null"}, Format: "int32", Description: "The HTTP status the endpoint answered; null when no answer came (a timeout, a refused connection)."}),
		openapi.Prop("error", &openapi.Schema{Type: []string{"string", "null"}, Description: "What went wrong; null when the attempt succeeded."}),
		openapi.Prop("duration_ms", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "How long the attempt took, in milliseconds."}))
	attemptSchema.Description = "One attempt of a delivery."
	deliverySchema := openapi.Object([]string{"id", "event_id", "event_type", "status", "attempts", "next_attempt_at", "created_at"},
		openapi.Prop("id", uuid("The delivery's id.")),
		openapi.Prop("event_id", uuid("The event's id, sent as `webhook-id`: the key a receiver deduplicates by.")),
		openapi.Prop("event_type", &openapi.Schema{Type: []string{"string", "null"}, Description: "The event's type; null once retention has removed the event."}),
		openapi.Prop("status", &openapi.Schema{Type: "string", Enum: []any{deliveryPending, deliveryDelivered, deliveryFailed},
			Description: "`pending`: to be sent, or sent again; `delivered`: an attempt got a 2xx; `failed`: the retries are spent."}),
		openapi.Prop("attempts", &openapi.Schema{Type: "array", Items: openapi.SchemaRef("WebhookAttempt"), Description: "Every attempt, oldest first, over every round of the delivery."}),
		openapi.Prop("next_attempt_at", &openapi.Schema{Type: []string{"string", "null"}, Format: "date-time", Description: "When the next attempt is due; null unless pending."}),
		openapi.Prop("created_at", timestamp("When the delivery was made for the event.")))
	deliverySchema.Description = "The delivery of one event to one endpoint."

	envelope := func(data *openapi.Schema, description string) *openapi.Schema {
		s := openapi.Object([]string{"data", "version"}, openapi.Prop("data", data), oaVersion())
		s.Description = description
		return s
	}
	endpointList := openapi.Object([]string{"data", "pagination", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef("WebhookEndpoint")}),
		openapi.Prop("pagination", openapi.Object([]string{"limit", "offset", "total", "next_cursor"},
			openapi.Prop("limit", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Description: "The page size used."}),
			openapi.Prop("offset", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of endpoints skipped."}),
			openapi.Prop("total", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of endpoints of the organization."}),
			openapi.Prop("next_cursor", &openapi.Schema{Type: "null", Description: "Always null: an organization has few endpoints, paged by `offset`."}))),
		oaVersion())
	endpointList.Description = "The endpoints of the organization, oldest first."
	deliveryList := openapi.Object([]string{"data", "pagination", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef("WebhookDelivery")}),
		openapi.Prop("pagination", openapi.Object([]string{"limit", "next_cursor"},
			openapi.Prop("limit", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Description: "The page size used."}),
			openapi.Prop("next_cursor", &openapi.Schema{Type: []string{"string", "null"}, Description: "The cursor of the next page, to send as `after` with the same `status`; null on the last page."}))),
		oaVersion())
	deliveryList.Description = "A page of the deliveries of an endpoint, newest first."
	return map[string]*openapi.Schema{
		"Error":                          openapi.ErrorSchema(),
		"WebhookEndpoint":                endpointSchema,
		"WebhookEndpointCreated":         created,
		"WebhookEndpointCreate":          create,
		"WebhookEndpointUpdate":          update,
		"WebhookSecretRotation":          rotate,
		"WebhookRecovery":                recovery,
		"WebhookRecoveryEnvelope":        envelope(recovered, "What a recovery queued."),
		"WebhookAttempt":                 attemptSchema,
		"WebhookDelivery":                deliverySchema,
		"WebhookEndpointEnvelope":        envelope(openapi.SchemaRef("WebhookEndpoint"), "A webhook endpoint."),
		"WebhookEndpointCreatedEnvelope": envelope(openapi.SchemaRef("WebhookEndpointCreated"), "A new webhook endpoint, with its secret."),
		"WebhookEndpointListEnvelope":    endpointList,
		"WebhookDeliveryEnvelope":        envelope(openapi.SchemaRef("WebhookDelivery"), "A delivery."),
		"WebhookDeliveryListEnvelope":    deliveryList,
	}
}

func oaVersion() openapi.Property {
	return openapi.Prop("version", &openapi.Schema{Type: "string", Const: apiVersion, Description: "The API version."})
}

func oaErr(code, description string) openapi.ErrorExample {
	return openapi.ErrorExample{Code: code, Description: description}
}

// oaUnauthorized is the response component "Unauthorized", as the resource
// document has it.
func oaUnauthorized() *openapi.Response {
	return openapi.WithHeaders(openapi.ErrorResponse("`unauthorized`: no `Authorization: Bearer` token.\n\n"+
		"`invalid_token`: a token that is malformed, badly signed, expired, revoked, for another audience or issuer, or not signed by a current key with its algorithm.\n\n"+
		"Both carry a `WWW-Authenticate: Bearer` challenge (RFC 6750).",
		oaErr(apierrors.CodeUnauthorized, "an Authorization: Bearer token is required"),
		oaErr(apierrors.CodeInvalidToken, "the token has expired")), "WWW-Authenticate")
}

func oaSecurity(scope string) []openapi.SecurityRequirement {
	return []openapi.SecurityRequirement{{oaSchemeOAuth2: {scope}}}
}

func oaNeedsScope(scope string) string {
	return "Needs the scope `" + scope + "` (write does not imply read)."
}

func oaSuccess(description, envelope string, headers map[string]*openapi.Header) *openapi.Response {
	r := &openapi.Response{Description: description, Headers: headers, Content: openapi.JSON(openapi.SchemaRef(envelope))}
	return openapi.WithHeaders(r, "RateLimit-Policy", "RateLimit")
}

// oaForbidden is the 403 of an operation that needs scope; more describes
// the other refusals of the operation.
func oaForbidden(scope, more string) *openapi.Response {
	d := "`invalid_token_type`: a product user token (one without `oauth_client_id`); the API takes OAuth access tokens.\n\n" +
		"`insufficient_scope`: the token lacks `" + scope + "`" + more + ". Its `WWW-Authenticate` challenge names the missing scope."
	resp := openapi.ErrorResponse(d,
		oaErr(apierrors.CodeInvalidTokenType, "the API takes OAuth access tokens, not product user tokens"),
		oaErr(apierrors.CodeInsufficientScope, "the token lacks the scope "+scope))
	resp.Headers = map[string]*openapi.Header{"WWW-Authenticate": openapi.HeaderRef("ScopeChallenge")}
	return resp
}

// oaReachRefusal is the 403 of a change or redelivery by a token that may
// not read everything the endpoint gets.
const oaReachRefusal = "; or the endpoint gets the events of a resource whose read scope the token lacks (the description and the challenge name the missing scopes)"

// oaCutOffConflict is the 409 of a change or redelivery of an endpoint
// disabled by the disconnection of its app; before says what else is 409,
// example is the example's description.
func oaCutOffConflict(before, example string) *openapi.Response {
	return openapi.ErrorResponse("`conflict`: "+before+"the endpoint was disabled when the app under whose authority it acted was disconnected from the organization: "+
		"only a token of that app issued after it is connected again may change it, enable it or send its deliveries again. Any app may delete it.",
		oaErr(apierrors.CodeConflict, example))
}

// oaGrantRefusals are the 403s of a write that sets the grant.
const oaGrantRefusals = "; or an event type names a resource whose read scope the token lacks (`*` needs at least one read scope); " +
	"or a client-credentials token names a branch it may not use in `branch_ids`, or gives none (every branch) while it does not cover every branch of the organization"

func oaNotFound(what string) *openapi.Response {
	d := "`not_found`: `{organizationId}` is not the token's organization"
	if what != "" {
		d += "; or " + what
	}
	d += ". Another organization's ids are answered the same way, so no answer reveals whether they exist."
	return openapi.ErrorResponse(d, oaErr(apierrors.CodeNotFound, "no webhook endpoint with this id"))
}

// oaIdempotent adds to op what a write with an Idempotency-Key has: the
// parameter, the Idempotent-Replayed header of its success, 409 and 422.
func (a *API) oaIdempotent(op *openapi.Operation, success string) *openapi.Operation {
	op.Parameters = append(op.Parameters, openapi.IdempotencyKeyParameter(idempotency.MaxKeyLen, a.idempotencyStore().TTLOrDefault()))
	ok := op.Responses[success]
	if ok.Headers == nil {
		ok.Headers = map[string]*openapi.Header{}
	}
	ok.Headers["Idempotent-Replayed"] = openapi.HeaderRef("Idempotent-Replayed")
	if _, has := op.Responses["409"]; has {
		// A 409 of its own: the one response says both.
		conflict := op.Responses["409"]
		conflict.Description += "\n\n" + openapi.IdempotencyInProgressResponse().Description
		conflict.Content["application/json"].Examples[apierrors.CodeIdempotencyInProgress] = openapi.IdempotencyInProgressResponse().Content["application/json"].Examples[apierrors.CodeIdempotencyInProgress]
	} else {
		op.Responses["409"] = openapi.ResponseRef("IdempotencyInProgress")
	}
	op.Responses["422"] = openapi.ResponseRef("IdempotencyKeyReused")
	return op
}

// oaCommon adds the responses every operation shares to responses.
func oaCommon(responses map[string]*openapi.Response) map[string]*openapi.Response {
	responses["401"] = openapi.ResponseRef("Unauthorized")
	responses["429"] = openapi.ResponseRef("RateLimited")
	responses["500"] = openapi.ResponseRef("ServerError")
	responses["503"] = openapi.ResponseRef("Unavailable")
	return responses
}

// oaBodyErrors are the 400 of a POST (create) or PATCH body.
func oaBodyErrors(create bool) *openapi.Response {
	code, example := apierrors.CodeInvalidUpdate, "status must be \"enabled\" or \"disabled\""
	if create {
		code, example = apierrors.CodeInvalidCreate, "url: the URL's host is a loopback address (127.0.0.1)"
	}
	return openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`, or a body that is not one JSON object.\n\n"+
		"`"+code+"`: a member the operation does not take, a value of the wrong type, a URL the server refuses (the description says why), "+
		"an event type that is none of the resources', no event types or more than "+strconv.Itoa(MaxEventTypes)+", "+
		"`branch_ids` that are empty or not branches of the organization, "+
		"a `filter` condition that does not parse, names a field not every subscribed resource has (or of two types), an operator the field does not allow or a value not of its type "+
		"(checked again when `event_types` change), or a `rate_limit` that is not a whole number from 1 to "+strconv.Itoa(MaxRateLimit)+". Nothing is changed.",
		oaErr(apierrors.CodeInvalidRequest, "the body must be one JSON object"),
		oaErr(code, example))
}

func oaBody(description, schema string) *openapi.RequestBody {
	return &openapi.RequestBody{
		Description: description + ": one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, sent with `Content-Type: application/json`.",
		Required:    true,
		Content:     openapi.JSON(openapi.SchemaRef(schema)),
	}
}

func oaQuery(name, description string, s *openapi.Schema) *openapi.Parameter {
	return &openapi.Parameter{Name: name, In: "query", Description: description, Schema: s}
}

func (a *API) oaList() *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{oaTag}, Summary: "List webhook endpoints", OperationID: "listWebhookEndpoints",
		Description: "Lists the webhook endpoints of the organization, oldest first, without their secrets. An organization has at most " +
			strconv.Itoa(a.maxEndpoints()) + ", so one page holds them all.\n\n" + oaNeedsScope(ScopeRead),
		Parameters: []*openapi.Parameter{
			oaQuery("limit", "The page size.", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(maxEndpointLimit)), Default: maxEndpointLimit}),
			oaQuery("offset", "The number of endpoints to skip.", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Default: 0}),
		},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("The endpoints.", "WebhookEndpointListEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: a `limit` or `offset` out of range, or an unknown parameter.",
				oaErr(apierrors.CodeInvalidRequest, "limit must be an integer from 1 to 100")),
			"403": oaForbidden(ScopeRead, ""),
			"404": oaNotFound(""),
		}),
		Security: oaSecurity(ScopeRead),
	}
}

func (a *API) oaCreate() *openapi.Operation {
	return a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Register a webhook endpoint", OperationID: "createWebhookEndpoint",
		Description: strings.Join([]string{
			"Registers an endpoint and answers with it, its `Location` and, this once, its signing `secret`. It gets the events committed from now on whose type matches `event_types`, of `branch_ids` (absent or null: every branch).",
			"The endpoint is granted what the token reads: the resources whose read scope it has and, for a client-credentials token, its branches; it never gets other events.",
			"An organization has at most " + strconv.Itoa(a.maxEndpoints()) + " endpoints; 409 `conflict` beyond.",
			oaNeedsScope(ScopeWrite),
		}, "\n\n"),
		RequestBody: oaBody("The new endpoint", "WebhookEndpointCreate"),
		Responses: oaCommon(map[string]*openapi.Response{
			"201": oaSuccess("The new endpoint with its secret. `Cache-Control: no-store`. A replay of its `Idempotency-Key` shows the secret again.", "WebhookEndpointCreatedEnvelope", map[string]*openapi.Header{
				"Location":      {Description: "The path of the new endpoint: the request's path, then `/` and the new id.", Schema: &openapi.Schema{Type: "string", Format: "uri-reference"}, Required: true},
				"Cache-Control": openapi.HeaderRef("Cache-Control"),
				"ETag":          openapi.HeaderRef("ETag"),
			}),
			"400": oaBodyErrors(true),
			"403": oaForbidden(ScopeWrite, oaGrantRefusals),
			"404": oaNotFound(""),
			"409": openapi.ErrorResponse("`conflict`: the organization has as many endpoints as it may; delete one first.",
				oaErr(apierrors.CodeConflict, "the organization has 50 webhook endpoints, the most it may have; delete one first")),
			"413": openapi.ResponseRef("WebhookPayloadTooLarge"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "201")
}

func oaGet() *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{oaTag}, Summary: "Get a webhook endpoint", OperationID: "getWebhookEndpoint",
		Description: "Returns a webhook endpoint by id, without its secret.\n\n" + oaNeedsScope(ScopeRead),
		Parameters:  []*openapi.Parameter{openapi.IfNoneMatchParameter()},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("The endpoint.", "WebhookEndpointEnvelope", map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")}),
			"304": openapi.NotModifiedResponse(),
			"403": oaForbidden(ScopeRead, ""),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
		}),
		Security: oaSecurity(ScopeRead),
	}
}

func (a *API) oaUpdate() *openapi.Operation {
	return a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Update a webhook endpoint", OperationID: "updateWebhookEndpoint",
		Description: strings.Join([]string{
			"Changes the members the body names and answers with the endpoint as it is now, without its secret. An empty object changes nothing.",
			"The token must be able to read everything the endpoint gets after the change: the read scope of every resource whose events it gets, and, for a client-credentials token, its `branch_ids` (or every branch). " +
				"Every change, even of the `url` or `status` alone, then grants the endpoint anew what this token reads (its resources and, for a client-credentials token, its branches) and makes this token's app its `client_id`: " +
				"the endpoint acts under that app's authority, and disconnecting that app disables it. `status: enabled` clears `disabled_reason`.",
			"An endpoint disabled because its app was disconnected from the organization may be changed or enabled only by that app, connected again (409 `conflict` for any other token).",
			oaNeedsScope(ScopeWrite),
		}, "\n\n"),
		RequestBody: oaBody("The changes", "WebhookEndpointUpdate"),
		Parameters:  []*openapi.Parameter{openapi.IfMatchParameter(false)},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("The endpoint after the change.", "WebhookEndpointEnvelope", map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")}),
			"412": openapi.PreconditionFailedResponse(openapi.SchemaRef("WebhookEndpoint"), apiVersion),
			"400": oaBodyErrors(false),
			"403": oaForbidden(ScopeWrite, oaGrantRefusals+oaReachRefusal),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
			"409": oaCutOffConflict("", "the endpoint was disabled when the app sync-app, under whose authority it acted, was disconnected from the organization; "+
				"only that app, with a token issued after it is connected again, may change or enable it or send its deliveries again. Delete it, or register an endpoint of your own"),
			"413": openapi.ResponseRef("WebhookPayloadTooLarge"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "200")
}

func oaDelete() *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{oaTag}, Summary: "Delete a webhook endpoint", OperationID: "deleteWebhookEndpoint",
		Description: "Deletes the endpoint with its deliveries and their attempts, and answers with the endpoint as it was. It hands no one anything, so it needs no read scope; " +
			"a client-credentials token limited to some branches deletes only the endpoints of its branches.\n\n" + oaNeedsScope(ScopeWrite),
		Parameters: []*openapi.Parameter{openapi.IfMatchParameter(false)},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("The deleted endpoint.", "WebhookEndpointEnvelope", map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")}),
			"412": openapi.PreconditionFailedResponse(openapi.SchemaRef("WebhookEndpoint"), apiVersion),
			"403": oaForbidden(ScopeWrite, ""),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
		}),
		Security: oaSecurity(ScopeWrite),
	}
}

func oaListDeliveries() *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{oaTag}, Summary: "List the deliveries of a webhook endpoint", OperationID: "listWebhookDeliveries",
		Description: "Lists the deliveries of the endpoint, newest first, each with every attempt made. Follow `pagination.next_cursor` (or the `Link` header) with `after` for the next page.\n\n" + oaNeedsScope(ScopeRead),
		Parameters: []*openapi.Parameter{
			oaQuery("limit", "The page size.", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(maxDeliveryLimit)), Default: defaultDeliveryLimit}),
			oaQuery("after", "The `next_cursor` of the page before; the page starts after it. It holds the `status` filter of its list, which must be given again.", &openapi.Schema{Type: "string"}),
			oaQuery("status", "Only the deliveries of this status.", &openapi.Schema{Type: "string", Enum: []any{deliveryPending, deliveryDelivered, deliveryFailed}}),
		},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("A page of deliveries.", "WebhookDeliveryListEnvelope", map[string]*openapi.Header{
				"Link": {Description: "The next page, when there is one (RFC 8288): `<path?...&after=cursor>; rel=\"next\"`.", Schema: &openapi.Schema{Type: "string"}},
			}),
			"400": openapi.ErrorResponse("`invalid_request`: a `limit` out of range, an unknown `status`, an `after` that is not a cursor of this list (or of another `status`), or an unknown parameter.",
				oaErr(apierrors.CodeInvalidRequest, "after is not a cursor of this list: give the next_cursor of the page before, with the same status filter")),
			"403": oaForbidden(ScopeRead, ""),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
		}),
		Security: oaSecurity(ScopeRead),
	}
}

func (a *API) oaRedeliver() *openapi.Operation {
	return a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Send a delivery again", OperationID: "redeliverWebhookDelivery",
		Description: "Makes the delivery pending and due now, with a new round of retries, and answers with it; the attempts made so far stay in its history. " +
			"The event is sent again with the same `webhook-id`. The token must be able to read everything the endpoint gets; the endpoint keeps its grant and `client_id`.\n\n" + oaNeedsScope(ScopeWrite),
		Responses: oaCommon(map[string]*openapi.Response{
			"202": oaSuccess("The delivery, pending.", "WebhookDeliveryEnvelope", nil),
			"403": oaForbidden(ScopeWrite, oaReachRefusal),
			"404": oaNotFound("`id` or `delivery_id` is not a UUID, or names no endpoint of the organization or no delivery of the endpoint"),
			"409": oaCutOffConflict("retention has removed the delivery's event, so it cannot be sent again; or ",
				"the event of this delivery is no longer kept (retention removed it), so it cannot be sent again"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "202")
}

func (a *API) oaRotateSecret() *openapi.Operation {
	op := a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Rotate the signing secret of a webhook endpoint", OperationID: "rotateWebhookSecret",
		Description: strings.Join([]string{
			"Gives the endpoint a new signing secret and answers with the endpoint and, this once, the new `secret`. " +
				"For `grace_seconds` (default 86400, a day; 0 to 604800) every delivery is signed with both secrets: `webhook-signature: v1,<new> v1,<old>`, which a Standard Webhooks receiver accepts with either; " +
				"then the previous secret is forgotten (`previous_secret_expires_at` says when). A rotation during the grace of another replaces the previous secret with the one it rotates out.",
			"A rotation is a change of the endpoint, under the rules of an update: the token must be able to read everything the endpoint gets, and the endpoint is then granted anew what this token reads and acts under its app (`client_id`).",
			oaNeedsScope(ScopeWrite),
		}, "\n\n"),
		RequestBody: &openapi.RequestBody{Description: "The grace: one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, sent with `Content-Type: application/json`; may be left out.",
			Content: openapi.JSON(openapi.SchemaRef("WebhookSecretRotation"))},
		Parameters: []*openapi.Parameter{openapi.IfMatchParameter(false)},
		Responses: oaCommon(map[string]*openapi.Response{
			"200": oaSuccess("The endpoint with its new secret. `Cache-Control: no-store`. A replay of its `Idempotency-Key` shows the endpoint's current secret.", "WebhookEndpointCreatedEnvelope", map[string]*openapi.Header{
				"Cache-Control": openapi.HeaderRef("Cache-Control"),
				"ETag":          openapi.HeaderRef("ETag"),
			}),
			"400": openapi.ErrorResponse("`invalid_request`: a body that is not one JSON object, a member other than `grace_seconds`, or a `grace_seconds` that is not an integer from 0 to 604800.",
				oaErr(apierrors.CodeInvalidRequest, "grace_seconds must be an integer from 0 to 604800 (7 days): how long the previous secret keeps signing deliveries")),
			"403": oaForbidden(ScopeWrite, oaReachRefusal),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
			"409": oaCutOffConflict("", "the endpoint was disabled when the app sync-app, under whose authority it acted, was disconnected from the organization; "+
				"only that app, with a token issued after it is connected again, may change or enable it or send its deliveries again. Delete it, or register an endpoint of your own"),
			"412": openapi.PreconditionFailedResponse(openapi.SchemaRef("WebhookEndpoint"), apiVersion),
			"413": openapi.ResponseRef("WebhookPayloadTooLarge"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "200")
	return op
}

func (a *API) oaTest() *openapi.Operation {
	return a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Send a test event to a webhook endpoint", OperationID: "testWebhookEndpoint",
		Description: strings.Join([]string{
			"Queues a `" + TestEventType + "` event for this endpoint alone and answers with its delivery, pending; it leaves at once, signed like every delivery. " +
				"The event is a CloudEvent like the others (structured mode): `source` is the endpoint's path, `subject` its id, and `data.record` the endpoint as the API shows it (no secret), with `data.changed` empty. " +
				"It is listed in the endpoint's deliveries (`event_type` `" + TestEventType + "`) and is not in the organization's feed. It gets one attempt, whose failure never disables the endpoint; send it again with `redeliver`, or send another test.",
			"The body may be left out; it may only be `{}`. A disabled endpoint cannot be tested (409 `conflict`): enable it first.",
			oaNeedsScope(ScopeWrite),
		}, "\n\n"),
		Responses: oaCommon(map[string]*openapi.Response{
			"202": oaSuccess("The test's delivery, pending.", "WebhookDeliveryEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: a body that is not one empty JSON object.",
				oaErr(apierrors.CodeInvalidRequest, "the body must be one JSON object")),
			"403": oaForbidden(ScopeWrite, ""),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
			"409": openapi.ErrorResponse("`conflict`: the endpoint is disabled.",
				oaErr(apierrors.CodeConflict, "the endpoint is disabled; enable it (PATCH status enabled), then send a test")),
			"413": openapi.ResponseRef("WebhookPayloadTooLarge"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "202")
}

func (a *API) oaRecover() *openapi.Operation {
	return a.oaIdempotent(&openapi.Operation{
		Tags: []string{oaTag}, Summary: "Send the events of a time range again to a webhook endpoint", OperationID: "recoverWebhookEvents",
		Description: strings.Join([]string{
			"Queues again, for this endpoint alone, every event still kept whose time is in [`since`, `until`) and that the endpoint would have got: its event types and branches, what its grant allows, after its creation — " +
				"including the events of a time it was disabled. A delivery that ended (delivered or failed) becomes pending with a new round of retries; a pending one is left as it is; a missing one is made. " +
				"They are sent in the order of the events, each after the earlier events of its record, the endpoint's live deliveries included; each carries its event's id as `webhook-id`, as the first time.",
			"One call queues at most " + strconv.Itoa(MaxRecover) + " events (and reads at most " + strconv.Itoa(maxRecoverScan) + " of the range): when the range holds more, `next_since` says where the next call starts.",
			"A disabled endpoint may be recovered: its deliveries wait until it is enabled. The token must be able to read everything the endpoint gets, as for a redelivery; the endpoint keeps its grant.",
			oaNeedsScope(ScopeWrite),
		}, "\n\n"),
		RequestBody: oaBody("The range", "WebhookRecovery"),
		Responses: oaCommon(map[string]*openapi.Response{
			"202": oaSuccess("What was queued.", "WebhookRecoveryEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: a body that is not one JSON object, a member other than `since` and `until`, no `since`, a time that is not RFC 3339, "+
				"`since` in the future, `until` not after `since`, or `since` older than the events are kept. Nothing is queued.",
				oaErr(apierrors.CodeInvalidRequest, "until must be after since: the events sent again are those from since (included) to until (excluded)")),
			"403": oaForbidden(ScopeWrite, oaReachRefusal),
			"404": oaNotFound("`id` is not a UUID, or names no endpoint of the organization"),
			"409": oaCutOffConflict("", "the endpoint was disabled when the app sync-app, under whose authority it acted, was disconnected from the organization; "+
				"only that app, with a token issued after it is connected again, may change or enable it or send its deliveries again. Delete it, or register an endpoint of your own"),
			"413": openapi.ResponseRef("WebhookPayloadTooLarge"),
		}),
		Security: oaSecurity(ScopeWrite),
	}, "202")
}
