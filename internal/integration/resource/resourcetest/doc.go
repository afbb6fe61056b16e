// Package resourcetest holds the tests of github.com/waybillhq/waybill/resource/resourcetest that need
// SQLite. They live apart from the package so that importers of resourcetest never resolve the modules
// they use.
package resourcetest
