package resource

import (
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/tenancy"
)

// This file describes the responses of the resource operations: the
// success envelopes and the errors each can answer with.

func oaErr(code, description string) openapi.ErrorExample {
	return openapi.ErrorExample{Code: code, Description: description}
}

// oaHeaders are the header components of the document: those every
// Waybill endpoint shares, and Location.
func oaHeaders() map[string]*openapi.Header {
	h := openapi.Headers()
	h["Location"] = &openapi.Header{
		Description: "The path of the new record: the request's path, then `/` and the new id.",
		Schema:      &openapi.Schema{Type: "string", Format: "uri-reference"}, Required: true,
	}
	oaSyncHeaders(h)
	return h
}

func oaSuccess(description, envelope string, headers map[string]*openapi.Header) *openapi.Response {
	r := &openapi.Response{Description: description, Headers: headers, Content: openapi.JSON(openapi.SchemaRef(envelope))}
	return openapi.WithHeaders(r, "RateLimit-Policy", "RateLimit")
}

func oaUnauthorized() *openapi.Response {
	return openapi.WithHeaders(openapi.ErrorResponse("`unauthorized`: no `Authorization: Bearer` token.\n\n"+
		"`invalid_token`: a token that is malformed, badly signed, expired, revoked, for another audience or issuer, or not signed by a current key with its algorithm.\n\n"+
		"Both carry a `WWW-Authenticate: Bearer` challenge (RFC 6750).",
		oaErr(apierrors.CodeUnauthorized, "an Authorization: Bearer token is required"),
		oaErr(apierrors.CodeInvalidToken, "the token has expired")), "WWW-Authenticate")
}

func oaForbidden(r *Resource, scope string, a oaAccess) *openapi.Response {
	d := "`invalid_token_type`: a product user token (one without `oauth_client_id`); the API takes OAuth access tokens.\n\n" +
		"`insufficient_scope`: the token lacks `" + scope + "`"
	if r.ScopeType != tenancy.Organization {
		d += ", or is a client-credentials token whose `oauth_branch_ids` do not list the branch `{scopeId}`"
	}
	if a != oaRead && r.ScopeType == tenancy.Organization {
		d += ", or is a client-credentials token whose `oauth_branch_ids` do not cover every branch of the organization: organization-wide data is changed only by a token that covers every branch"
	}
	if a == oaChange && r.ScopeType == tenancy.BranchOrNull {
		d += ", or the record is organization-wide (`branch_id` null) and the token does not cover every branch of the organization"
	}
	d += ". Its `WWW-Authenticate` challenge names the missing scope."
	resp := openapi.ErrorResponse(d,
		oaErr(apierrors.CodeInvalidTokenType, "the API takes OAuth access tokens, not product user tokens"),
		oaErr(apierrors.CodeInsufficientScope, "the token lacks the scope "+scope))
	resp.Headers = map[string]*openapi.Header{"WWW-Authenticate": openapi.HeaderRef("ScopeChallenge")}
	return resp
}

func oaNotFound(item bool, n oaNames) *openapi.Response {
	d := "`not_found`: `{scopeId}` is not a UUID, or names no organization or branch of the token's organization"
	if item {
		d += "; or `id` is not a UUID, or names no record that `{scopeId}` sees"
	}
	d += ". Another tenant's ids are answered the same way, so no answer reveals whether they exist."
	desc := "no such organization or branch"
	if item {
		desc = "no " + n.single + " with this id"
	}
	return openapi.ErrorResponse(d, oaErr(apierrors.CodeNotFound, desc))
}
