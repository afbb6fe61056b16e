// Package query parses the list parameters of a REST API — limit, offset,
// sort and filter — against a per-resource whitelist, into typed values
// that a handler compiles to SQL for PostgreSQL or SQLite. It stands alone:
// it links only the standard library and Waybill's errors, so a service
// that embeds only the parser downloads no module, and it knows nothing of
// HTTP routing, tenants or tokens.
//
// Parsing is here; compiling is in the subpackage sqlbuild, which adds a
// Query to squirrel SELECTs and is the one part that needs squirrel. This
// package keeps what every SQL of a query shares: the Dialect, and the
// values it binds and reads (Dialect.Date, Dialect.Timestamp,
// ScanTimestamp, SQLiteTimestampLayout). A handler that builds its SQL
// another way reads the Query: the columns to write (Filter.Column,
// Order.Column), the values to bind, never to write, and the cursor's
// position (Query.After).
//
// A Schema declares what one resource accepts: its fields, each with a type
// (uuid, string, enum, integer, number, date, timestamp, boolean), whether
// it may be filtered and with which operators, whether it may be sorted;
// the page size; the default order; the fields no client may ever touch.
// Schema.Parse turns url.Values into a Query, checking every value against
// its field's type; sqlbuild.Page and sqlbuild.Count add the filters,
// order and page to squirrel SELECTs that the caller starts (with its own
// table, columns and conditions); sqlbuild.SQL renders them with the
// dialect's placeholders.
//
//	filter=field:operator:value   repeatable, ANDed; split on the first two
//	                              colons, so created_at:gte:2026-01-01T10:00:00Z works
//	sort=field:asc|desc           repeatable or comma-separated; the
//	                              tiebreaker (id) is always appended
//	limit=50&offset=0             1..MaxLimit, >= 0
//	after=<cursor>                instead of offset: the page after the
//	                              last row of the previous page
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
// # Cursor pages
//
// An offset costs what it skips: OFFSET 100000 makes the database read and
// throw away 100,000 rows before the page, so the last pages of a long list
// are its slowest, and a row written or deleted between two requests
// shifts every later row by one, so a client skips or repeats one at the
// page boundary. A cursor names the last row of the previous page by its
// sort keys instead, and the next page is the rows strictly after it in
// the list's order, (sort keys, id) > (the last row's), which an index on
// those columns finds directly: page 2,000 costs what page 1 costs, and a
// row that exists from the first page to the last comes exactly once, as
// long as its sort keys do not change (an update that moves a row across
// the cursor moves it in the walk too).
//
// A schema with a CursorKey accepts after=<cursor> in place of offset (the
// two together are refused). Query.NextCursor makes the cursor from the
// sort keys of a page's last row; Schema.Parse reads it back into
// Query.After; sqlbuild.Page then adds the condition, which sqlbuild.Keyset
// also returns, and LIMIT without OFFSET. The cursor is
// base64url text, a few dozen bytes for a sort on one key: a version byte,
// eight bytes of the digest of the query's shape, the last row's value of
// each sort key, the tiebreaker included, compactly encoded (a UUID in 16
// bytes, a timestamp in microseconds, NULL in one byte), and an HMAC-SHA256
// tag under the CursorKey, truncated to 16 bytes, over all of that and the
// shape's full digest. The shape is the schema's Name and fields, the
// sort, and the filters with their values, in any order; not the limit,
// which a client may change between pages.
//
// The position is the client's to keep but not to write: an after that is
// empty, longer than MaxCursorLength, not base64url, cut short, changed in
// any byte, made under another key or by another version, or made for
// another list, other filters or another sort, is refused with an
// invalid_request that tells the client to start again without after. A
// schema without a CursorKey refuses after, since a per-process key would
// void the cursors at every restart and on every other instance.
//
// The cursor follows the order that sqlbuild.OrderBy produces, NULLs
// included: a NULL sorts after every value ascending and before every
// value descending, on both dialects. The count that sqlbuild.Count builds
// is the total of the list, whatever the cursor.
//
// Decisions the specification left open, settled here: ne is SQL's <> and
// so never matches NULL (use isnull for that); a sort key without a
// direction is ascending; the tiebreaker takes the direction of the key
// before it, so one (key, id) index serves a sort both ways; a timestamp
// filter also accepts a bare date, meaning midnight UTC; string order
// follows the database's collation; on SQLite, ilike folds ASCII letters
// only, as SQLite's LIKE does.
package query
