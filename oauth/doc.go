// Package oauth is Waybill's OAuth 2.1 token service: the authorization-code
// grant with PKCE (S256 only) and a server-rendered login and consent page,
// rotating refresh tokens, client credentials, app registration and secret
// rotation, RFC 7009 revocation, RFC 7662 introspection and RFC 8414
// metadata. Resource servers check the access tokens it signs (HS256,
// ES256 or EdDSA) with package bearer, which holds the tokens' Claims, the
// KeySet and the Verifier, and does not need this package; with ES256 or
// EdDSA the server publishes its public keys as a JSON Web Key Set
// (Paths.JWKS, the metadata's jwks_uri), which bearer.RemoteKeys reads.
//
// A Server needs four things: its Issuer URL, a bearer.KeySet (the current
// key signs, every key in the set verifies, so keys rotate without
// downtime), a Store for apps, codes, refresh token families and consent
// grants (package sqlstore keeps them in PostgreSQL or SQLite; package
// oauthtest is the conformance suite for any other), and a Directory — the
// host application's users and organizations, which the token service only
// asks about. Server.Handler serves every endpoint on plain net/http, at
// the Server's Paths (the Path constants unless the host moves them); the
// Server's methods (ClientCredentials, ExchangeCode, Refresh, RegisterApp,
// ...) serve the same to Go callers. The host mounts
// ClientCredentialsHandler at any further paths that should take the
// client-credentials grant.
//
//	srv := &oauth.Server{Issuer: "https://tms.example.com", Keys: keys, Store: store, Directory: users}
//	mux.Handle("/", srv.Handler())
//	mux.Handle("POST /v1/oauth/token", srv.ClientCredentialsHandler())
//
//	v := &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com",
//		Families: store} // refuse the tokens of revoked authorizations at once
//	claims, err := v.Verify(ctx, bearerToken) // 401 invalid_token on any failure
//
// OpenID Connect: a Server whose KeySet signs with ES256 or EdDSA
// (Server.OpenID) speaks OpenID Connect Core in the authorization-code
// flow: every app may ask for the scopes openid, profile and email; a code
// exchange with openid answers an id token (signed with the current key,
// aud the client_id, with the request's nonce, auth_time and at_hash, and
// email and name from a Directory that is also a UserLookup); prompt and
// max_age are honored; the discovery document (Paths.OpenIDConfiguration)
// and UserInfo (Paths.UserInfo) are served. With HS256 openid is refused
// (invalid_scope) and both answer 404.
//
// Server.OpenAPI describes the endpoints, as they are set up, as an OpenAPI
// 3.1 section (package openapi) that the host merges into the document it
// serves (resource.OpenAPIInfo.Sections does).
//
// Revocation ends authorizations: a refresh token, or an authorization-code
// access token, revokes its whole family, which every bearer.Verifier with
// Families refuses from then on; a client-credentials access token cannot
// be revoked and is answered unsupported_token_type (see RevokeToken).
// RotateAppSecret can revoke every authorization of an app with its secret.
// Redirect URIs follow OAuth 2.1 and RFC 8252 (see CheckRedirectURI). A
// Sealer encrypts the signing key at rest under a secrets key
// (sqlstore.Store.WithSealer).
//
// Connected apps: ConnectedApps lists the apps with access to an
// organization (those it registered, and those its users consented to)
// and DisconnectApp cuts one off: its authorizations there are revoked,
// the consents removed, and a cut-off recorded, which every
// bearer.Verifier whose CutOffs is a bearer.CutOffList over the store
// applies to the app's live access tokens at its next reload, without a
// database lookup per request (see ConnectedAppStore).
//
// Security properties, each tested: secrets, codes and refresh tokens are
// 256-bit random values stored only as SHA-256 hashes and compared in
// constant time; a client is authenticated before any code or refresh
// token is looked at, so a failed authentication spends nothing; codes are
// single use, live 60 s and are bound to client, redirect URI and PKCE
// challenge, which are checked before the code is spent, so another client
// can neither spend a user's code nor, by replaying it, revoke what it
// issued; of concurrent exchanges of a code exactly one succeeds, and a
// second use by its own client revokes every token issued from the code;
// refresh tokens are single use and rotate, and reuse revokes the whole
// family, its newest member and its access tokens included (the jti of an
// authorization-code access token names its family, which
// bearer.Verifier.Families checks); of concurrent refreshes of one token
// exactly one succeeds, on one replica or many; a family lives at most
// RefreshMaxAge (90 days by default) from the user's authorization,
// whatever its rotations; a refresh or code exchange for a user who is no
// longer a member of the token's organization fails and revokes the
// family, and Store.RevokeUserFamilies ends every family of a user who
// leaves at once; introspection tells a client only about its own tokens;
// every OAuth token names its grant in oauth_grant_type, a
// client-credentials token always carries its oauth_branch_ids and an
// authorization-code token never does; OAuth access tokens are typed
// at+jwt; only tokens signed by a known kid with exactly its key's
// algorithm, for the audience "authenticated" and the issuer, unexpired,
// are accepted, by every verifier of the server and by bearer.Verifier; every
// verifier the server builds runs on its clock (Server.Now); a token
// request or an authorization request may name one of Server.Resources as
// its resource indicator (RFC 8707), and every access token of that grant
// then has aud ["authenticated", resource]; any other resource is
// invalid_target, and nothing is issued; a public client (App.Public, no
// secret) authenticates by its client id alone, may use only the
// authorization-code grant and refresh, and may not introspect; with
// Server.ClientMetadataDocuments set, a client_id that is an https URL
// names such a public client by its client metadata document, fetched
// through a netguard.Guard (no private addresses, no redirects, at most
// 5 KiB, within 5 seconds) and cached per its Cache-Control within
// [5 minutes, 24 hours]; a document that cannot be fetched or is invalid
// is an unknown client, and nothing is stored; with Server.Registration a
// client may register itself (Dynamic Client Registration, RFC 7591, with
// an initial access token or openly) and manage its registration with the
// registration access token it was given (RFC 7592): such a client belongs
// to no organization and may use only the authorization-code grant and
// refresh.
//
// Errors are *errors.Error values (import it as apierrors) with the codes
// of RFC 6749 section 5.2; invalid_client is a 401 whose WWW-Authenticate
// names the scheme the client tried.
package oauth
