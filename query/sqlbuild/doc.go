// Package sqlbuild compiles a parsed list request, a *query.Query, to SQL
// through squirrel, for PostgreSQL or SQLite. It is the one part of the
// filter/sort parser that needs a SQL builder, kept apart so that a service
// that only parses (package query) links and downloads none.
//
// Page and Count add the filters, order, limit and offset or cursor of a
// query to squirrel SELECTs that the caller starts with its own table,
// columns and conditions (the tenant, say); Where, OrderBy and Keyset are
// the parts of Page, for a statement that is not a page; SQL renders a
// statement with the dialect's placeholders, converted once, at the top, so
// that PostgreSQL's $n numbering stays right in nested builders.
//
// Values never become SQL text: the SQL holds only the schema's column
// names, operators and placeholders, and every value is a bound argument,
// a date or a timestamp in the dialect's form (query.Dialect.Date and
// Timestamp). For each dialect:
//
//   - like (case-sensitive) is LIKE with ESCAPE '!' on PostgreSQL and GLOB
//     on SQLite; ilike (case-insensitive) is ILIKE with ESCAPE '!' on
//     PostgreSQL and LIKE with ESCAPE '!' on SQLite, which folds ASCII
//     letters only. The client's pattern is rewritten so that % is its only
//     wildcard: _, !, and GLOB's *, ? and [ match themselves.
//   - A Nullable sort key places NULLs last ascending and first descending,
//     as PostgreSQL does: on SQLite with NULLS LAST and NULLS FIRST.
//   - After a cursor, the page is the rows strictly after the cursor's
//     position: a row-value comparison, (a, id) > (?, ?), when every key
//     has one direction and none is Nullable, else the equivalent chain of
//     conditions; LIMIT without OFFSET. The count ignores the cursor: it is
//     the total of the list.
package sqlbuild
