package oauth

import (
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// oaRegistrationPaths describes Dynamic Client Registration (RFC 7591) and
// its management (RFC 7592) in d.
func (s *Server) oaRegistrationPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	off := "`not_found`: the server does not offer dynamic client registration."
	common := func(notFound string) map[string]*openapi.Response {
		return map[string]*openapi.Response{
			"404": openapi.ErrorResponse(notFound, oaErr(apierrors.CodeNotFound, "this server does not offer dynamic client registration")),
			"413": shared("OAuthPayloadTooLarge", oaPayloadTooLarge),
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
			"503": shared("Unavailable", openapi.UnavailableResponse),
		}
	}
	invalidMetadata := openapi.ErrorResponse("`invalid_redirect_uri`: no redirect URI, more than 20, or one that is not `https`, `http` on a loopback host or a private-use scheme in reverse-domain form, or that has a fragment.\n\n"+
		"`invalid_client_metadata`: a body that is not one JSON object, a field of the wrong type, no `client_name`, a `token_endpoint_auth_method`, grant type, response type or scope the server does not offer.",
		oaErr(apierrors.CodeInvalidRedirectURI, `redirect URI "javascript:alert(1)" has the scheme "javascript"; a redirect URI must use https, http on a loopback host, or a private-use scheme in reverse-domain form such as com.example.app`),
		oaErr(apierrors.CodeInvalidClientMetadata, "grant_types may name authorization_code and refresh_token alone"))
	unauthorized := func(what string) *openapi.Response {
		return openapi.WithHeaders(openapi.ErrorResponse("`invalid_token`: "+what,
			oaErr(apierrors.CodeInvalidToken, "the registration access token is not valid for this client")), "WWW-Authenticate")
	}
	created := func(description string, status int) *openapi.Response {
		r := &openapi.Response{Description: description, Content: openapi.JSON(openapi.SchemaRef("ClientInformation"))}
		if status == 201 {
			r.Headers = map[string]*openapi.Header{"Location": {Description: "The registration client URI.", Required: true,
				Schema: &openapi.Schema{Type: "string", Format: "uri"}}}
		}
		return openapi.WithHeaders(r, "Cache-Control")
	}
	register := common(off)
	register["201"] = created("The registered client: its `client_id`, its `client_secret` (not for `none`) and its `registration_access_token`, shown this once, and its metadata as stored.", 201)
	register["400"] = invalidMetadata
	register["401"] = unauthorized("registration needs an initial access token, and the request has none, or one that is unknown or expired.")
	d.Paths[p.Register] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Register a client", OperationID: "registerClient",
		Description: "Dynamic Client Registration (RFC 7591). Depending on the server's setting, anyone may register, or only the holders of an initial access token (`Authorization: Bearer`); when registration is off the endpoint answers 404. " +
			"A registered client belongs to no organization: it gets the authorization-code grant (with PKCE) and refresh only, and each user who approves it chooses the organization. " +
			"Metadata the server does not use is ignored and not stored. Rate limited per remote address.",
		RequestBody: &openapi.RequestBody{Description: "The client's metadata.", Required: true, Content: openapi.JSON(openapi.SchemaRef("ClientMetadata"))},
		Responses:   register,
		Security:    []openapi.SecurityRequirement{{oaSchemeRegistration: {}}, {}},
	}}

	manage := func() map[string]*openapi.Response {
		r := common(off)
		r["401"] = unauthorized("no registration access token, a wrong one, or a client that does not exist or did not register itself: all alike.")
		return r
	}
	read := manage()
	read["200"] = created("The client's registration as stored; its secret and registration access token are kept as hashes and not shown again.", 200)
	update := manage()
	update["200"] = created("The client's registration as updated.", 200)
	update["400"] = openapi.ErrorResponse(invalidMetadata.Description+"\n\n`invalid_request`: the body's `client_id` is not the client's. An update may not change `token_endpoint_auth_method` between `none` and a secret, and a `client_secret` in the body must be the client's (`invalid_client_metadata`).",
		oaErr(apierrors.CodeInvalidClientMetadata, "token_endpoint_auth_method may not change between none and a secret: register a new client instead"))
	del := manage()
	del["204"] = openapi.WithHeaders(&openapi.Response{Description: "Deleted: the client can no longer get tokens, and its refresh tokens and the access tokens issued from them are revoked."}, "Cache-Control")
	security := []openapi.SecurityRequirement{{oaSchemeRegistration: {}}}
	d.Paths[p.Register+"/{client_id}"] = &openapi.PathItem{
		Parameters: []*openapi.Parameter{{Name: "client_id", In: "path", Required: true, Description: "The registered client's id.", Schema: &openapi.Schema{Type: "string"}}},
		Get: &openapi.Operation{Tags: []string{tagOAuth}, Summary: "Read a client registration", OperationID: "readClientRegistration",
			Description: "RFC 7592 read, with the registration access token.", Responses: read, Security: security},
		Put: &openapi.Operation{Tags: []string{tagOAuth}, Summary: "Update a client registration", OperationID: "updateClientRegistration",
			Description: "RFC 7592 update, with the registration access token: the body's metadata replaces the client's (an omitted field takes its default). It must hold the client's `client_id`.",
			RequestBody: &openapi.RequestBody{Description: "The client's metadata, with its `client_id`.", Required: true, Content: openapi.JSON(openapi.SchemaRef("ClientMetadata"))},
			Responses:   update, Security: security},
		Delete: &openapi.Operation{Tags: []string{tagOAuth}, Summary: "Delete a client registration", OperationID: "deleteClientRegistration",
			Description: "RFC 7592 delete, with the registration access token.", Responses: del, Security: security},
	}
}

// oaRegistrationSchemas are the schema components of Dynamic Client
// Registration.
func oaRegistrationSchemas() map[string]*openapi.Schema {
	strs := func(description string, values ...any) *openapi.Schema {
		return &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Enum: values}, Description: description}
	}
	metadataProps := func() []openapi.Property {
		return []openapi.Property{
			openapi.Prop("client_name", &openapi.Schema{Type: "string", MinLength: openapi.Ptr(1), MaxLength: openapi.Ptr(200), Description: "The client's name, shown to users at consent; at most 200 bytes."}),
			openapi.Prop("redirect_uris", &openapi.Schema{Type: "array", MinItems: openapi.Ptr(1), MaxItems: openapi.Ptr(maxClientRedirectURIs),
				Items:       &openapi.Schema{Type: "string", Format: "uri"},
				Description: "The redirect URIs, matched exactly: `https://...`, `http://` on a loopback host (RFC 8252), or a private-use scheme in reverse-domain form (`com.example.app:/callback`); no fragment."}),
			openapi.Prop("token_endpoint_auth_method", &openapi.Schema{Type: "string", Enum: []any{"none", "client_secret_basic", "client_secret_post"},
				Description: "`none`: a public client, without a secret. Default `client_secret_basic`."}),
			openapi.Prop("grant_types", strs("`authorization_code` and `refresh_token`, which the client always gets.", "authorization_code", "refresh_token")),
			openapi.Prop("response_types", strs("`code`.", "code")),
			openapi.Prop("scope", openapi.String("The scopes the client may request, space-separated; each a scope of the server. Default: every scope of the server.")),
		}
	}
	request := openapi.Object([]string{"client_name", "redirect_uris"}, append(metadataProps(),
		openapi.Prop("client_id", openapi.String("An update's client id, which must be the client's; ignored at registration.")),
		openapi.Prop("client_secret", openapi.String("In an update, if given, the client's current secret; it cannot be changed.")))...)
	request.Description = "RFC 7591 client metadata. Other fields (`logo_uri`, `contacts`, `software_id`, ...) are accepted and ignored."

	info := openapi.Object([]string{"client_id", "client_id_issued_at", "registration_client_uri", "client_name", "redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types", "scope"},
		append([]openapi.Property{
			openapi.Prop("client_id", openapi.String("The client's id.")),
			openapi.Prop("client_secret", openapi.String("The client's secret, shown at registration alone; never for `none`.")),
			openapi.Prop("client_secret_expires_at", &openapi.Schema{Type: "integer", Format: "int64", Description: "0: the secret does not expire. Present with `client_secret`."}),
			openapi.Prop("client_id_issued_at", &openapi.Schema{Type: "integer", Format: "int64", Description: "When the client registered, in seconds since 1970."}),
			openapi.Prop("registration_access_token", openapi.String("The token that reads, updates and deletes this registration (RFC 7592), shown at registration alone.")),
			openapi.Prop("registration_client_uri", &openapi.Schema{Type: "string", Format: "uri", Description: "Where the registration is read, updated and deleted."}),
		}, metadataProps()...)...)
	info.Description = "RFC 7591 client information: the client's credentials and its metadata as stored."
	return map[string]*openapi.Schema{"ClientMetadata": request, "ClientInformation": info}
}
