-- filter holds the endpoint's conditions on the events it gets, a JSON
-- array of {"c": "field:operator:value", "t": the field's type}; NULL:
-- every event. rate_limit is how many deliveries a second the endpoint
-- gets (NULL: no limit); rate_next is the earliest time of its next
-- delivery (the theoretical arrival time of the generic cell rate
-- algorithm), which every replica's dispatcher takes in turn.
ALTER TABLE waybill_webhook_endpoints ADD COLUMN filter text;
ALTER TABLE waybill_webhook_endpoints ADD COLUMN rate_limit integer;
ALTER TABLE waybill_webhook_endpoints ADD COLUMN rate_next text;
