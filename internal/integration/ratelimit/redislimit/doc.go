// Package redislimit holds the tests of github.com/waybillhq/waybill/ratelimit/redislimit that need Redis.
// They live apart from the package so that importers of redislimit never resolve the modules they use.
package redislimit
