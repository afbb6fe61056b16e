package resource

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// The write rules below are the small vocabulary every service needs, as
// Hooks that Combine chains with the rules of its own domain. Each refuses
// a write with Write.Invalid: invalid_create on POST and invalid_update on
// PATCH, naming the field.

// Invalid returns the refusal of the write: invalid_create on create,
// invalid_update on update and delete, with the description of format and
// args (which should name the field).
func (w *Write) Invalid(format string, args ...any) error {
	if w.Current == nil {
		return apierrors.InvalidCreate(format, args...)
	}
	return apierrors.InvalidUpdate(format, args...)
}

// OnWrite returns hooks that run f before every create and update.
func OnWrite(f func(ctx context.Context, tx *sql.Tx, w *Write) error) Hooks {
	return Hooks{BeforeCreate: f, BeforeUpdate: f}
}

// Default returns hooks that give a new record the value of values for
// every field it does not set, or sets to null.
func Default(values Record) Hooks {
	return Hooks{BeforeCreate: func(_ context.Context, _ *sql.Tx, w *Write) error {
		for field, v := range values {
			if w.Changes[field] == nil {
				w.Changes[field] = v
			}
		}
		return nil
	}}
}

// Trim returns hooks that trim the surrounding space of the String fields
// a write sets, and refuse a value that is empty after it.
func Trim(fields ...string) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
		for _, field := range fields {
			s, ok := w.Changes[field].(string)
			if !ok {
				continue
			}
			s = strings.TrimSpace(s)
			if s == "" {
				return w.Invalid("%s: must not be empty", field)
			}
			w.Changes[field] = s
		}
		return nil
	})
}

// Upper returns hooks that store the String fields a write sets trimmed
// and in upper case: codes, plates, identifiers.
func Upper(fields ...string) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
		for _, field := range fields {
			if s, ok := w.Changes[field].(string); ok {
				w.Changes[field] = strings.ToUpper(strings.TrimSpace(s))
			}
		}
		return nil
	})
}

// Match returns hooks that require the String field, when a write sets it,
// to match re; want says what it must be ("a currency code: three
// upper-case letters").
func Match(field string, re *regexp.Regexp, want string) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
		if s, ok := w.Changes[field].(string); ok && !re.MatchString(s) {
			return w.Invalid("%s: %q is not %s", field, s, want)
		}
		return nil
	})
}

// Rounded returns hooks that round the Number fields a write sets to the
// decimals their columns keep (scales[field]), with Round, so that SQLite,
// which keeps a double, holds what PostgreSQL's numeric holds.
func Rounded(scales map[string]int) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
		for field, scale := range scales {
			if v, ok := w.Changes[field].(float64); ok {
				w.Changes[field] = Round(v, scale)
			}
		}
		return nil
	})
}

// Round returns v rounded to scale decimals, halves away from zero, as
// PostgreSQL rounds into a numeric column: in decimal, from the shortest
// text of v (so 1.005 rounds to 1.01, as the client wrote it, although the
// double nearest 1.005 is slightly below it). NaN and the infinities are
// returned as they are.
func Round(v float64, scale int) float64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok {
		return v
	}
	f, err := strconv.ParseFloat(r.FloatString(scale), 64)
	if err != nil {
		return v
	}
	return f
}

// NotBefore returns hooks that refuse a write after which the field later
// holds a value before the one of the field earlier, both being set. Only
// writes that set one of the two are checked, so that a record stored
// before the rule never blocks an unrelated change. Dates compare as
// YYYY-MM-DD text, timestamps in time, strings as text, and a timestamp
// with a date as dates.
func NotBefore(later, earlier string) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
		_, setLater := w.Changes[later]
		_, setEarlier := w.Changes[earlier]
		if !setLater && !setEarlier {
			return nil
		}
		a, b := w.Value(later), w.Value(earlier)
		if a == nil || b == nil {
			return nil
		}
		if c, ok := compareValues(a, b); ok && c < 0 {
			return w.Invalid("%s: %s is before %s %s", later, showValue(a), earlier, showValue(b))
		}
		return nil
	})
}

// compareValues orders two values of one field: strings (dates, text) as
// text, times in time, a time and a string as dates.
func compareValues(a, b any) (int, bool) {
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

// showValue formats a value for an error description.
func showValue(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// toNumber returns v as a float64: the Go type of Number values, an
// Integer's int64, or a decimal text.
func toNumber(v any) (float64, bool) {
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

// Sum returns hooks that keep the money field total equal to the sum of
// parts, to the cent: a write that sets total must set it to the sum (or
// null, to have it computed); a create, or an update that sets a part and
// not total, gets total computed.
func Sum(total string, parts ...string) Hooks {
	return OnWrite(func(_ context.Context, _ *sql.Tx, w *Write) error {
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
			v, _ := toNumber(w.Value(p))
			sum += v
		}
		sum = Round(sum, 2)
		if !setTotal || given == nil {
			w.Changes[total] = sum
			return nil
		}
		t, _ := toNumber(given)
		if math.Abs(t-sum) >= 0.005 {
			return w.Invalid("%s: %s is not %s (%s)", total, strconv.FormatFloat(t, 'f', -1, 64),
				strings.Join(parts, " + "), strconv.FormatFloat(sum, 'f', 2, 64))
		}
		w.Changes[total] = sum
		return nil
	})
}

// LockedUnless returns hooks that freeze a record once its Enum field
// status has left state: an update may then change the status only
// (invalid_update, naming the first other field in name order), and the
// record can no longer be deleted (400 invalid_request). An issued
// invoice, say, is cancelled, not edited or removed.
func LockedUnless(status, state string) Hooks {
	return Hooks{
		BeforeUpdate: func(_ context.Context, _ *sql.Tx, w *Write) error {
			current, _ := w.Current[status].(string)
			if current == state {
				return nil
			}
			for _, field := range slices.Sorted(maps.Keys(w.Changes)) {
				if field != status {
					return apierrors.InvalidUpdate("%s: a record that is %s can only change its %s", field, current, status)
				}
			}
			return nil
		},
		BeforeDelete: func(_ context.Context, _ *sql.Tx, w *Write) error {
			if current, _ := w.Current[status].(string); current != state {
				return apierrors.InvalidRequest("a record that is %s cannot be deleted; only a %s one can", current, state)
			}
			return nil
		},
	}
}
