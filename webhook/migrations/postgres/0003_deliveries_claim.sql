-- The claim finds the organizations with due deliveries through the first
-- pending delivery of each enabled endpoint, then takes the oldest due
-- deliveries of each organization up to its share of the workers: neither
-- reads a backlog beyond what it takes.
CREATE INDEX waybill_webhook_deliveries_endpoint_due ON waybill_webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX waybill_webhook_deliveries_organization_due ON waybill_webhook_deliveries (organization_id, next_attempt_at, event_seq) WHERE status = 'pending';
DROP INDEX waybill_webhook_deliveries_due;
