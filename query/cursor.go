package query

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Bounds of cursors.
const (
	// MaxCursorLength is the longest after value accepted, in bytes of
	// text, checked before anything is decoded; NextCursor refuses to make
	// a longer one.
	MaxCursorLength = 1024
	// MinCursorKeyLength is the shortest Schema.CursorKey accepted.
	MinCursorKeyLength = 32
)

// The layout of a cursor, before base64url: a version byte, the first
// bytes of the query's shape digest (so that a foreign cursor gets its own
// message), the position, and a truncated HMAC-SHA256 over the full digest
// and everything before the tag.
const (
	cursorVersion   = 1
	fingerprintSize = 8
	tagSize         = 16
	cursorOverhead  = 1 + fingerprintSize + tagSize
)

var cursorEncoding = base64.RawURLEncoding.Strict()

// cursorDomain separates the digests of this package from any other use of
// the same key.
const cursorDomain = "waybill/query cursor v1\x00"

// The messages of refused cursors. They name the parameter and say what to
// do, since the client cannot see inside the cursor.
const (
	msgCursorInvalid = "after: the cursor is not valid: it was changed, cut short or not issued by this server; pass the next_cursor of the previous page as it is, or start again without after"
	msgCursorForeign = "after: the cursor does not belong to this query: it was issued for other filters, another sort or another list; repeat the filter and sort of the request that returned it, or start again without after"
)

// identity digests what of the schema a cursor depends on: its name, its
// tiebreaker and every field's name, column, type and nullability. A
// cursor of another schema that shares the key is refused by it.
func (s *Schema) identityDigest() [sha256.Size]byte {
	b := make([]byte, 0, 256)
	b = append(b, cursorDomain...)
	b = appendString(b, s.Name)
	b = appendString(b, s.tiebreaker())
	b = binary.AppendUvarint(b, uint64(len(s.Fields)))
	for i := range s.Fields {
		f := &s.Fields[i]
		b = appendString(b, f.Name)
		b = appendString(b, f.column())
		b = append(b, byte(f.Type), boolByte(f.Nullable))
	}
	return sha256.Sum256(b)
}

// digest returns the digest of the query's shape: the schema's identity,
// the sort and the filters with their values, the order of the filters
// aside (they are ANDed). The limit is not part of it, so a client may
// change the page size between pages.
func (q *Query) digest() [sha256.Size]byte {
	var stack [512]byte
	b := append(stack[:0], q.schema.identity[:]...)
	b = binary.AppendUvarint(b, uint64(len(q.Sort)))
	for _, o := range q.Sort {
		b = appendString(b, o.Field)
		b = append(b, boolByte(o.Desc))
	}
	b = binary.AppendUvarint(b, uint64(len(q.Filters)))
	switch len(q.Filters) {
	case 0:
	case 1:
		b = appendFilter(b, &q.Filters[0])
	default:
		encoded := make([][]byte, len(q.Filters))
		for i := range q.Filters {
			encoded[i] = appendFilter(nil, &q.Filters[i])
		}
		slices.SortFunc(encoded, bytes.Compare)
		for _, e := range encoded {
			b = append(b, e...)
		}
	}
	return sha256.Sum256(b)
}

// appendFilter appends an unambiguous encoding of f: every part is
// length-prefixed or of fixed size.
func appendFilter(b []byte, f *Filter) []byte {
	b = appendString(b, f.Field)
	b = appendString(b, string(f.Op))
	b = binary.AppendUvarint(b, uint64(len(f.Values)))
	for _, v := range f.Values {
		switch v := v.(type) {
		case string:
			b = appendString(append(b, 's'), v)
		case int64:
			b = binary.AppendVarint(append(b, 'i'), v)
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(v))
		case time.Time:
			b = binary.AppendVarint(append(b, 't'), v.Unix())
			b = binary.AppendUvarint(b, uint64(v.Nanosecond()))
		case bool:
			b = append(b, 'b', boolByte(v))
		default:
			b = appendString(append(b, '?'), fmt.Sprint(v))
		}
	}
	return b
}

// tag returns the HMAC of a cursor's body under the schema's key, bound to
// the full digest of the query's shape, cut to tagSize bytes. The keyed
// hashes are pooled: keying one costs as much as the rest of the tag.
func (s *Schema) tag(digest *[sha256.Size]byte, body []byte) []byte {
	m, _ := s.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.CursorKey)
	}
	m.Write(digest[:])
	m.Write(body)
	sum := m.Sum(make([]byte, 0, sha256.Size))[:tagSize]
	m.Reset()
	s.macs.Put(m)
	return sum
}

// decodeCursor checks the text of an after parameter against q, which
// holds the parsed sort and filters, and returns the position it holds.
// Every refusal is an invalid_request error.
func (q *Query) decodeCursor(text string) ([]any, error) {
	s := q.schema
	switch {
	case s.CursorKey == nil:
		return nil, apierrors.InvalidRequest("after: this list pages with offset, not with cursors")
	case text == "":
		return nil, apierrors.InvalidRequest("after: the cursor is empty; pass the next_cursor of the previous page, or leave after out for the first page")
	case len(text) > MaxCursorLength:
		return nil, apierrors.InvalidRequest("after: the cursor is longer than %d bytes, longer than any this server issues; start again without after", MaxCursorLength)
	case strings.ContainsAny(text, "\r\n"):
		return nil, apierrors.InvalidRequest(msgCursorInvalid)
	}
	raw, err := cursorEncoding.DecodeString(text)
	if err != nil || len(raw) < cursorOverhead {
		return nil, apierrors.InvalidRequest(msgCursorInvalid)
	}
	if raw[0] != cursorVersion {
		return nil, apierrors.InvalidRequest("after: the cursor was issued by another version of this server; start again without after")
	}
	digest := q.digest()
	body, tag := raw[:len(raw)-tagSize], raw[len(raw)-tagSize:]
	if !hmac.Equal(tag, s.tag(&digest, body)) {
		if !bytes.Equal(body[1:1+fingerprintSize], digest[:fingerprintSize]) {
			return nil, apierrors.InvalidRequest(msgCursorForeign)
		}
		return nil, apierrors.InvalidRequest(msgCursorInvalid)
	}
	after, err := decodePosition(q.Sort, body[1+fingerprintSize:])
	if err != nil {
		// Only this server makes authentic cursors, so this is a cursor of an
		// older declaration of the schema or a bug; either way, start again.
		return nil, apierrors.InvalidRequest(msgCursorInvalid)
	}
	return after, nil
}

// NextCursor returns the cursor of the page after the row whose sort keys
// hold last: one value per key of q.Sort, the tiebreaker included, in that
// order, nil for NULL (of a Nullable field only). A client passes it back
// as after=<cursor>, with the same filters and sort, for the rows that come
// next.
//
// Each value may have the Go type that Filter.Values documents for its
// field's type, or the type database/sql scans the column into an any
// with the PostgreSQL (pgx) and SQLite drivers: a UUID, String or Enum as
// a string or []byte; an Integer as any Go integer; a Number as a float or
// as decimal text (PostgreSQL's numeric); a Date as a time.Time (its year,
// month and day) or YYYY-MM-DD text; a Timestamp as a time.Time or text in
// SQLiteTimestampLayout or RFC 3339, kept to the microsecond (the
// precision of both databases; finer digits are dropped); a Boolean as a
// bool or the integers 0 and 1. A Number is a float64, as its filters are:
// a numeric column with more significant digits than a float64 holds may
// skip or repeat rows at a page boundary.
//
// A page shorter than q.Limit is the last one and needs no cursor; to know
// whether a full page is the last, read one row more than q.Limit and make
// the cursor from the q.Limit-th row when that row exists.
//
// The error is a plain Go error, for the server and not the client: q was
// not made by Schema.Parse, the schema has no CursorKey, a value is
// missing, NULL where the field is not Nullable or of another type, or the
// cursor would be longer than MaxCursorLength (a sort on long strings).
func (q *Query) NextCursor(last []any) (string, error) {
	s := q.schema
	if s == nil {
		return "", errors.New("query: NextCursor needs a query made by Schema.Parse")
	}
	if s.CursorKey == nil {
		return "", errors.New("query: the schema has no CursorKey, so it makes no cursors")
	}
	if len(last) != len(q.Sort) {
		return "", fmt.Errorf("query: NextCursor takes %d values, one per sort key, not %d", len(q.Sort), len(last))
	}
	digest := q.digest()
	body := make([]byte, 0, 96)
	body = append(body, cursorVersion)
	body = append(body, digest[:fingerprintSize]...)
	body, err := appendPosition(body, q.Sort, last)
	if err != nil {
		return "", err
	}
	body = append(body, s.tag(&digest, body)...)
	if n := cursorEncoding.EncodedLen(len(body)); n > MaxCursorLength {
		return "", fmt.Errorf("query: the cursor would be %d bytes, over MaxCursorLength (%d); the sort keys hold too long a value", n, MaxCursorLength)
	}
	return cursorEncoding.EncodeToString(body), nil
}

// The range of dates and timestamps a cursor holds: years 0 to 9999, the
// years that RFC 3339 and SQLiteTimestampLayout can write.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	minDay  = minTime.Unix() / 86400
	maxDay  = maxTime.Unix()/86400 - 1
)

var errShort = errors.New("query: the cursor's position is cut short or out of range")

// appendPosition appends the values of the sort keys: for a Nullable key a
// byte 0 (NULL) or 1 first, then the value: a UUID in 16 bytes, a string
// length-prefixed, an integer as a varint, a number in 8 bytes, a date as a
// varint of days since 1970-01-01, a timestamp as a varint of microseconds
// since the Unix epoch, a boolean in one byte.
func appendPosition(b []byte, sort []Order, values []any) ([]byte, error) {
	for i, o := range sort {
		v := values[i]
		if v == nil {
			if !o.nullable {
				return nil, fmt.Errorf("query: sort key %q is NULL but its field is not Nullable", o.Field)
			}
			b = append(b, 0)
			continue
		}
		if o.nullable {
			b = append(b, 1)
		}
		var err error
		if b, err = appendValue(b, o.typ, v); err != nil {
			return nil, fmt.Errorf("query: sort key %q: %w", o.Field, err)
		}
	}
	return b, nil
}

func appendValue(b []byte, t Type, v any) ([]byte, error) {
	switch t {
	case UUID:
		s, ok := text(v)
		if !ok {
			break
		}
		u, ok := CanonicalUUID(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a UUID", s)
		}
		return appendUUID(b, u), nil
	case String, Enum:
		if s, ok := text(v); ok {
			return appendString(b, s), nil
		}
	case Integer:
		if n, ok := toInt64(v); ok {
			return binary.AppendVarint(b, n), nil
		}
	case Number:
		f, ok := toFloat64(v)
		if !ok {
			break
		}
		if math.IsNaN(f) {
			return nil, errors.New("NaN has no place in the order")
		}
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f)), nil
	case Date:
		var day time.Time
		switch v := v.(type) {
		case time.Time:
			day = time.Date(v.Year(), v.Month(), v.Day(), 0, 0, 0, 0, time.UTC)
		default:
			s, ok := text(v)
			if !ok {
				return nil, fmt.Errorf("a %T is not a date", v)
			}
			var err error
			if day, err = time.Parse(time.DateOnly, s); err != nil {
				return nil, fmt.Errorf("%q is not a date", s)
			}
		}
		if day.Before(minTime) || !day.Before(maxTime) {
			return nil, fmt.Errorf("%v is out of the years 0 to 9999", day)
		}
		return binary.AppendVarint(b, day.Unix()/86400), nil
	case Timestamp:
		var ts time.Time
		switch v := v.(type) {
		case time.Time:
			ts = v
		default:
			s, ok := text(v)
			if !ok {
				return nil, fmt.Errorf("a %T is not a timestamp", v)
			}
			var err error
			if ts, err = time.Parse(SQLiteTimestampLayout, s); err != nil {
				if ts, err = time.Parse(time.RFC3339Nano, s); err != nil {
					return nil, fmt.Errorf("%q is not a timestamp", s)
				}
			}
		}
		if ts.Before(minTime) || !ts.Before(maxTime) {
			return nil, fmt.Errorf("%v is out of the years 0 to 9999", ts)
		}
		return binary.AppendVarint(b, ts.UnixMicro()), nil
	case Boolean:
		switch v := v.(type) {
		case bool:
			return append(b, boolByte(v)), nil
		default:
			if n, ok := toInt64(v); ok && (n == 0 || n == 1) {
				return append(b, byte(n)), nil
			}
		}
	default:
		return nil, fmt.Errorf("unknown field type %v", t)
	}
	return nil, fmt.Errorf("a %T is not a %v", v, t)
}

// decodePosition reads what appendPosition wrote for sort, every byte of
// it, and returns the values with the Go types of Filter.Values.
func decodePosition(sort []Order, b []byte) ([]any, error) {
	values := make([]any, len(sort))
	for i, o := range sort {
		if o.nullable {
			if len(b) == 0 || b[0] > 1 {
				return nil, errShort
			}
			null := b[0] == 0
			b = b[1:]
			if null {
				continue
			}
		}
		switch o.typ {
		case UUID:
			if len(b) < 16 {
				return nil, errShort
			}
			values[i] = formatUUID(b[:16])
			b = b[16:]
		case String, Enum:
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return nil, errShort
			}
			values[i] = string(b[k : k+int(n)])
			b = b[k+int(n):]
		case Integer:
			n, k := binary.Varint(b)
			if k <= 0 {
				return nil, errShort
			}
			values[i] = n
			b = b[k:]
		case Number:
			if len(b) < 8 {
				return nil, errShort
			}
			f := math.Float64frombits(binary.BigEndian.Uint64(b))
			if math.IsNaN(f) {
				return nil, errShort
			}
			values[i] = f
			b = b[8:]
		case Date:
			n, k := binary.Varint(b)
			if k <= 0 || n < minDay || n > maxDay {
				return nil, errShort
			}
			values[i] = time.Unix(n*86400, 0).UTC()
			b = b[k:]
		case Timestamp:
			n, k := binary.Varint(b)
			if k <= 0 || n < minTime.UnixMicro() || n >= maxTime.UnixMicro() {
				return nil, errShort
			}
			values[i] = time.UnixMicro(n).UTC()
			b = b[k:]
		case Boolean:
			if len(b) == 0 || b[0] > 1 {
				return nil, errShort
			}
			values[i] = b[0] == 1
			b = b[1:]
		default:
			return nil, fmt.Errorf("unknown field type %v", o.typ)
		}
	}
	if len(b) != 0 {
		return nil, errShort
	}
	return values, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// appendUUID appends the 16 bytes of u, a canonical lower-case UUID.
func appendUUID(b []byte, u string) []byte {
	for i := 0; i < len(u); i += 2 {
		if u[i] == '-' {
			i++
		}
		b = append(b, unhex(u[i])<<4|unhex(u[i+1]))
	}
	return b
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// formatUUID formats 16 bytes as a canonical lower-case UUID.
func formatUUID(b []byte) string {
	const digits = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range b[:16] {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = digits[c>>4], digits[c&15]
		j += 2
	}
	return string(s[:])
}

// text returns v as a string when it is a string or a []byte.
func text(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}

func toInt64(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int16:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint8:
		return int64(v), true
	case uint:
		if uint64(v) <= math.MaxInt64 {
			return int64(v), true
		}
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), true
		}
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	}
	if n, ok := toInt64(v); ok {
		return float64(n), true
	}
	if s, ok := text(v); ok {
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return 0, false
}
