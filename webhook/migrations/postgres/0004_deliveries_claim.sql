-- The claim finds the organizations with due deliveries through the first
-- pending delivery of each enabled endpoint, then takes the oldest due
-- deliveries of each organization up to its share of the workers, each
-- one only when no earlier delivery of its record to its endpoint is
-- pending: none of the three reads a backlog beyond what it takes. The
-- first index names next_attempt_at in its condition so that only queries
-- on the time use it: the check of a record's earlier deliveries, which
-- has no condition on the time, uses the last, never the first, whatever
-- the statistics say.
CREATE INDEX waybill_webhook_deliveries_endpoint_due ON waybill_webhook_deliveries (endpoint_id, next_attempt_at)
    WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
CREATE INDEX waybill_webhook_deliveries_organization_due ON waybill_webhook_deliveries (organization_id, next_attempt_at, event_seq) WHERE status = 'pending';
CREATE INDEX waybill_webhook_deliveries_record_pending ON waybill_webhook_deliveries (endpoint_id, record_id, event_seq) WHERE status = 'pending';
DROP INDEX waybill_webhook_deliveries_due;
DROP INDEX waybill_webhook_deliveries_record;
