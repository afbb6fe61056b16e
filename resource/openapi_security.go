package resource

import (
	"maps"
	"strings"

	"github.com/waybillhq/waybill/openapi"
)

// This file describes how the operations authenticate: the security scheme
// of the OAuth access tokens and the registry's scopes.

// scopes are the scopes of the registry's resources, each in words.
func (b *openAPIBuilder) scopes() map[string]string {
	scopes := map[string]string{}
	for _, r := range b.g.resources {
		w := oaWords(r.Name)
		scopes[r.ReadScope()] = "Read " + w
		if !r.ReadOnly {
			scopes[r.WriteScope()] = "Create, update and delete " + w
		}
	}
	return scopes
}

// oaScopeRule is what the scopes of the registry allow, which the
// security scheme's description ends with.
const oaScopeRule = "`svc:<resource>:read` allows GET, `svc:<resource>:write` allows POST, PATCH and DELETE; write does not imply read."

// securitySchemes returns the security scheme "oauth2" of the registry's
// operations: a section's, when one declares it, with the registry's
// scopes added to its flows and its rule to its description; else one of
// TokenURL and AuthorizationURL.
func (b *openAPIBuilder) securitySchemes() map[string]*openapi.SecurityScheme {
	var scheme openapi.SecurityScheme
	if s := b.sectionScheme(); s != nil {
		scheme = *s
		scheme.Flows = &openapi.OAuthFlows{}
		if f := s.Flows.AuthorizationCode; f != nil {
			scheme.Flows.AuthorizationCode = b.withScopes(f)
		}
		if f := s.Flows.ClientCredentials; f != nil {
			scheme.Flows.ClientCredentials = b.withScopes(f)
		}
	} else {
		scheme = openapi.SecurityScheme{
			Type: "oauth2",
			Description: "OAuth 2.1 access tokens (JWTs: HS256, ES256 or EdDSA), sent as `Authorization: Bearer <token>`. " +
				"The authorization-code flow requires PKCE with S256 (`plain` is refused) and an exact redirect URI; its token sees every branch of the organization the user chose at consent. " +
				"A client-credentials token sees the branches its app lists (`oauth_branch_ids`).",
			Flows: &openapi.OAuthFlows{
				AuthorizationCode: b.withScopes(&openapi.OAuthFlow{AuthorizationURL: b.info.AuthorizationURL, TokenURL: b.info.TokenURL, RefreshURL: b.info.TokenURL}),
				ClientCredentials: b.withScopes(&openapi.OAuthFlow{TokenURL: b.info.TokenURL}),
			},
		}
	}
	scheme.Description = strings.TrimSpace(scheme.Description + " " + oaScopeRule)
	return map[string]*openapi.SecurityScheme{schemeOAuth2: &scheme}
}

// sectionScheme returns the oauth2 security scheme with flows that the
// first section to declare one declares, or nil.
func (b *openAPIBuilder) sectionScheme() *openapi.SecurityScheme {
	for _, sec := range b.info.Sections {
		if s := sec.Components.SecuritySchemes[schemeOAuth2]; s != nil && s.Type == "oauth2" && s.Flows != nil {
			return s
		}
	}
	return nil
}

// withScopes returns a copy of f whose scopes are its own and the
// registry's, in the registry's words where both name one.
func (b *openAPIBuilder) withScopes(f *openapi.OAuthFlow) *openapi.OAuthFlow {
	c := *f
	c.Scopes = maps.Clone(f.Scopes)
	if c.Scopes == nil {
		c.Scopes = map[string]string{}
	}
	maps.Copy(c.Scopes, b.scopes())
	return &c
}
