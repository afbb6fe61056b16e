package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
)

// otherPaths puts every endpoint of the token service somewhere else than
// the defaults.
var otherPaths = oauth.Paths{
	Authorize: "/oauth2/authorize", Login: "/oauth2/login", Consent: "/oauth2/consent",
	Token: "/oauth2/token", UserToken: "/oauth2/user-token", Apps: "/oauth2/apps",
	Revoke: "/oauth2/revoke", Introspect: "/oauth2/introspect", Metadata: "/oauth2/.well-known/oauth-authorization-server",
	JWKS:                "/oauth2/.well-known/jwks.json",
	ConnectedApps:       "/oauth2/orgs/{organization_id}/apps",
	Register:            "/oauth2/register",
	AuditLog:            "/oauth2/orgs/{organization_id}/audit",
	OpenIDConfiguration: "/oauth2/.well-known/openid-configuration", UserInfo: "/oauth2/userinfo",
}

func TestPathsDefaults(t *testing.T) {
	p := oauth.Paths{Token: "/oauth2/token"}.WithDefaults()
	assert.Equal(t, "/oauth2/token", p.Token, "a path that is set stays")
	assert.Equal(t, oauth.Paths{
		Authorize: oauth.PathAuthorize, Login: oauth.PathLogin, Consent: oauth.PathConsent,
		Token: "/oauth2/token", UserToken: oauth.PathUserToken, Apps: oauth.PathApps,
		Revoke: oauth.PathRevoke, Introspect: oauth.PathIntrospect, Metadata: oauth.PathMetadata,
		JWKS:                oauth.PathJWKS,
		ConnectedApps:       oauth.PathConnectedApps,
		Register:            oauth.PathRegister,
		AuditLog:            oauth.PathAuditLog,
		OpenIDConfiguration: oauth.PathOpenIDConfiguration, UserInfo: oauth.PathUserInfo,
	}, p)
}

// The OpenAPI section describes the endpoints where Mount serves them, and
// states the Server's lifetimes.
func TestOpenAPISection(t *testing.T) {
	tests := []struct {
		name      string
		srv       *oauth.Server
		expiresIn int
		says      []string
	}{
		{"defaults", &oauth.Server{Issuer: testIssuer}, 3600,
			[]string{"valid 3600 s", "valid 60 s.", "valid 30 days.", "(at most an hour)"}},
		{"other paths and lifetimes", &oauth.Server{
			Issuer: testIssuer + "/", Paths: otherPaths,
			AccessTokenTTL: 15 * time.Minute, CodeTTL: 90 * time.Second, RefreshTokenTTL: 12 * time.Hour,
		}, 900, []string{"valid 900 s", "valid 90 s.", "valid 12 hours.", "(at most 15 minutes)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.srv.OpenAPI()
			p := tt.srv.Paths.WithDefaults()
			mux := http.NewServeMux()
			tt.srv.Mount(mux)
			documented := map[string]string{}
			for path, item := range doc.Paths {
				for i, op := range item.Operations() {
					if op == nil {
						continue
					}
					method := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}[i]
					documented[method+" "+path] = op.OperationID
					concrete := strings.NewReplacer("{client_id}", "c", "{organization_id}", "o").Replace(path)
					_, pattern := mux.Handler(httptest.NewRequest(method, concrete, nil))
					assert.Equal(t, method+" "+path, pattern, "Mount serves %s %s", method, path)
					assert.Equal(t, []string{"OAuth"}, op.Tags)
				}
			}
			assert.Equal(t, map[string]string{
				"POST " + p.Token: "requestToken", "POST " + p.UserToken: "signInUser", "POST " + p.Apps: "registerApp",
				"POST " + p.Apps + "/{client_id}/rotate-secret": "rotateAppSecret", "POST " + p.Revoke: "revokeToken",
				"POST " + p.Introspect: "introspectToken", "GET " + p.Metadata: "getAuthorizationServerMetadata",
				"GET " + p.Authorize: "authorize", "GET " + p.JWKS: "getJSONWebKeySet",
				"GET " + p.ConnectedApps:                     "listConnectedApps",
				"DELETE " + p.ConnectedApps + "/{client_id}": "disconnectApp",
				"GET " + p.AuditLog:                          "getAuditLog",
				"POST " + p.Register:                         "registerClient",
				"GET " + p.Register + "/{client_id}":         "readClientRegistration",
				"PUT " + p.Register + "/{client_id}":         "updateClientRegistration",
				"DELETE " + p.Register + "/{client_id}":      "deleteClientRegistration",
				"GET " + p.OpenIDConfiguration:               "getOpenIDConfiguration",
				"GET " + p.UserInfo:                          "getUserInfo", "POST " + p.UserInfo: "postUserInfo",
			}, documented, "every endpoint but the sign-in and consent pages")

			raw, err := openapi.Marshal(doc)
			require.NoError(t, err)
			var decoded map[string]any
			require.NoError(t, json.Unmarshal(raw, &decoded))
			expires := decoded["components"].(map[string]any)["schemas"].(map[string]any)["TokenResponse"].(map[string]any)["properties"].(map[string]any)["expires_in"].(map[string]any)
			assert.Equal(t, []any{float64(tt.expiresIn)}, expires["examples"])
			for _, s := range tt.says {
				assert.Contains(t, string(raw), s)
			}

			flows := doc.Components.SecuritySchemes["oauth2"].Flows
			assert.Equal(t, testIssuer+p.Token, flows.ClientCredentials.TokenURL)
			assert.Equal(t, testIssuer+p.Authorize, flows.AuthorizationCode.AuthorizationURL)
			assert.Contains(t, doc.Components.SecuritySchemes["userToken"].Description, "`POST "+p.UserToken+"?grant_type=password`")
			assert.Equal(t, testIssuer, doc.Servers[0].URL)

			alias := tt.srv.OpenAPIClientCredentials("requestAliasToken", "Request a token elsewhere")
			require.NoError(t, doc.AddPath("/alias/token", alias))
			assert.Contains(t, alias.Post.Description, "`"+p.Token+"`")
			assert.Error(t, doc.AddPath("/alias/other", tt.srv.OpenAPIClientCredentials("requestToken", "")), "operationIds stay unique")
		})
	}
}
