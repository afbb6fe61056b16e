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
//     backoff and jitter (ExponentialBackoff: by default for about a day,
//     DefaultBackoff; Dispatcher.RetryDelay and MaxAttempts set it); an
//     endpoint whose delivery fails every attempt while nothing else
//     reaches it is disabled, with the reason shown, and its
//     organization's feed gets a webhook_endpoint.disabled event (see
//     EventKinds) in the same transaction. The events of one record reach
//     an endpoint in their order.
//   - DisableAppEndpoints disables the endpoints that act under an app's
//     authority in an organization (those it registered or changed last)
//     when the app is disconnected from it; no other app may enable them
//     again. A server calls it for every cut-off it learns of
//     (bearer.CutOffList.OnCutOff).
//   - Guard (an alias of netguard.Guard) refuses endpoints at addresses
//     that are not globally reachable (loopback, private, link-local,
//     documentation, 6to4, Teredo and the rest of the IANA special-purpose
//     blocks), when they are registered and again when each connection is
//     made, unless the operator allows them; its errors never tell what a
//     name resolves to.
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
//
// # The endpoints API
//
// API.Mount serves these routes:
//
//	POST   {prefix}/{organizationId}/webhook_endpoints                 create (201, the secret shown once)
//	GET    {prefix}/{organizationId}/webhook_endpoints                 list
//	GET    {prefix}/{organizationId}/webhook_endpoints/{id}            get
//	PATCH  {prefix}/{organizationId}/webhook_endpoints/{id}            update
//	DELETE {prefix}/{organizationId}/webhook_endpoints/{id}            delete (200 with the endpoint)
//	GET    {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries list deliveries, newest first
//	POST   {prefix}/{organizationId}/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver (202)
//	POST   {prefix}/{organizationId}/webhook_endpoints/{id}/rotate_secret   new secret (200, shown once)
//	POST   {prefix}/{organizationId}/webhook_endpoints/{id}/test            send a webhook.test event (202)
//	POST   {prefix}/{organizationId}/webhook_endpoints/{id}/recover         send a time range's events again (202)
//
// Every route takes an OAuth access token of the organization in the path
// (tenancy.Middleware with tenancy.Organization): ScopeRead for GET and
// HEAD, ScopeWrite for the rest. Another organization's id in the path, an
// id that is not a UUID, and an endpoint or delivery of another
// organization are all 404 not_found. Other methods get 405 with Allow.
//
// The writes are as safe to retry as the resources':
// POST and PATCH take an Idempotency-Key, whose replay of a create shows
// the secret again; every answer with one endpoint carries its ETag, GET
// takes If-None-Match (304) and PATCH and DELETE If-Match (412
// precondition_failed with the endpoint as stored).
//
// # Bodies
//
// POST takes {"url", "event_types", "branch_ids", "filter", "rate_limit"},
// PATCH any of these but none required, and "status" ("enabled" or
// "disabled"; enabling clears disabled_reason). A body is one JSON object of
// application/json, at most MaxBodyBytes (else 413); a member the route
// does not take, or a value of the wrong type, is 400 invalid_create (POST)
// or invalid_update (PATCH); JSON that does not parse, or that names a
// member twice, is 400 invalid_request. An endpoint answers as
//
//	{"id", "url", "event_types", "branch_ids" (null: every branch),
//	 "filter" (null: every event), "rate_limit" (null: no limit), "status",
//	 "disabled_reason" (null while enabled), "client_id" (the app under
//	 whose authority it acts), "created_at", "updated_at",
//	 "previous_secret_expires_at" (null unless a rotation's grace runs)}
//
// and the answers of POST and of rotate_secret alone add "secret": the
// signing secret ("whsec_..."), which no other answer and no log line ever
// shows again.
//
// # Rules
//
//   - url: at most 2048 characters, and Guard.CheckURL must accept it: an
//     absolute http or https URL whose host is not, and does not resolve
//     to, a loopback, private, link-local or otherwise non-public address
//     (unless Guard.AllowPrivate). A refusal is 400 with the Guard's
//     words.
//   - event_types: 1 to MaxEventTypes patterns, each an event type of one
//     of Resources ("quotation.created"), all the types of one
//     ("quotation.*"), or every type ("*"), or the event the dispatcher
//     appends when it disables an endpoint (EndpointDisabledType,
//     "webhook_endpoint.disabled", or "webhook_endpoint.*"); anything else
//     is 400 naming it. They are stored as a JSON array, duplicates
//     dropped.
//   - filter: optional (absent or null: every event); when given, 1 to
//     MaxFilterConditions conditions "field:operator:value", all of which
//     an event must meet to be delivered, in the grammar of the list
//     filters of package query (split on the first two colons; operators
//     eq, ne, in, gt, gte, lt, lte and isnull, as the field's type allows;
//     in comma-separated, a value with a comma in double quotes). A field
//     is one of the event's data.record, compared as its type (integers
//     and numbers as numbers, dates and timestamps as times, the rest as
//     strings); status.from or status.to, the move a status_changed event
//     carries (null on every other event, the updated event of the same
//     write included); or changed, whose values are field names:
//     changed:eq:eta holds when eta is among data.changed, changed:in:a,b
//     when any of them is, changed:ne:eta when it is not. A field the
//     event's record lacks (a deleted record carries its id only) or holds
//     as null is null: only isnull:true holds for it, and ne never does.
//     A condition holds for every resource the event types name or is
//     refused: its field must be a field of each (status.from and
//     status.to need a status flow in each), of one type in all, and its
//     value must parse as that type for each; the filter is checked again
//     when a PATCH changes event_types. A refusal is 400 invalid_create or
//     invalid_update naming the reason, and nothing changes. The
//     dispatcher compiles the filter once each time it loads the
//     endpoints and decides on each event's body in memory.
//   - rate_limit: optional (absent or null: no limit); a whole number of
//     deliveries a second from 1 to MaxRateLimit. The dispatchers of every
//     replica share it through the endpoint's row: a delivery is posted
//     only when the endpoint's turn has come (the generic cell rate
//     algorithm with no burst beyond one: turns at least 1/rate_limit
//     seconds apart, taken by a conditional UPDATE so that of two replicas
//     one gets each); else it stays pending, due at the next turn, and
//     costs no attempt. It holds across replicas with or without Redis.
//   - The token must be able to read what it subscribes to: a pattern that
//     names a resource needs that resource's read scope (a
//     webhook_endpoint type ScopeRead), "*" at least one resource's; else
//     403 insufficient_scope naming the scope.
//   - branch_ids: optional (absent or null: every branch); when given, a
//     non-empty list of branches of the organization (else 400). A
//     client-credentials token may name only its own branches, and one
//     that does not cover every branch of the organization must give
//     branch_ids (both 403 insufficient_scope).
//   - Such a token (of an app limited to some branches) sees and manages
//     only the endpoints limited to branches among its own: another
//     endpoint, whatever app registered it, is 404 to it on every route and
//     left out of its list, so that it can neither read where another
//     branch's events go nor redirect, re-grant or delete them.
//   - The grant: on POST, and on every PATCH, the endpoint records what
//     the token may read — the names of the resources whose read scope it
//     has (grant_resources; "webhook_endpoints", the events of EventKinds,
//     with ScopeRead), and, for a client-credentials token, its
//     branches (grant_branches; NULL, every branch, for an
//     authorization-code token) — and the token's app (client_id). The
//     dispatcher delivers only events the grant allows, so ScopeWrite
//     never lets a token see, through an endpoint, what it could not read
//     itself.
//   - Authority: an endpoint acts under the authority of the app whose
//     token registered it or changed it last. A PATCH (of any member, the
//     URL or the status alone included, or of none) and a redelivery need
//     a token that may read everything the endpoint gets, after the
//     change: the read scope of every resource that both its event types
//     name and its grant allows (else 403 insufficient_scope naming the
//     missing scopes, and nothing changes), and its branches (above). A
//     successful PATCH then grants the endpoint anew to the token, so
//     disconnecting the app that registered it no longer disables it, and
//     disconnecting the app that changed it does. A redelivery grants
//     nothing. DELETE needs ScopeWrite and the branches only: it hands no
//     one anything.
//   - An endpoint disabled because its app was disconnected from the
//     organization (DisableAppEndpoints) is that app's: a PATCH or a
//     redelivery by any other app's token, or by a token of the app issued
//     before the disconnection, is 409 conflict, so that no one else sends
//     the events the organization cut off back to that app's URL under its
//     secret. The app, once connected again, may change it and enable it
//     (which makes it everyone's again); anyone may delete it.
//   - An endpoint gets only the events committed after it was created: it
//     starts at the organization's event head (after_seq).
//   - The secret is signature.NewSecret(), sealed with Sealer (the endpoint
//     id as additional data, secret_key_id the key's id) when Sealer is
//     set; without a Sealer it is stored in clear (with an empty secret_key_id).
//   - An organization has at most MaxEndpoints endpoints: a POST beyond is
//     409 conflict (counted under a lock, so concurrent POSTs cannot pass
//     it together).
//
// # Deliveries
//
// GET .../{id}/deliveries lists the endpoint's deliveries newest first:
//
//	{"data": [{"id", "event_id", "event_type" (null once retention removed the event),
//	  "status" (pending, delivered, failed), "attempts": [{"at", "status_code" (null: no answer),
//	  "error" (null on success), "duration_ms"}], "next_attempt_at" (null unless pending),
//	  "created_at"}], "pagination": {"limit", "next_cursor"}, "version": "v1"}
//
// with limit (default 50, at most 100), status (one of the three) and
// after (the next_cursor of the page before, which is bound to the status
// filter). POST .../deliveries/{delivery_id}/redeliver makes a delivery
// pending and due now with a new round of attempts, keeping the attempts
// made so far, and answers 202 with it; a delivery whose event retention
// has removed cannot be sent again: 409 conflict.
//
// # The webhook_endpoint.disabled event
//
// When the dispatcher disables an endpoint (every attempt of a delivery
// failed while nothing else reached it), it appends, in the same
// transaction, an event to the organization's feed: type
// webhook_endpoint.disabled, source
// {prefix}/{organizationId}/webhook_endpoints/{id} (Dispatcher.PathPrefix),
// subject the endpoint's id, no branch, no clientid, and data
// {"record": the endpoint as the API shows it, disabled, without its
// secret, "changed": ["status", "disabled_reason"]}. A feed with
// EventKinds (events.Feed.Kinds) shows it to tokens with ScopeRead; it is
// delivered like any event to the endpoints that subscribe to it and whose
// grant holds ScopeRead (those set up or changed since this event exists,
// by a token with that scope). An endpoint disabled by a PATCH or by the
// disconnection of its app gives no such event.
//
// # Actions
//
// The bodies of the actions below are one JSON object (or no body at all:
// every default); a member they do not take, or a bad value, is 400
// invalid_request. They take an Idempotency-Key as the other POSTs do.
//
// POST .../{id}/rotate_secret {"grace_seconds": 86400} gives the endpoint
// a new secret (signature.NewSecret, sealed as the first) and answers 200
// with the endpoint and "secret", which no other answer shows (a replay of
// its Idempotency-Key shows the current secret). grace_seconds, 86400 when
// absent, is 0 to 604800 (MaxRotationGrace, 7 days): until then every
// delivery carries two signatures, "v1,<new> v1,<old>" (signature.SignAll),
// and the endpoint shows "previous_secret_expires_at"; after it the
// previous secret is not used, and a later rotation or Purge erases it.
// Only the secret a rotation replaces is kept: a rotation during the grace
// of the one before drops the oldest. A rotation is a change of the
// endpoint under the rules of a PATCH (Authority above, If-Match, the
// cut-off's 409), and it grants the endpoint anew to the token: the
// token's app now holds the secret, so the endpoint acts under its
// authority.
//
// POST .../{id}/test (no body, or {}) queues a webhook.test event
// (TestEventType) for that endpoint alone and answers 202 with its
// delivery, pending. The event is a CloudEvent like every other: source
// the endpoint's path ({prefix}/{organizationId}/webhook_endpoints/{id}),
// subject the endpoint's id, clientid (and userid) the token's, and data
// {"record": the endpoint as the API shows it, "changed": []}. The
// delivery carries the event itself (it is not in the events table, so
// not in the feed, and retention never removes it before the delivery),
// is listed among the endpoint's deliveries with event_type webhook.test,
// and gets one attempt, whose failure never disables the endpoint; a
// redelivery sends it again. A disabled endpoint is not tested: 409
// conflict. A test needs ScopeWrite and the endpoint within the token's
// reach, no read scope: it carries nothing but the endpoint itself.
//
// POST .../{id}/recover {"since": RFC 3339, "until": RFC 3339 (default
// now)} queues again for that endpoint alone every event still kept
// whose time is in [since, until) and that the endpoint would have got
// (subscription.wants decides, as for the fan-out of new events: after
// its creation, its event types and branches, its grant), those of a time
// it was disabled included, and answers 202 {"data": {"queued": n,
// "next_since": null}}. A delivery that ended becomes pending and due now
// with a new round of attempts (as a redelivery, same webhook-id); a
// pending one is left as it is; a missing one is made. All are due at
// once, so the dispatcher sends them in event order, each after the
// pending deliveries of its record's earlier events, live ones included.
// One call queues at most MaxRecover (10,000) events and reads at most
// twice that many: when the range holds more, queued is what it queued
// and next_since the time of the last event it queued (or read), where the next
// call starts (the events at exactly that time may come twice; a receiver
// keys on webhook-id). 400 invalid_request, with nothing queued, for a
// missing or malformed since, since in the future, until not after since,
// and since older than EventRetention (without it: before the oldest event
// kept, once retention has removed some). A disabled endpoint is recovered
// all the same: its deliveries wait, pending, until it is enabled (so a
// caller may recover before enabling it, and the events go out in order
// once it is). The rules of a redelivery hold: the token must be able to
// read everything the endpoint gets, the cut-off's 409, no new grant.
//
// Errors are package errors' (apierrors) through an apierrors.Writer of
// Logger and Realm; SQL is built with squirrel and bound parameters only.
package webhook
