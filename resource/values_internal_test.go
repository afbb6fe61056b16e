package resource

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
)

// stdJSON is what appendJSON replaces: each value through encoding/json,
// timestamps first formatted in the layout the API writes them in.
func stdJSON(b []byte, v any) ([]byte, error) {
	if t, ok := v.(time.Time); ok {
		v = t.UTC().Format(query.SQLiteTimestampLayout)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// benchRecord is a record as a list answers it: a quotation of the
// reference server, its values normalized.
var benchRecord = []any{
	"0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b", "Q-2026-000123", "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5c",
	"2026-03-01", "2026-03-31", "sent", 1234.5, 12.75, int64(33), "Fragile: <handle> with care & \"keep dry\"",
	nil, true, time.Date(2026, 3, 1, 10, 4, 5, 123456000, time.UTC), time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC),
	"0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5d", "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5e",
}

func BenchmarkAppendJSON(b *testing.B) {
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = buf[:0]
			for _, v := range benchRecord {
				buf = appendJSON(buf, v)
				buf = append(buf, ',')
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = buf[:0]
			for _, v := range benchRecord {
				var err error
				if buf, err = stdJSON(buf, v); err != nil {
					b.Fatal(err)
				}
				buf = append(buf, ',')
			}
		}
	})
}

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, `null`},
		{"string", "plain", `"plain"`},
		{"escapes", "a\"b\\c\n\r\t\b\f\x00\x1f", `"a\"b\\c\n\r\t\b\f\u0000\u001f"`},
		{"html", "<a href='x'>&</a>", `"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`},
		{"line separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"invalid utf-8", "a\xffb", `"a\ufffdb"`},
		{"integer", int64(-42), `-42`},
		{"float", 12.5, `12.5`},
		{"small float", 1e-7, `1e-7`},
		{"large float", 1e21, `1e+21`},
		{"negative zero", math.Copysign(0, -1), `-0`},
		{"bool", true, `true`},
		{"timestamp", time.Date(2026, 3, 1, 10, 4, 5, 123456789, time.FixedZone("x", 3600)), `"2026-03-01T09:04:05.123456Z"`},
		{"other type", struct{}{}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, string(appendJSON(nil, tt.v)))
		})
	}
}

// FuzzAppendJSON checks that appendJSON writes every value byte for byte as
// encoding/json does.
func FuzzAppendJSON(f *testing.F) {
	f.Add("plain", int64(0), 0.0, false, int64(0))
	f.Add("a\"b\\c\n\x00<>&\u2028\u2029\xff\xfe", int64(-1), 1e-7, true, int64(1767225600123456000))
	f.Add("日本語 é", int64(math.MaxInt64), 1e21, false, int64(-1))
	f.Add("\x7f\x1f\b\f\ud7ff", int64(math.MinInt64), -123.456e-300, true, int64(0))
	f.Fuzz(func(t *testing.T, s string, i int64, x float64, ok bool, ns int64) {
		values := []any{s, i, ok, time.Unix(0, ns)}
		if !math.IsNaN(x) && !math.IsInf(x, 0) { // encoding/json refuses them
			values = append(values, x)
		}
		for _, v := range values {
			want, err := stdJSON(nil, v)
			require.NoError(t, err)
			require.Equal(t, string(want), string(appendJSON(nil, v)), "%T %#v", v, v)
		}
		require.Equal(t, string(appendString(nil, s)), string(appendString(nil, []byte(s))), "a string as bytes")

		// appendValue, the lists' path, writes what normalize then
		// appendJSON write, or fails where they fail, for every type and
		// every kind of value a driver scans.
		scanned := []any{nil, s, []byte(s), i, x, ok, time.Unix(0, ns), time.Unix(0, ns).In(time.FixedZone("x", -7*3600)), strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatInt(i, 10)}
		for _, typ := range []query.Type{query.String, query.UUID, query.Enum, query.Integer, query.Number, query.Boolean, query.Date, query.Timestamp} {
			for _, v := range scanned {
				got, gotErr := appendValue([]byte("x"), typ, v)
				n, wantErr := normalize(typ, v)
				if wantErr != nil {
					require.Error(t, gotErr, "%v %T %#v", typ, v, v)
					continue
				}
				require.NoError(t, gotErr, "%v %T %#v", typ, v, v)
				require.Equal(t, "x"+string(appendJSON(nil, n)), string(got), "%v %T %#v", typ, v, v)
			}
		}
	})
}

// appendTimestamp writes what AppendFormat writes, fast for the years 0
// to 9999 and through AppendFormat for the others.
func TestAppendTimestamp(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 11, 27, 1, 2, 3, 4000, time.UTC),
		time.Date(2026, 11, 27, 23, 59, 59, 999999999, time.FixedZone("x", -7*3600)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 12, 0, 0, 0, time.UTC),
		{},
	} {
		want := ts.UTC().Format(query.SQLiteTimestampLayout)
		assert.Equal(t, want, string(appendTimestamp([]byte("x"), ts))[1:], "%v", ts)
	}
}
