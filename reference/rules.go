package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/resource"
)

// The domain rules of the resources (resources.go), as resource.Hooks that
// resource.Combine chains. Each rule refuses a write with invalid_create on
// POST and invalid_update on PATCH, naming the field.

// hook is the shape of every hook.
type hook = func(ctx context.Context, tx *sql.Tx, w *resource.Write) error

// onWrite returns hooks that run f before every create and update.
func onWrite(f hook) resource.Hooks {
	return resource.Hooks{BeforeCreate: f, BeforeUpdate: f}
}

// invalid returns the error of a refused write: invalid_create on create,
// invalid_update on update.
func invalid(w *resource.Write, format string, args ...any) error {
	if w.Current == nil {
		return apierrors.InvalidCreate(format, args...)
	}
	return apierrors.InvalidUpdate(format, args...)
}

// defaults returns hooks that give a new record the value of values for
// every field it does not set (or sets to null).
func defaults(values resource.Record) resource.Hooks {
	return resource.Hooks{BeforeCreate: func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		for field, v := range values {
			if w.Changes[field] == nil {
				w.Changes[field] = v
			}
		}
		return nil
	}}
}

// text returns hooks that trim the surrounding space of the string fields
// that a write sets and refuse a value that is empty after it.
func text(fields ...string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		for _, field := range fields {
			s, ok := w.Changes[field].(string)
			if !ok {
				continue
			}
			s = strings.TrimSpace(s)
			if s == "" {
				return invalid(w, "%s: must not be empty", field)
			}
			w.Changes[field] = s
		}
		return nil
	})
}

// upperCase returns hooks that store the string fields a write sets
// trimmed and in upper case.
func upperCase(fields ...string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		for _, field := range fields {
			if s, ok := w.Changes[field].(string); ok {
				w.Changes[field] = strings.ToUpper(strings.TrimSpace(s))
			}
		}
		return nil
	})
}

// emailAddress returns hooks that trim field and require it to be empty or
// a bare email address.
func emailAddress(field string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		s, ok := w.Changes[field].(string)
		if !ok {
			return nil
		}
		s = strings.TrimSpace(s)
		if s != "" && !validEmail(s) {
			return invalid(w, "%s: %q is not an email address", field, s)
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
	return matching(field, currencyPattern, "an ISO 4217 currency code: three upper-case letters, e.g. EUR")
}

// countryCode returns hooks that require field to be an ISO 3166-1 alpha-2
// code: two upper-case letters.
func countryCode(field string) resource.Hooks {
	return matching(field, countryPattern, "an ISO 3166-1 alpha-2 country code: two upper-case letters, e.g. DE")
}

// matching returns hooks that require the string field, when a write sets
// it, to match re; want says what it must be.
func matching(field string, re *regexp.Regexp, want string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		if s, ok := w.Changes[field].(string); ok && !re.MatchString(s) {
			return invalid(w, "%s: %q is not %s", field, s, want)
		}
		return nil
	})
}

// rounded returns hooks that round the Number fields a write sets to the
// decimals their columns keep (scales[field]), so that SQLite, which keeps
// a double, holds what PostgreSQL's numeric holds.
func rounded(scales map[string]int) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		for field, scale := range scales {
			if v, ok := w.Changes[field].(float64); ok {
				w.Changes[field] = round(v, scale)
			}
		}
		return nil
	})
}

// round returns v rounded to scale decimals, halves away from zero, as
// PostgreSQL rounds into a numeric column: in decimal, from the shortest
// text of v (so 1.005 rounds to 1.01, as the client wrote it, although
// the double nearest 1.005 is slightly below it).
func round(v float64, scale int) float64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok {
		return v // NaN or an infinity: the field's bounds refuse them
	}
	f, err := strconv.ParseFloat(r.FloatString(scale), 64)
	if err != nil {
		return v
	}
	return f
}

// notBefore returns hooks that refuse a write after which the field later
// holds a value before the one of the field earlier, both being set. Only
// writes that set one of the two are checked, so a record stored before the
// rule never blocks an unrelated change. Dates compare as YYYY-MM-DD text,
// timestamps in time, strings (postal codes) as text.
func notBefore(later, earlier string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		_, setLater := w.Changes[later]
		_, setEarlier := w.Changes[earlier]
		if !setLater && !setEarlier {
			return nil
		}
		a, b := w.Value(later), w.Value(earlier)
		if a == nil || b == nil {
			return nil
		}
		c, ok := compare(a, b)
		if ok && c < 0 {
			return invalid(w, "%s: %s is before %s %s", later, show(a), earlier, show(b))
		}
		return nil
	})
}

// compare orders two values of one field: strings (dates, text) as text,
// times in time. A time and a string compare as dates.
func compare(a, b any) (int, bool) {
	switch a := a.(type) {
	case string:
		switch b := b.(type) {
		case string:
			return strings.Compare(a, b), true
		case time.Time:
			return strings.Compare(a, b.UTC().Format(time.DateOnly)), true
		}
	case time.Time:
		switch b := b.(type) {
		case time.Time:
			return a.Compare(b), true
		case string:
			return strings.Compare(a.UTC().Format(time.DateOnly), b), true
		}
	}
	return 0, false
}

// show formats a value for an error message.
func show(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// number returns v as a float64: the Go type of Number values, or an
// integer or decimal text as a store may return them.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case []byte:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	}
	return 0, false
}

// sumOf returns hooks that keep the money field total equal to the sum of
// parts (to the cent): a write that sets total must set it to the sum; one
// that sets a part and not total gets total computed.
func sumOf(total string, parts ...string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		touched := w.Current == nil
		for _, p := range parts {
			if _, ok := w.Changes[p]; ok {
				touched = true
			}
		}
		given, setTotal := w.Changes[total]
		if !touched && !setTotal {
			return nil
		}
		sum := 0.0
		for _, p := range parts {
			v, _ := number(w.Value(p))
			sum += v
		}
		sum = round(sum, 2)
		if !setTotal || given == nil {
			w.Changes[total] = sum
			return nil
		}
		t, _ := number(given)
		if math.Abs(t-sum) >= 0.005 {
			return invalid(w, "%s: %s is not %s (%s)", total, strconv.FormatFloat(t, 'f', -1, 64),
				strings.Join(parts, " + "), strconv.FormatFloat(sum, 'f', 2, 64))
		}
		w.Changes[total] = sum
		return nil
	})
}

// stampOnStatus returns hooks that set the Timestamp field stamp to the
// time of the write when the Enum field status moves to state, unless the
// write sets stamp itself or the record has one already.
func stampOnStatus(status, state, stamp string) resource.Hooks {
	return onWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
		if to, _ := w.Changes[status].(string); to != state {
			return nil
		}
		if from, _ := w.Current[status].(string); from == state {
			return nil
		}
		if _, ok := w.Changes[stamp]; ok || w.Current[stamp] != nil {
			return nil
		}
		w.Changes[stamp] = time.Now().UTC().Truncate(time.Microsecond)
		return nil
	})
}

// lockedUnless returns hooks that freeze a record once its Enum field
// status has left state: an update may then change the status only, and
// the record can no longer be deleted. An issued invoice is a legal
// document: it is cancelled, not edited or removed.
func lockedUnless(status, state string) resource.Hooks {
	return resource.Hooks{
		BeforeUpdate: func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
			current, _ := w.Current[status].(string)
			if current == state {
				return nil
			}
			for field := range w.Changes {
				if field != status {
					return apierrors.InvalidUpdate("%s: a record that is %s can only change its %s", field, current, status)
				}
			}
			return nil
		},
		BeforeDelete: func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
			if current, _ := w.Current[status].(string); current != state {
				return apierrors.InvalidRequest("a record that is %s cannot be deleted; only a %s one can", current, state)
			}
			return nil
		},
	}
}
