package resource_test

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exportOf sends an export request and returns the answer, its body raw.
func (e *env) exportOf(t *testing.T, method, path, token, accept string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", accept)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

// ndjsonLines decodes an NDJSON body.
func ndjsonLines(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		out = append(out, rec)
	}
	require.True(t, body == "" || strings.HasSuffix(body, "\n"), "every line ends")
	return out
}

func TestExport(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		accounts := "/v1/" + a1 + "/accounts"
		tricky := "Comma, \"Quote\" & Co\nsecond line"
		for i, name := range []string{"Alpha", "Bravo", tricky, "Delta"} {
			comment := "null"
			if i%2 == 0 {
				comment = fmt.Sprintf("%q", "note "+name)
			}
			e.mustCreate(t, token, accounts, fmt.Sprintf(`{"company_name":%q,"account_type":"customer","comment":%s}`, name, comment))
		}
		e.mustCreate(t, token, "/v1/"+a2+"/accounts", `{"company_name":"Other branch","account_type":"carrier"}`)
		e.mustCreate(t, e.codeToken(t, orgB, allScopes...), "/v1/"+b1+"/accounts", `{"company_name":"Other org","account_type":"carrier"}`)

		t.Run("NDJSON: every record, in the sort given, as the list shows them", func(t *testing.T) {
			res, body := e.exportOf(t, http.MethodGet, accounts+"?sort=company_name:asc", token, "application/x-ndjson")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))
			assert.Contains(t, res.Header.Values("Vary"), "Accept")
			assert.Empty(t, res.Header.Get("Waybill-Feed-Cursor"), "a registry without an outbox has no feed")
			lines := ndjsonLines(t, body)
			require.Len(t, lines, 4, "the branch's records only")
			for i, want := range []string{"Alpha", "Bravo", tricky, "Delta"} {
				assert.Equal(t, want, lines[i]["company_name"])
				assert.Equal(t, a1, lines[i]["branch_id"])
			}
			list := e.do(t, http.MethodGet, accounts+"?sort=company_name:asc", token, "")
			for i, rec := range list.list() {
				assert.Equal(t, rec, any(lines[i]), "the same record as the list's")
			}
		})

		t.Run("filters and fields", func(t *testing.T) {
			res, body := e.exportOf(t, http.MethodGet, accounts+"?filter=comment:isnull:false&fields=company_name&sort=company_name:desc", token, "application/x-ndjson")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			lines := ndjsonLines(t, body)
			require.Len(t, lines, 2)
			assert.Equal(t, map[string]any{"id": lines[0]["id"], "company_name": tricky}, lines[0])
			assert.Equal(t, "Alpha", lines[1]["company_name"])
		})

		t.Run("CSV round trip", func(t *testing.T) {
			res, body := e.exportOf(t, http.MethodGet, accounts+"?sort=company_name:asc&fields=company_name,comment,created_at", token, "text/csv")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, "text/csv; charset=utf-8; header=present", res.Header.Get("Content-Type"))
			assert.Contains(t, body, "\r\n", "RFC 4180 line ends")
			rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			require.NoError(t, err)
			require.Len(t, rows, 5)
			assert.Equal(t, []string{"id", "company_name", "comment", "created_at"}, rows[0], "the fields in the record's order")
			assert.Equal(t, tricky, rows[3][1], "a comma, a quote and a newline read back")
			assert.Equal(t, "note "+tricky, rows[3][2])
			assert.Equal(t, "", rows[2][2], "null is an empty cell")
			assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, rows[1][3], "a timestamp as the JSON shows it")
		})

		t.Run("pages are refused", func(t *testing.T) {
			for _, p := range []string{"limit=10", "offset=0", "after=x"} {
				res, body := e.exportOf(t, http.MethodGet, accounts+"?"+p, token, "text/csv")
				assert.Equal(t, http.StatusBadRequest, res.StatusCode, p)
				assert.Contains(t, body, `"invalid_request"`, p)
				assert.Contains(t, body, "no pages", p)
			}
			res, body := e.exportOf(t, http.MethodGet, accounts+"?filter=nope:eq:1", token, "application/x-ndjson")
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		})

		t.Run("Accept picks", func(t *testing.T) {
			for accept, want := range map[string]string{
				"":                                   "application/json",
				"application/json":                   "application/json",
				"*/*":                                "application/json",
				"text/csv;q=0.5, application/json":   "application/json",
				"application/json;q=0.1, text/csv":   "text/csv; charset=utf-8; header=present",
				"text/csv;q=0, application/x-ndjson": "application/x-ndjson",
				"image/png":                          "application/json",
			} {
				res, _ := e.exportOf(t, http.MethodGet, accounts, token, accept)
				assert.Equal(t, http.StatusOK, res.StatusCode, accept)
				assert.Equal(t, want, res.Header.Get("Content-Type"), "Accept: %s", accept)
			}
		})

		t.Run("HEAD", func(t *testing.T) {
			res, body := e.exportOf(t, http.MethodHead, accounts, token, "text/csv")
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Empty(t, body)
			assert.Equal(t, "text/csv; charset=utf-8; header=present", res.Header.Get("Content-Type"))
		})

		t.Run("the read scope", func(t *testing.T) {
			res, body := e.exportOf(t, http.MethodGet, accounts, e.codeToken(t, orgA, "svc:accounts:write"), "text/csv")
			assert.Equal(t, http.StatusForbidden, res.StatusCode, body)
			res, body = e.exportOf(t, http.MethodGet, "/v1/"+b1+"/accounts", token, "text/csv")
			assert.Equal(t, http.StatusNotFound, res.StatusCode, body)
		})
	})
}
