// Package query holds the tests of github.com/waybillhq/waybill/query and of its subpackage
// query/sqlbuild that need PostgreSQL or SQLite: the compiled SQL run on both databases. They
// live apart from the packages so that their importers never resolve the modules they use.
package query
