// Package webhook holds the tests of github.com/waybillhq/waybill/webhook that need PostgreSQL or SQLite.
// They live apart from the package so that importers of webhook never resolve the modules they use.
package webhook
