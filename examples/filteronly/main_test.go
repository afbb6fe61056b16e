package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// list is a decoded GET /parcels answer, success or error.
type list struct {
	Data       []parcel `json:"data"`
	Pagination struct {
		Limit  int   `json:"limit"`
		Offset int64 `json:"offset"`
		Total  int64 `json:"total"`
	} `json:"pagination"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func (l list) trackingNumbers() []string {
	s := []string{}
	for _, p := range l.Data {
		s = append(s, p.TrackingNumber)
	}
	return s
}

func TestParcels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parcels.db")
	db, err := openDB(path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	h, err := newHandler(db)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	get := func(t *testing.T, rawQuery string) (int, list) {
		t.Helper()
		res, err := http.Get(srv.URL + "/parcels?" + rawQuery)
		require.NoError(t, err)
		defer res.Body.Close()
		assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
		var l list
		require.NoError(t, json.NewDecoder(res.Body).Decode(&l))
		return res.StatusCode, l
	}

	t.Run("default order", func(t *testing.T) {
		status, l := get(t, "")
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, []string{"WB-1006", "WB-1005", "WB-1004", "WB-1003", "WB-1002", "WB-1001"}, l.trackingNumbers())
		assert.Equal(t, 50, l.Pagination.Limit)
		assert.EqualValues(t, 6, l.Pagination.Total)
	})

	t.Run("filtered and sorted", func(t *testing.T) {
		status, l := get(t, "filter=status:in:registered,in_transit&filter=weight_kg:gte:1&sort=weight_kg:desc")
		require.Equal(t, http.StatusOK, status, l.Description)
		assert.Equal(t, []string{"WB-1005", "WB-1002", "WB-1006"}, l.trackingNumbers())
		assert.EqualValues(t, 3, l.Pagination.Total)
	})

	t.Run("typed filters", func(t *testing.T) {
		for _, c := range []struct{ query, want string }{
			{"filter=insured:eq:true&filter=pieces:gt:2", "WB-1002,WB-1005"},
			{"filter=shipped_on:isnull:true", "WB-1005,WB-1006"},
			{"filter=shipped_on:lt:2026-03-03", "WB-1001,WB-1004"},
			{"filter=created_at:gte:2026-03-01T13:00:00Z", "WB-1005,WB-1006"},
			{"filter=reference:ilike:po_%25", "WB-1001,WB-1003,WB-1006"},
		} {
			status, l := get(t, c.query+"&sort=tracking_number:asc")
			require.Equal(t, http.StatusOK, status, l.Description)
			assert.Equal(t, c.want, strings.Join(l.trackingNumbers(), ","), c.query)
		}
	})

	t.Run("page and total", func(t *testing.T) {
		status, l := get(t, "sort=tracking_number:asc&limit=2&offset=2")
		require.Equal(t, http.StatusOK, status, l.Description)
		assert.Equal(t, []string{"WB-1003", "WB-1004"}, l.trackingNumbers())
		assert.Equal(t, 2, l.Pagination.Limit)
		assert.EqualValues(t, 2, l.Pagination.Offset)
		assert.EqualValues(t, 6, l.Pagination.Total, "the total counts every match, not the page")
	})

	t.Run("like matches _ literally", func(t *testing.T) {
		// As a wildcard, _ would also match PO-2026-002 and PO-2026-005.
		status, l := get(t, "filter=reference:like:PO_2026%25&sort=tracking_number:asc")
		require.Equal(t, http.StatusOK, status, l.Description)
		assert.Equal(t, []string{"WB-1001", "WB-1003"}, l.trackingNumbers(), "like is case-sensitive and _ is no wildcard")
	})

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct{ query, mentions string }{
			{"filter=colour:eq:red", `"colour"`},
			{"filter=weight_kg:like:1%25", `"weight_kg"`},
			{"filter=status:eq:lost", `"lost"`},
			{"sort=reference:asc", `"reference"`},
			{"limit=101", "limit"},
			{"page=2", `"page"`},
			{"filter=reference:eq:%zz", "escape"},
		} {
			status, l := get(t, c.query)
			assert.Equal(t, http.StatusBadRequest, status, c.query)
			assert.Equal(t, "invalid_request", l.Error, c.query)
			assert.Contains(t, l.Description, c.mentions, c.query)
		}
	})

	t.Run("seeded once", func(t *testing.T) {
		again, err := openDB(path)
		require.NoError(t, err)
		defer again.Close()
		var n int
		require.NoError(t, again.QueryRow("SELECT COUNT(*) FROM parcels").Scan(&n))
		assert.Equal(t, 6, n, "a second start keeps the rows and adds none")
	})
}
