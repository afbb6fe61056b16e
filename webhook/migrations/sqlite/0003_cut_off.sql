-- cut_off_at is set when the endpoint was disabled because the app that
-- last changed it (client_id) was disconnected from the organization: the
-- time of that cut-off (text, as every timestamp); NULL otherwise. While it
-- is set, only a token of that app issued after it may change the
-- endpoint or send its deliveries again; enabling the endpoint clears it.
ALTER TABLE waybill_webhook_endpoints ADD COLUMN cut_off_at text;
