// Package waybill is the root of the Waybill module: importable packages for
// building multi-tenant, OAuth 2.1-protected REST APIs on SQL databases, and
// a reference server that wires them into the complete API of a transport
// management system (TMS). This package holds no code; the work is done by
// the packages below, each usable on its own with plain net/http (Go 1.22+
// ServeMux patterns), so chi, gorilla or echo users can mount them too.
//
// # Packages
//
//   - errors (import it as apierrors) is the API error model: an error with a
//     code, an HTTP status from one code-to-status table and a description,
//     and one writer, Write, that answers any error as
//     {"error","error_description"} JSON. Errors that are not API errors
//     become a 500 server_error whose text is logged, never sent.
//   - query parses the list parameters limit, offset, sort and filter against
//     a per-resource whitelist with typed values; its subpackage
//     query/sqlbuild compiles them to SQL through squirrel for PostgreSQL or
//     SQLite. Values are always bound parameters. query stands alone: it
//     links only the standard library and errors, and sqlbuild adds squirrel
//     alone.
//   - oauth is the OAuth 2.1 token service: clients, PKCE, authorization
//     codes, consent grants, refresh token rotation, client credentials, JWT
//     issue, secret hashing and rotation, with its storage behind small
//     interfaces.
//   - oauth/bearer is what checking a token needs, apart from the token
//     service: the token's claims, the key set (HS256, ES256 or EdDSA) and the verifier.
//   - tenancy is net/http middleware: bearer authentication, token type and
//     scope checks, and resolution of the tenant (organization or branch)
//     named in the path, which it puts in the request's context. It imports
//     oauth/bearer, never oauth.
//   - ratelimit is a limiter interface, an in-process GCRA limiter, a
//     Redis-backed limiter shared by many replicas (in its own subpackage),
//     several policies decided at once (an organization's quota and, within
//     it, each app's), and net/http middleware that sets the RateLimit
//     headers and answers 429.
//   - protectedresource publishes an API's protected resource metadata (RFC
//     9728), which the Bearer challenges of tenancy name in resource_metadata.
//   - resource is a declarative registry of resources (fields, create and
//     update whitelists, filter and sort whitelists, scope type, scopes,
//     hooks) with generic list, get, create, update and delete handlers over
//     database/sql-style stores, and the OpenAPI document of its API.
//   - events keeps every write of a resource registry as a CloudEvent, in
//     the write's own transaction (an outbox), numbered per organization in
//     commit order without gaps, and serves them as a change feed,
//     GET /v1/{scopeId}/events.
//   - webhook delivers those events to the HTTP endpoints organizations
//     register, signed as Standard Webhooks says, with retries, leases shared
//     by replicas and netguard's guard against private addresses; receivers
//     use its Verify.
//   - netguard keeps the requests a server makes to URLs its clients give
//     (webhook endpoints, client metadata documents) away from the
//     server's own network (SSRF): loopback, private, link-local and the
//     other addresses that are not globally reachable, checked when a URL
//     is given and again at each connection. It uses the standard library
//     only.
//   - openapi holds the shapes of an OpenAPI 3.1 document and merges
//     sections: oauth describes its endpoints in them, and resource merges
//     that description into its document. It imports nothing of the module.
//   - examples/ holds small runnable programs: the filter parser alone in a
//     plain API (filteronly), the middleware and a resource in an existing
//     net/http or chi service (existingservice), a resource with its own hook
//     (customresource), integration tests against PostgreSQL
//     (integrationtest), and a webhook receiver and change-feed consumer
//     (webhookreceiver).
//   - reference/ is package main, the waybill binary: server and admin CLI,
//     with its schema, migrations, resource declarations and consent UI. The
//     packages never import it.
//
// Packages never import reference/, and query stands alone.
//
// # How a request flows
//
// A call to the REST API, GET /v1/{scopeId}/{resource}?filter=..., passes
// through the packages in this order:
//
//  1. tenancy verifies the bearer token (401 unauthorized or invalid_token,
//     403 invalid_token_type or insufficient_scope, each challenge naming the
//     API's protected resource metadata when the host gives its URL), resolves {scopeId} to an
//     organization or branch of the token's organization (404 not_found for
//     anything else) and stores that tenant in the context.
//  2. ratelimit checks the organization's quota and, beside it, the app's
//     within the organization, in one decision, and answers 429 rate_limited
//     with Retry-After when either is spent (the token endpoints are limited per
//     client instead, before any of this).
//  3. resource finds the resource's declaration and checks the body of a
//     write against its whitelists.
//  4. query parses the list parameters against the resource's whitelist (400
//     invalid_request naming the field for anything it does not allow).
//  5. SQL: the resource's store runs the compiled query, always restricted
//     to the tenant from the context.
//
// The tokens that tenancy verifies with oauth/bearer are issued by oauth,
// through the authorization code flow with PKCE (an application acting for
// a user) or the client credentials grant (a server acting for itself).
// Every error on the way is an apierrors value, so every failure has the
// same JSON shape.
package waybill
