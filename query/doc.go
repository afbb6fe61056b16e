// Package query parses the list parameters of a REST API — limit, offset,
// sort and filter — against a per-resource whitelist, and compiles them to
// SQL through squirrel for PostgreSQL or SQLite. It stands alone: its only
// third-party dependency is squirrel, and it knows nothing of HTTP routing,
// tenants or tokens.
//
// A Schema declares what one resource accepts: its fields, each with a type
// (uuid, string, enum, integer, number, date, timestamp, boolean), whether
// it may be filtered and with which operators, whether it may be sorted;
// the page size; the default order; the fields no client may ever touch.
// Schema.Parse turns url.Values into a Query, checking every value against
// its field's type; Query.Page and Query.Count add the filters, order and
// page to squirrel SELECTs that the caller starts (with its own table,
// columns and conditions); Dialect.SQL renders them with the dialect's
// placeholders.
//
//	filter=field:operator:value   repeatable, ANDed; split on the first two
//	                              colons, so created_at:gte:2026-01-01T10:00:00Z works
//	sort=field:asc|desc           repeatable or comma-separated; the
//	                              tiebreaker (id) is always appended
//	limit=50&offset=0             1..MaxLimit, >= 0
//
// Operators: eq, ne, gt, gte, lt, lte; in (comma-separated, a value that
// holds a comma is written in double quotes, a quote inside one doubled);
// like (case-sensitive) and ilike (case-insensitive), where % is the only
// wildcard and every other character, _ and \ included, matches itself;
// isnull with true or false. Unknown parameters are rejected, never
// ignored. Every error is an invalid_request *errors.Error that names the
// field and the reason.
//
// Values never become SQL text: the SQL holds only the schema's column
// names, operators and placeholders, and every value is a bound argument.
//
// Decisions the specification left open, settled here: ne is SQL's <> and
// so never matches NULL (use isnull for that); a sort key without a
// direction is ascending; the tiebreaker takes the direction of the key
// before it, so one (key, id) index serves a sort both ways; a timestamp
// filter also accepts a bare date, meaning midnight UTC; string order
// follows the database's collation; on SQLite, ilike folds ASCII letters
// only, as SQLite's LIKE does.
package query
