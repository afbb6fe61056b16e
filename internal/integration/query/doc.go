// Package query holds the tests of github.com/waybillhq/waybill/query that need PostgreSQL or SQLite.
// They live apart from the package so that importers of query never resolve the modules they use.
package query
