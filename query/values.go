package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseValues parses the value part of a filter for op on field f.
func parseValues(f *Field, op Op, raw string) ([]any, error) {
	switch op {
	case IsNull:
		b, ok := parseBool(raw)
		if !ok {
			return nil, fmt.Errorf("isnull takes true or false, not %s", quote(raw))
		}
		return []any{b}, nil
	case Like, ILike:
		return []any{raw}, nil
	case In:
		items, err := splitList(raw)
		if err != nil {
			return nil, err
		}
		values := make([]any, len(items))
		for i, item := range items {
			if values[i], err = parseValue(f, item); err != nil {
				return nil, err
			}
		}
		return values, nil
	}
	v, err := parseValue(f, raw)
	if err != nil {
		return nil, err
	}
	return []any{v}, nil
}

// ParseValue parses s as a value of f's type, as a filter value is parsed,
// and returns it with the Go type that Filter.Values documents. The error
// says why s is no such value, quoting it.
func (f *Field) ParseValue(s string) (any, error) { return parseValue(f, s) }

// parseValue parses one value as f's type.
func parseValue(f *Field, s string) (any, error) {
	switch f.Type {
	case UUID:
		if u, ok := CanonicalUUID(s); ok {
			return u, nil
		}
		return nil, fmt.Errorf("%s is not a UUID", quote(s))
	case String:
		return s, nil
	case Enum:
		for _, v := range f.Values {
			if v == s {
				return v, nil
			}
		}
		return nil, fmt.Errorf("%s is not one of %s", quote(s), strings.Join(f.Values, ", "))
	case Integer:
		if integer(s) {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
		}
		return nil, fmt.Errorf("%s is not an integer", quote(s))
	case Number:
		if decimal(s) {
			if n, err := strconv.ParseFloat(s, 64); err == nil {
				return n, nil
			}
		}
		return nil, fmt.Errorf("%s is not a number", quote(s))
	case Date:
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t, nil
		}
		return nil, fmt.Errorf("%s is not a date (YYYY-MM-DD)", quote(s))
	case Timestamp:
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t.UTC(), nil
		}
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t, nil
		}
		hint := ""
		if strings.Contains(s, " ") {
			hint = "; a + in a query string must be sent as %2B"
		}
		return nil, fmt.Errorf("%s is not an RFC 3339 timestamp or a date%s", quote(s), hint)
	case Boolean:
		if b, ok := parseBool(s); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%s is not true or false", quote(s))
	}
	return nil, fmt.Errorf("field type %v cannot be filtered", f.Type)
}

func parseBool(s string) (bool, bool) {
	switch s {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// CanonicalUUID reports whether s is a UUID in the 8-4-4-4-12 hex form, in
// either case, and returns it in lower case, the form Waybill stores and
// compares. Other forms (braces, a urn:uuid: prefix, no hyphens) are
// refused.
func CanonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	lower := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			lower = false
		default:
			return "", false
		}
	}
	if lower {
		return s, true
	}
	return strings.ToLower(s), true
}

// integer reports whether s is an optional minus sign and decimal digits.
func integer(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && digits(s) == len(s)
}

// decimal reports whether s is a plain decimal number: an optional minus
// sign, digits, an optional fraction and an optional exponent. It refuses
// what strconv.ParseFloat also takes but no API client means: hex floats,
// underscores, Inf and NaN.
func decimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	n := digits(s)
	if n == 0 {
		return false
	}
	s = s[n:]
	if strings.HasPrefix(s, ".") {
		n = digits(s[1:])
		if n == 0 {
			return false
		}
		s = s[1+n:]
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		n = digits(s)
		if n == 0 {
			return false
		}
		s = s[n:]
	}
	return s == ""
}

// digits returns the number of leading ASCII digits of s.
func digits(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

var errEmptyList = errors.New("in needs at least one value")

// splitList splits the value of an in filter on commas. A value that starts
// with a double quote runs to the next lone double quote and may hold
// commas; a doubled quote inside it stands for one quote ("a ""b"", c").
// An unquoted empty value is an error: write "" for the empty string.
func splitList(s string) ([]string, error) {
	if s == "" {
		return nil, errEmptyList
	}
	items := make([]string, 0, strings.Count(s, ",")+1)
	for {
		var item string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			rest := s[1:]
			for {
				i := strings.IndexByte(rest, '"')
				if i < 0 {
					return nil, fmt.Errorf("in: a quoted value has no closing quote")
				}
				b.WriteString(rest[:i])
				rest = rest[i+1:]
				if !strings.HasPrefix(rest, `"`) {
					break
				}
				b.WriteByte('"')
				rest = rest[1:]
			}
			if rest != "" && rest[0] != ',' {
				return nil, fmt.Errorf("in: a quoted value must be followed by a comma or the end")
			}
			item, s = b.String(), rest
		} else {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				i = len(s)
			}
			item, s = s[:i], s[i:]
			if item == "" {
				return nil, fmt.Errorf(`in: empty value in the list; write "" for the empty string`)
			}
		}
		items = append(items, item)
		if len(items) > MaxInValues {
			return nil, fmt.Errorf("in takes at most %d values", MaxInValues)
		}
		if s == "" {
			return items, nil
		}
		s = s[1:] // the comma
		if s == "" {
			return nil, fmt.Errorf(`in: empty value at the end of the list; write "" for the empty string`)
		}
	}
}
