// Package migrate holds the tests of github.com/waybillhq/waybill/internal/migrate, which need PostgreSQL or SQLite.
// They live apart from the package so that importers of the packages that link migrate never resolve the modules they use.
package migrate
