// Package events records every write through a resource registry as a
// CloudEvent, in the transaction of the write, and serves the events as a
// change feed; package webhook delivers the same events to HTTP endpoints.
//
// # The outbox
//
// Set an Outbox as the registry's resource.Registry.Outbox and call
// Feed.Migrate once at start-up. Every create, update and delete then appends
// its event in its own transaction, as its last statement: an event exists
// if and only if its write committed. The event is a CloudEvents 1.0 JSON
// object:
//
//	{"specversion": "1.0", "id": "<uuid>", "source": "/v1/<scopeId>/quotations/<id>",
//	 "type": "quotation.updated", "subject": "<id>", "time": "2026-11-24T10:00:00.123456Z",
//	 "datacontenttype": "application/json", "organizationid": "...", "branchid": "...",
//	 "clientid": "...", "userid": "...",
//	 "data": {"record": {...}, "changed": ["status"], "status": {"field": "status", "from": "draft", "to": "sent"}}}
//
// type is the singular of the resource's name and the change: created,
// updated, deleted, and status_changed for an update that moved the field
// a resource.StatusFlow keeps (it gives updated too, just before).
// data.record is the record as the API shows it after the write (for a
// delete, its id alone); data.changed names the fields the write changed.
// branchid is absent for organization-wide records, userid for the tokens
// of apps (client credentials).
//
// # Order without gaps
//
// Each organization numbers its events 1, 2, 3, ... On PostgreSQL a write
// inserts its event without a number, so that writers never wait for each
// other; Sequence then numbers the committed events, in the order they
// were inserted, under an advisory lock that one sequencer holds at a time
// on every replica, and raises the organization's head in the same
// transaction. A reader that sees head H thus sees every event up to H,
// and no event is ever numbered below a head a reader saw: the feed is a
// log a consumer follows with one number as its cursor, also while many
// writers commit at once, where sequence values taken at insert would
// become visible out of order. The events of one record are numbered in
// commit order (a write of a record waits for the one before it to commit,
// then inserts its event); across records the order is that of insertion.
// A rolled-back write leaves no event and no hole. The Feed and the webhook
// Dispatcher call Sequence before they read. On SQLite, which has one
// writer, an event takes its number as it is inserted.
//
// # The feed
//
// Feed serves GET {prefix}/{scopeId}/events?after=&types=&limit=; see Feed
// for who sees what. types lists at most MaxTypes event types (400
// invalid_request beyond), each kept once. Feed.Purge removes the events older than the retention (a
// server runs it periodically); a cursor from before them is answered 410
// cursor_expired.
package events
