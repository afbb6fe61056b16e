-- The deliveries that ended (delivered, or failed for good), by when they
-- did: PurgeDeliveries deletes the old ones.
CREATE INDEX waybill_webhook_deliveries_ended ON waybill_webhook_deliveries (updated_at) WHERE status <> 'pending';
