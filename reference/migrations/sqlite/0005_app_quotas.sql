-- Per-app overrides of the REST limit of each app within its organization
-- ("rest-app", --rate-rest-app), set by waybill admin app set-quota. An app
-- without a row has the server's quota. The server reads the whole table
-- every 30 seconds, never on a request.
CREATE TABLE app_quotas (
    client_id       text    NOT NULL PRIMARY KEY,
    rest_per_minute integer NOT NULL CHECK (rest_per_minute >= 0)
);
