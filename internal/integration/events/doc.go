// Package events holds the tests of github.com/waybillhq/waybill/events that need PostgreSQL or SQLite,
// or check the events with the CloudEvents SDK. They live apart from the package so that importers of
// events never resolve the modules they use.
package events
