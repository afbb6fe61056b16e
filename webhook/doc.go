// Package webhook delivers the events of package events to the HTTP
// endpoints an organization registers, signed as the Standard Webhooks
// specification says (https://www.standardwebhooks.com).
//
// It has four parts, each usable alone:
//
//   - API serves the endpoints of an organization at
//     {prefix}/{organizationId}/webhook_endpoints (scopes svc:webhooks:read
//     and svc:webhooks:write): register a URL for some event types and,
//     optionally, branches; the signing secret ("whsec_...") is shown once;
//     list the deliveries of an endpoint with their attempts, and send one
//     again. An endpoint only ever gets what the token that set it up, or
//     changed it last, could read itself, and acts under that token's
//     authority: only a token that may read everything an endpoint gets
//     may change it or send its deliveries again.
//   - Dispatcher turns new events into deliveries, one per event and
//     endpoint, and posts them: every replica of a server runs one on the
//     same database and they share the work under leases, so a replica
//     that dies mid-delivery leaves its delivery to another. A failed
//     attempt (no 2xx within the timeout) is retried with exponential
//     backoff and jitter for about a day (DefaultBackoff); an endpoint whose
//     delivery fails every attempt while nothing else reaches it is
//     disabled, with the reason shown. The events of one record reach an
//     endpoint in their order.
//   - DisableAppEndpoints disables the endpoints that act under an app's
//     authority in an organization (those it registered or changed last)
//     when the app is disconnected from it; no other app may enable them
//     again. A server calls it for every cut-off it learns of
//     (bearer.CutOffList.OnCutOff).
//   - Guard refuses endpoints at addresses that are not globally reachable
//     (loopback, private, link-local, documentation, 6to4, Teredo and the
//     rest of the IANA special-purpose blocks), when they are registered
//     and again when each connection is made, unless the operator allows
//     them; its errors never tell what a name resolves to.
//   - Package webhook/signature signs deliveries and verifies them: the
//     headers webhook-id (the event's id), webhook-timestamp (Unix seconds)
//     and webhook-signature ("v1," and the base64 HMAC-SHA256 of
//     "id.timestamp.body" under the key in the secret after "whsec_"). A
//     receiver imports only that package, which links none of the server.
//
// A delivery is a POST of the event's CloudEvent JSON in the structured
// mode of the CloudEvents HTTP binding (Content-Type
// application/cloudevents+json, signature.ContentType). Delivery is at
// least once: a receiver treats
// webhook-id as the key of what it handled, so that a delivery sent again
// (a retry after a timeout, a replica that died after sending) is
// acknowledged without being handled twice.
//
// API.Migrate creates the tables (the events' too), API.Purge removes the
// deliveries that ended before a time.
package webhook
