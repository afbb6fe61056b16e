// Package sqlstore holds the tests of github.com/waybillhq/waybill/oauth/sqlstore that need
// PostgreSQL or SQLite.
// They live apart from the package so that importers of sqlstore never resolve the modules they use.
package sqlstore
