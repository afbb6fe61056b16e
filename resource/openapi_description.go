package resource

import (
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// This file writes info.description: what every API of a Registry shares.

func (b *openAPIBuilder) description() string {
	var d strings.Builder
	if b.info.Description != "" {
		d.WriteString(b.info.Description)
	} else {
		d.WriteString("A multi-tenant REST API protected by OAuth 2.1. Every resource lives inside an organization, many inside one of its branches; the `{scopeId}` of each path says which.")
	}
	prefixes := b.g.prefixes()
	if len(prefixes) > 0 && len(b.g.resources) > 0 {
		p := prefixes[0]
		d.WriteString("\n\n## Paths\n\nEvery resource is served at `" + p + "/{scopeId}/{resource}` (list, create) and `" + p + "/{scopeId}/{resource}/{id}` (get, update, delete). ")
		for _, alias := range prefixes[1:] {
			d.WriteString("`" + alias + "` is an alias of every `" + p + "` path of the resources: `" + alias + "/{scopeId}/{resource}` is the same route as `" + p + "/{scopeId}/{resource}`, with the same behaviour. ")
		}
		if len(prefixes) > 1 {
			d.WriteString("This document lists the `" + p + "` paths only. ")
		}
		d.WriteString("Methods a resource path does not list answer 405 `method_not_allowed` with an `Allow` header.")

		d.WriteString("\n\n## Tenancy\n\nEvery record carries `organization_id`, and branch-scoped records `branch_id`. The server sets and enforces both: a client can never send them (400 `invalid_create` / `invalid_update`), filter on them or sort on them (400 `invalid_request`). What `{scopeId}` names depends on the resource:\n\n")
		d.WriteString("| scope type | `{scopeId}` | resources |\n|---|---|---|\n")
		for _, t := range []tenancy.ScopeType{tenancy.Organization, tenancy.Branch, tenancy.BranchOrNull} {
			var rs []string
			for _, r := range b.g.resources {
				if r.ScopeType == t {
					rs = append(rs, r.Name)
				}
			}
			if len(rs) == 0 {
				continue
			}
			what := map[tenancy.ScopeType]string{
				tenancy.Organization: "the token's organization; creating, changing and deleting need a token that covers every branch",
				tenancy.Branch:       "a branch of the token's organization (for a client-credentials token, one of its `oauth_branch_ids`)",
				tenancy.BranchOrNull: "as branch; lists and gets also return the organization-wide records (`branch_id` null), and changing those needs a token that covers every branch",
			}[t]
			d.WriteString("| " + t.String() + " | " + what + " | " + strings.Join(rs, ", ") + " |\n")
		}
		d.WriteString("\nA `{scopeId}` or record id that is not a UUID, does not exist, or belongs to another organization gives 404 `not_found`: no answer reveals whether another tenant's id exists. A branch of the token's organization that the token may not use gives 403 `insufficient_scope`.")

		d.WriteString("\n\n## Requests and responses\n\nEvery call carries `Authorization: Bearer <access token>` (see the OAuth operations) with the scope the operation names: `svc:<resource>:read` for GET, `svc:<resource>:write` for POST, PATCH and DELETE; write does not imply read. ")
		d.WriteString("POST and PATCH take `Content-Type: application/json` and one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes (1 MiB; more gives 413 `payload_too_large`). ")
		d.WriteString("A list answers `{\"data\": [...], \"pagination\": {\"limit\", \"offset\", \"total\"}, \"version\": \"" + Version + "\"}`; every other success `{\"data\": {...}, \"version\": \"" + Version + "\"}`, DELETE with the deleted record. Timestamps are RFC 3339 in UTC; dates `YYYY-MM-DD`; numbers are doubles (`format: double`) and integers 64-bit unless their schema says `int32`.")
		d.WriteString("\n\nA GET of a list or of a record takes `fields`, and answers records of the resource's `...Partial` schema: every field without `fields`, and with it `id` and the fields named, so only `id` is required there. A create, update or delete answers the whole record, whose schema requires every field.")
		d.WriteString("\n\nLists take `limit` (default " + strconv.Itoa(query.DefaultLimit) + ", at most " + strconv.Itoa(query.MaxLimit) + " unless a resource says less), `offset`, `sort` (`field:asc|desc`, `id` always appended as the last key; default `created_at:desc` unless a resource says otherwise) and `filter` (`field:operator:value`, repeatable, ANDed); any other parameter gives 400 `invalid_request`, so that a filter is never dropped silently.")
	}

	d.WriteString("\n\n## Errors\n\nEvery error has the body `{\"error\": \"<code>\", \"error_description\": \"<text>\"}`:\n\n| code | status |\n|---|---|\n")
	for _, code := range []string{
		apierrors.CodeInvalidRequest, apierrors.CodeInvalidCreate, apierrors.CodeCreateFailed, apierrors.CodeInvalidUpdate,
		apierrors.CodeUnauthorized, apierrors.CodeInvalidToken, apierrors.CodeInvalidTokenType, apierrors.CodeInsufficientScope,
		apierrors.CodeNotFound, apierrors.CodeMethodNotAllowed, apierrors.CodeConflict, apierrors.CodePayloadTooLarge,
		apierrors.CodeRateLimited, apierrors.CodeServerError, apierrors.CodeUnavailable,
		apierrors.CodeInvalidClient, apierrors.CodeInvalidGrant, apierrors.CodeUnsupportedGrantType, apierrors.CodeInvalidScope,
		apierrors.CodeInvalidTarget,
	} {
		d.WriteString("| `" + code + "` | " + strconv.Itoa(apierrors.Status(code)) + " |\n")
	}
	d.WriteString("\n## Rate limits\n\nA rate-limited route answers 429 `rate_limited` over its limit, with `Retry-After` in whole seconds. Every response of such a route carries the headers of draft-ietf-httpapi-ratelimit-headers-11: `RateLimit-Policy: \"<name>\";q=<quota>;w=<window seconds>` and `RateLimit: \"<name>\";r=<remaining>;t=<seconds until capacity returns>`. A fresh key may spend its whole quota at once and then earns it back evenly over the window.")
	return d.String()
}
