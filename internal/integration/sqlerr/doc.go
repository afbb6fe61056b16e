// Package sqlerr holds the tests of github.com/waybillhq/waybill/internal/sqlerr that need PostgreSQL or SQLite.
// They live apart from the package so that importers of the packages that link sqlerr never resolve the modules they use.
package sqlerr
