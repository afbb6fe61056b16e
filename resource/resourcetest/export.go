package resourcetest

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// checkExport checks the exports of the resource: NDJSON of every record
// of the tenant, each as the list shows it, none of another tenant's; CSV
// with a header row of the fields; pages refused.
func checkExport(t testing.TB, s *suite) {
	in := s.home()
	mine := s.record(t, in)
	theirs := map[string]string{}
	for name, away := range s.away() {
		theirs[s.record(t, away)] = name
	}
	export := func(accept, query string) (*httptest.ResponseRecorder, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, s.collection(in)+query, nil)
		req.Header.Set("Authorization", "Bearer "+s.token(t, in))
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		return rec, rec.Body.String()
	}

	rec, body := export("application/x-ndjson", "")
	require.Equal(t, http.StatusOK, rec.Code, "an NDJSON export: %s", body)
	assert.Equal(t, "application/x-ndjson", rec.Header().Get("Content-Type"))
	found := false
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		var r map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "an export line is a JSON object: %s", sc.Text())
		if s.r.ScopeType == tenancy.BranchOrNull && r[resource.BranchColumn] == nil {
			// An organization-wide record, which every branch sees.
			assert.Equal(t, in.OrganizationID, r[resource.OrganizationColumn])
		} else {
			s.checkRecord(t, r, r["id"].(string), in)
		}
		if name, ok := theirs[r["id"].(string)]; ok {
			t.Errorf("the export holds %s's record %s", name, r["id"])
		}
		found = found || r["id"] == mine
		lines++
	}
	assert.True(t, found, "the export holds the tenant's record %s", mine)

	rec, body = export("text/csv", "?fields=id")
	require.Equal(t, http.StatusOK, rec.Code, "a CSV export: %s", body)
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err, "the CSV export reads as CSV")
	require.NotEmpty(t, rows)
	assert.Equal(t, []string{"id"}, rows[0], "the header row")
	assert.Len(t, rows, lines+1, "a row per record after the header")

	for _, p := range []string{"?limit=1", "?offset=0", "?after=x"} {
		rec, body := export("text/csv", p)
		assert.Equal(t, http.StatusBadRequest, rec.Code, "an export with %s: %s", p, body)
	}
}
