-- Secret rotation: while previous_secret_until is in the future, every
-- delivery is signed with the previous secret too (sealed like secret,
-- under previous_secret_key_id, '' in clear). After it the previous secret
-- is never used; a rotation or a purge clears it.
ALTER TABLE waybill_webhook_endpoints ADD COLUMN previous_secret blob;
ALTER TABLE waybill_webhook_endpoints ADD COLUMN previous_secret_key_id text NOT NULL DEFAULT '';
ALTER TABLE waybill_webhook_endpoints ADD COLUMN previous_secret_until text;

-- A delivery of an event that is not in the events table (a webhook.test
-- event, which is not in the feed) carries the event itself: its CloudEvent
-- JSON in body and its type in event_type. Its event_seq is negative,
-- numbered per endpoint, so that it never meets an event of the feed.
ALTER TABLE waybill_webhook_deliveries ADD COLUMN body text;
ALTER TABLE waybill_webhook_deliveries ADD COLUMN event_type text;
