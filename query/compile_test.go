package query_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.True(t, got.Equal(tc.want), "%v", got)
			if !got.IsZero() {
				assert.Equal(t, time.UTC, got.Location())
			}
		})
	}
}
