// Package resource holds the tests of github.com/waybillhq/waybill/resource that need PostgreSQL or SQLite.
// They live apart from the package so that importers of resource never resolve the modules they use.
package resource
