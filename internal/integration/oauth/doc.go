// Package oauth holds the tests of github.com/waybillhq/waybill/oauth that need
// PostgreSQL, SQLite or a browser (Chromium, driven with chromedp).
// They live apart from the package so that importers of oauth never resolve the modules they use.
package oauth
