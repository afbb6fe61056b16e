package main

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"time"

	"github.com/waybillhq/waybill/resource"
)

// The rules of the transport domain (resources.go), as resource.Hooks that
// resource.Combine chains with the generic ones of package resource
// (resource.Default, resource.Trim, resource.NotBefore, ...). Each rule
// refuses a write with invalid_create on POST and invalid_update on PATCH
// (resource.Write.Invalid), naming the field.

// round returns v rounded to scale decimals as PostgreSQL rounds into a
// numeric column (see resource.Round).
func round(v float64, scale int) float64 { return resource.Round(v, scale) }

// emailAddress returns hooks that trim field and require it to be empty or
// a bare email address.
func emailAddress(field string) resource.Hooks {
	return resource.OnWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		s, ok := w.Changes[field].(string)
		if !ok {
			return nil
		}
		s = strings.TrimSpace(s)
		if s != "" && !validEmail(s) {
			return w.Invalid("%s: %q is not an email address", field, s)
		}
		w.Changes[field] = s
		return nil
	})
}

var (
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	countryPattern  = regexp.MustCompile(`^[A-Z]{2}$`)
)

// currencyCode returns hooks that require field to be an ISO 4217 code:
// three upper-case letters.
func currencyCode(field string) resource.Hooks {
	return resource.Match(field, currencyPattern, "an ISO 4217 currency code: three upper-case letters, e.g. EUR")
}

// countryCode returns hooks that require field to be an ISO 3166-1 alpha-2
// code: two upper-case letters.
func countryCode(field string) resource.Hooks {
	return resource.Match(field, countryPattern, "an ISO 3166-1 alpha-2 country code: two upper-case letters, e.g. DE")
}

// stampOnStatus returns hooks that set the Timestamp field stamp to the
// time of the write when the Enum field status moves to state, unless the
// write sets stamp itself or the record has one already.
func stampOnStatus(status, state, stamp string) resource.Hooks {
	return resource.OnWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		if to, _ := w.Changes[status].(string); to != state {
			return nil
		}
		if from, _ := w.Current[status].(string); from == state {
			return nil
		}
		if _, ok := w.Changes[stamp]; ok || w.Current[stamp] != nil {
			return nil
		}
		w.Changes[stamp] = w.Time.UTC().Truncate(time.Microsecond)
		return nil
	})
}
