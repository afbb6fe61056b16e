package query_test

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/internal/querytest"
	"github.com/waybillhq/waybill/query"
)

// The cursor fixtures shared with sqlbuild's tests.
var (
	cursorKey    = querytest.CursorKey
	cursorSchema = querytest.CursorSchema
	cursorFor    = querytest.CursorFor
)

const (
	anID     = "0a1b2c3d-0000-4000-8000-00000000abcd"
	wantBad  = "the cursor is not valid"
	wantElse = "the cursor does not belong to this query"
)

func TestCursorRefused(t *testing.T) {
	s := cursorSchema()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	good := cursorFor(t, s, "filter=status:eq:draft&sort=created_at:asc", at, anID)
	raw, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatalf("a cursor is not base64url: %q: %v", good, err)
	}
	reencode := func(change func([]byte)) string {
		b := append([]byte(nil), raw...)
		change(b)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	other := cursorSchema()
	other.Name = "other_items"
	otherKey := cursorSchema()
	otherKey.CursorKey = []byte("another key that is 32 bytes long")
	noKey := testSchema()

	cases := []struct {
		name   string
		schema *query.Schema
		query  string
		want   string
	}{
		{"after with offset", s, "after=" + good + "&offset=0", "after and offset cannot be combined"},
		{"after with offset, offset first", s, "offset=10&after=x", "drop offset"},
		{"no cursor key", noKey, "after=" + good, "this list pages with offset, not with cursors"},
		{"empty", s, "after=", "the cursor is empty"},
		{"twice", s, "after=" + good + "&after=" + good, "after may be given once"},
		{"too long", s, "after=" + strings.Repeat("A", query.MaxCursorLength+1), "longer than 1024 bytes"},
		{"not base64url", s, "after=" + url.QueryEscape("a+b/c=="), wantBad},
		{"padding", s, "after=" + good + "%3D", wantBad},
		{"newline", s, "after=" + good[:10] + "%0A" + good[10:] + "&filter=status:eq:draft&sort=created_at:asc", wantBad},
		{"truncated", s, "filter=status:eq:draft&sort=created_at:asc&after=" + good[:len(good)-3], wantBad},
		{"cut to the overhead", s, "filter=status:eq:draft&sort=created_at:asc&after=" + good[:20], wantBad},
		{"extra byte", s, "filter=status:eq:draft&sort=created_at:asc&after=" + reencode(func([]byte) {}) + "AA", wantBad},
		{"position changed", s, "filter=status:eq:draft&sort=created_at:asc&after=" + reencode(func(b []byte) { b[12] ^= 1 }), wantBad},
		{"tag changed", s, "filter=status:eq:draft&sort=created_at:asc&after=" + reencode(func(b []byte) { b[len(b)-1] ^= 0x80 }), wantBad},
		{"other version", s, "filter=status:eq:draft&sort=created_at:asc&after=" + reencode(func(b []byte) { b[0] = 2 }), "another version"},
		{"other filter value", s, "filter=status:eq:sent&sort=created_at:asc&after=" + good, wantElse},
		{"filter dropped", s, "sort=created_at:asc&after=" + good, wantElse},
		{"filter added", s, "filter=status:eq:draft&filter=active:eq:true&sort=created_at:asc&after=" + good, wantElse},
		{"other operator", s, "filter=status:ne:draft&sort=created_at:asc&after=" + good, wantElse},
		{"other direction", s, "filter=status:eq:draft&sort=created_at:desc&after=" + good, wantElse},
		{"other sort key", s, "filter=status:eq:draft&sort=packages:asc&after=" + good, wantElse},
		{"default sort instead", s, "filter=status:eq:draft&after=" + good, wantElse},
		{"other schema", other, "filter=status:eq:draft&sort=created_at:asc&after=" + good, wantElse},
		{"other key", otherKey, "filter=status:eq:draft&sort=created_at:asc&after=" + good, wantBad},
		{"unknown parameter names after", s, "page=2", "a list takes limit, offset, after, sort and filter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.schema.ParseQuery(tc.query)
			if q != nil {
				t.Errorf("ParseQuery(%q) = %+v with the error, want a nil query", tc.query, q)
			}
			checkInvalid(t, err, tc.want)
		})
	}

	t.Run("every character flipped", func(t *testing.T) {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		for i := range good {
			j := strings.IndexByte(alphabet, good[i])
			if j < 0 {
				t.Fatalf("cursor %q holds %q at %d, not a base64url character", good, good[i], i)
			}
			for _, delta := range []int{1, 32} {
				bad := good[:i] + string(alphabet[(j+delta)%64]) + good[i+1:]
				_, err := s.ParseQuery("filter=status:eq:draft&sort=created_at:asc&after=" + bad)
				checkInvalid(t, err, "start again without after")
			}
		}
	})

	t.Run("accepted", func(t *testing.T) {
		for _, raw := range []string{
			"filter=status:eq:draft&sort=created_at:asc&after=" + good,
			"filter=status:eq:draft&sort=created_at:asc&limit=7&after=" + good, // the limit may change
		} {
			q := mustParse(t, s, raw)
			checkEqual(t, fmt.Sprintf("ParseQuery(%q).After", raw), q.After, []any{at, anID})
		}
		two := cursorFor(t, s, "filter=status:eq:draft&filter=active:eq:true&sort=packages:desc", int64(3), anID)
		raw := "filter=active:eq:true&filter=status:eq:draft&sort=packages:desc&after=" + two
		q, err := s.ParseQuery(raw)
		if err != nil {
			t.Fatalf("ParseQuery(%q) = %v, want no error: the order of the filters does not matter", raw, err)
		}
		checkEqual(t, "After", q.After, []any{int64(3), anID})
	})
}

// TestCursorRoundTrip checks that every field type, in the Go types that
// Filter.Values documents and in those the drivers scan into an any, comes
// back from a cursor as the documented Go type and the same value.
func TestCursorRoundTrip(t *testing.T) {
	s := &query.Schema{
		Name:      "every_type",
		CursorKey: cursorKey,
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Sortable: true},
			{Name: "u", Type: query.UUID, Sortable: true, Nullable: true},
			{Name: "s", Type: query.String, Sortable: true, Nullable: true},
			{Name: "e", Type: query.Enum, Values: []string{"draft", "sent"}, Sortable: true},
			{Name: "i", Type: query.Integer, Sortable: true, Nullable: true},
			{Name: "n", Type: query.Number, Sortable: true, Nullable: true},
			{Name: "d", Type: query.Date, Sortable: true, Nullable: true},
			{Name: "ts", Type: query.Timestamp, Sortable: true, Nullable: true},
			{Name: "b", Type: query.Boolean, Sortable: true, Nullable: true},
		},
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
	paris := time.FixedZone("CET", 3600)
	micro := time.Date(2026, 3, 29, 1, 59, 59, 999999000, time.UTC)
	cases := []struct {
		field string
		in    any
		want  any
	}{
		{"u", "0A1B2C3D-0000-4000-8000-00000000ABCD", anID},
		{"u", []byte(anID), anID},
		{"u", "ffffffff-ffff-ffff-ffff-ffffffffffff", "ffffffff-ffff-ffff-ffff-ffffffffffff"},
		{"u", nil, nil},
		{"s", "", ""},
		{"s", "héllo, wörld \"quoted\" \x00\n", "héllo, wörld \"quoted\" \x00\n"},
		{"s", []byte("bytes"), "bytes"},
		{"s", nil, nil},
		{"e", "sent", "sent"},
		{"e", "retired", "retired"}, // a value the schema no longer lists still pages
		{"i", int64(math.MinInt64), int64(math.MinInt64)},
		{"i", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"i", 0, int64(0)},
		{"i", int32(-7), int64(-7)},
		{"i", uint8(200), int64(200)},
		{"i", nil, nil},
		{"n", 12.345, 12.345},
		{"n", 0.1, 0.1},
		{"n", -1e300, -1e300},
		{"n", math.Inf(1), math.Inf(1)},
		{"n", float32(2.5), 2.5},
		{"n", int64(3), 3.0},
		{"n", "12.345", 12.345},     // PostgreSQL numeric, pgx
		{"n", []byte("0.100"), 0.1}, // numeric as bytes
		{"n", nil, nil},
		{"d", time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)},
		{"d", time.Date(2026, 2, 28, 23, 30, 0, 0, paris), time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)},
		{"d", "1969-12-31", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"d", "0001-01-01", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"d", "9999-12-31", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"d", nil, nil},
		{"ts", micro, micro},
		{"ts", micro.In(paris), micro},
		{"ts", micro.Add(999), micro}, // nanoseconds beyond the microsecond are dropped
		{"ts", time.Date(1900, 1, 1, 0, 0, 0, 1000, time.UTC), time.Date(1900, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{"ts", "2026-03-29T01:59:59.999999Z", micro},      // SQLite's text
		{"ts", "2026-03-29T03:59:59.999999+02:00", micro}, // RFC 3339
		{"ts", nil, nil},
		{"b", true, true},
		{"b", false, false},
		{"b", int64(1), true}, // SQLite's INTEGER
		{"b", int64(0), false},
		{"b", nil, nil},
	}
	for _, tc := range cases {
		for _, dir := range []string{"asc", "desc"} {
			raw := "sort=" + tc.field + ":" + dir
			c := cursorFor(t, s, raw, tc.in, anID)
			if len(c) > 96 {
				t.Errorf("%s %#v: cursor %q is %d bytes, want at most 96", raw, tc.in, c, len(c))
			}
			q, err := s.ParseQuery(raw + "&after=" + c)
			if err != nil {
				t.Fatalf("%s %#v: ParseQuery of its cursor = %v, want no error", raw, tc.in, err)
			}
			checkEqual(t, fmt.Sprintf("%s %#v: After", raw, tc.in), q.After, []any{tc.want, anID})

			again, err := q.NextCursor(q.After)
			if err != nil {
				t.Fatalf("%s %#v: NextCursor of the decoded position = %v", raw, tc.in, err)
			}
			if again != c {
				t.Errorf("%s %#v: the decoded position encodes to %q, want the same cursor %q", raw, tc.in, again, c)
			}
		}
	}

	t.Run("every key at once", func(t *testing.T) {
		raw := "sort=e:desc,u,s:desc,i,n:desc,d,ts:desc,b"
		last := []any{"draft", nil, "x", int64(-1), 2.5, nil, micro, false, anID}
		c := cursorFor(t, s, raw, last...)
		q := mustParse(t, s, raw+"&after="+c)
		checkEqual(t, "After", q.After, last)
		t.Logf("cursor of 9 keys: %d bytes", len(c))
	})
}

func TestNextCursorErrors(t *testing.T) {
	s := cursorSchema()
	q := mustParse(t, s, "sort=day:asc")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		q    *query.Query
		last []any
		want string
	}{
		{"too few values", q, []any{at}, "takes 2 values, one per sort key, not 1"},
		{"too many values", q, []any{at, anID, anID}, "not 3"},
		{"NULL on a field that is not nullable", q, []any{at, nil}, `"id" is NULL but its field is not Nullable`},
		{"wrong type", q, []any{at, 5}, "a int is not a uuid"},
		{"not a UUID", q, []any{at, "nope"}, `"nope" is not a UUID`},
		{"not a date", q, []any{"2026-02-30", anID}, "is not a date"},
		{"date out of range", q, []any{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), anID}, "out of the years 0 to 9999"},
		{"not from Parse", &query.Query{Limit: 1, Sort: q.Sort}, []any{at, anID}, "needs a query made by Schema.Parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.q.NextCursor(tc.last)
			checkErrorContains(t, err, tc.want)
			if err != nil && !strings.HasPrefix(err.Error(), "query: ") {
				t.Errorf("NextCursor(%#v) = %q, want the prefix \"query: \"", tc.last, err)
			}
		})
	}

	n := mustParse(t, s, "sort=weight:asc")
	_, err := n.NextCursor([]any{math.NaN(), anID})
	checkErrorContains(t, err, "NaN")
	_, err = n.NextCursor([]any{"twelve", anID})
	checkErrorContains(t, err, "a string is not a number")

	long := mustParse(t, s, "sort=comment:asc")
	c, err := long.NextCursor([]any{strings.Repeat("x", 700), anID})
	if err != nil {
		t.Errorf("NextCursor of a 700-byte comment = %v, want no error: 700 bytes fit", err)
	}
	if len(c) > query.MaxCursorLength {
		t.Errorf("the cursor of a 700-byte comment is %d bytes, over MaxCursorLength %d", len(c), query.MaxCursorLength)
	}
	_, err = long.NextCursor([]any{strings.Repeat("x", 800), anID})
	checkErrorContains(t, err, "over MaxCursorLength")

	noKey := mustParse(t, testSchema(), "")
	_, err = noKey.NextCursor([]any{at, anID})
	checkErrorContains(t, err, "no CursorKey")
}

func TestCursorKeyValidated(t *testing.T) {
	s := cursorSchema()
	s.CursorKey = []byte("short")
	checkErrorContains(t, s.Validate(), "the cursor key is 5 bytes; it needs at least 32")
	s.CursorKey = []byte{}
	if err := s.Validate(); err == nil {
		t.Errorf("Validate() with an empty CursorKey = nil, want an error: an empty key is no key")
	}
}
