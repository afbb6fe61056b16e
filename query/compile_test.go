package query_test

import (
	"testing"
	"time"

	"github.com/waybillhq/waybill/query"
)

func TestScanTimestamp(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	for _, tc := range []struct {
		name string
		in   any
		want time.Time
		err  bool
	}{
		{"PostgreSQL", at.In(time.FixedZone("CET", 3600)), at, false},
		{"SQLite", query.SQLite.Timestamp(at), at, false},
		{"SQLite bytes", []byte(query.SQLite.Timestamp(at).(string)), at, false},
		{"RFC 3339 with an offset", "2026-11-24T02:02:03.456789+01:00", at, false},
		{"NULL", nil, time.Time{}, false},
		{"not a timestamp", "yesterday", time.Time{}, true},
		{"another type", int64(7), time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := query.ScanTimestamp(tc.in)
			if tc.err {
				if err == nil {
					t.Errorf("ScanTimestamp(%#v) = %v, nil; want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ScanTimestamp(%#v) = %v, want no error", tc.in, err)
			}
			if !got.Equal(tc.want) {
				t.Errorf("ScanTimestamp(%#v) = %v, want %v", tc.in, got, tc.want)
			}
			if !got.IsZero() && got.Location() != time.UTC {
				t.Errorf("ScanTimestamp(%#v) is in %v, want UTC", tc.in, got.Location())
			}
		})
	}
}
