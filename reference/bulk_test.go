package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
)

// bulkWorld is a server with an organization, a branch and an app that
// reads and writes accounts and reads the change feed.
type bulkWorld struct {
	syncWorld
}

func newBulkWorld(t *testing.T, dbURL, rest string, flags ...string) bulkWorld {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "ERP", "--all-branches",
		"--scopes", "svc:accounts:read svc:accounts:write svc:quotations:read svc:quotations:write svc:events:read", "--database-url", dbURL)
	base, _, stop := startRun(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--rate-rest", rest, "--rate-rest-app", "0"}, flags...), env(nil))
	t.Cleanup(func() { require.NoError(t, stop()) })
	token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})
	return bulkWorld{syncWorld{dbURL: dbURL, base: base, org: org, branch: branch, token: token}}
}

// feed returns the types and subjects of the organization's events after
// cursor, and the cursor after them.
func (w bulkWorld) feed(t *testing.T, after string) (events []string, next string) {
	t.Helper()
	for {
		a := swDo(t, http.MethodGet, w.base+"/v1/"+w.org+"/events?limit=1000&after="+after, w.token, "", nil)
		require.Equal(t, http.StatusOK, a.status, a.body)
		var page struct {
			Data []struct {
				Type    string `json:"type"`
				Subject string `json:"subject"`
			} `json:"data"`
			Next string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &page))
		for _, e := range page.Data {
			events = append(events, e.Type+" "+e.Subject)
		}
		if page.Next == after {
			return events, after
		}
		after = page.Next
	}
}

// ids returns the ids of the records of a batch's answer.
func batchIDs(t *testing.T, body string) []string {
	t.Helper()
	var answer struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &answer))
	ids := make([]string, len(answer.Data))
	for i, d := range answer.Data {
		ids[i] = d.ID
	}
	return ids
}

func accountItems(prefix string, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"company_name":"%s %d","account_type":"customer","external_id":"%s-%d"}`, prefix, i, prefix, i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestBulkThroughTheServer: batch writes and upserts as an ERP integration
// meets them, through the reference server on both databases: the events
// of a batch in the order sent, none of a refused batch, an upsert race,
// and what a batch costs of the rate limit.
func TestBulkThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newBulkWorld(t, b.url(t), "1000")
			accounts := w.base + "/v1/" + w.branch + "/accounts"
			_, cursor := w.feed(t, "")

			a := swDo(t, http.MethodPost, accounts, w.token, accountItems("ERP", 3), nil)
			require.Equal(t, http.StatusCreated, a.status, a.body)
			ids := batchIDs(t, a.body)
			require.Len(t, ids, 3)
			events, cursor := w.feed(t, cursor)
			assert.Equal(t, []string{"account.created " + ids[0], "account.created " + ids[1], "account.created " + ids[2]}, events, "one event per record, in the order sent")

			t.Run("a batch of quotations takes consecutive numbers", func(t *testing.T) {
				q := fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-11-20","valid_until":"2026-12-20"}`, ids[0])
				single := swDo(t, http.MethodPost, w.base+"/v1/"+w.branch+"/quotations", w.token, q, nil)
				require.Equal(t, http.StatusCreated, single.status, single.body)
				a := swDo(t, http.MethodPost, w.base+"/v1/"+w.branch+"/quotations", w.token, "["+q+","+q+","+q+"]", nil)
				require.Equal(t, http.StatusCreated, a.status, a.body)
				var answer struct {
					Data []struct {
						Number string `json:"quotation_number"`
					} `json:"data"`
				}
				require.NoError(t, json.Unmarshal([]byte(a.body), &answer))
				year := time.Now().UTC().Year()
				var got []string
				for _, d := range answer.Data {
					got = append(got, d.Number)
				}
				assert.Equal(t, []string{fmt.Sprintf("Q-%d-000002", year), fmt.Sprintf("Q-%d-000003", year), fmt.Sprintf("Q-%d-000004", year)}, got)
				_, cursor = w.feed(t, cursor)
			})

			t.Run("a refused batch writes nothing and has no event", func(t *testing.T) {
				a := swDo(t, http.MethodPost, accounts, w.token, `[{"company_name":"Fine","account_type":"customer"},{"company_name":"Bad","account_type":"alien"},{"company_name":"Taken","account_type":"customer","external_id":"ERP-1"}]`, nil)
				require.Equal(t, http.StatusBadRequest, a.status, a.body)
				assert.Contains(t, a.body, `"error":"invalid_batch"`)
				assert.Contains(t, a.body, `"index":1`)
				assert.Contains(t, a.body, `"index":2`)
				events, _ := w.feed(t, cursor)
				assert.Empty(t, events)
				list := swDo(t, http.MethodGet, accounts+"?limit=1", w.token, "", nil)
				assert.Contains(t, list.body, `"total":3`)
			})

			t.Run("upsert: updated, unchanged, created", func(t *testing.T) {
				merge := map[string]string{"Prefer": "resolution=merge-duplicates"}
				a := swDo(t, http.MethodPost, accounts, w.token, `[{"external_id":"ERP-0","comment":"synced"},{"external_id":"ERP-1","company_name":"ERP 1"},{"external_id":"ERP-9","company_name":"New","account_type":"carrier"}]`, merge)
				require.Equal(t, http.StatusOK, a.status, a.body)
				assert.Contains(t, a.body, `"outcomes":["updated","unchanged","created"]`)
				assert.Equal(t, "resolution=merge-duplicates", a.header.Get("Preference-Applied"))
				got := batchIDs(t, a.body)
				assert.Equal(t, ids[:2], got[:2])
				events, _ := w.feed(t, cursor)
				assert.Equal(t, []string{"account.updated " + ids[0], "account.created " + got[2]}, events)
			})

			t.Run("20 concurrent upserts of one new external_id", func(t *testing.T) {
				merge := map[string]string{"Prefer": "resolution=merge-duplicates"}
				var wg sync.WaitGroup
				answers := make([]swAnswer, 20)
				for i := range answers {
					wg.Go(func() {
						answers[i] = swDo(t, http.MethodPost, accounts, w.token, fmt.Sprintf(`{"company_name":"Racer %d","account_type":"customer","external_id":"RACE"}`, i), merge)
					})
				}
				wg.Wait()
				var created int
				for _, a := range answers {
					require.Equal(t, http.StatusOK, a.status, a.body)
					if strings.Contains(a.body, `"outcomes":["created"]`) {
						created++
					}
				}
				assert.Equal(t, 1, created)
				list := swDo(t, http.MethodGet, accounts+"?filter=external_id:eq:RACE", w.token, "", nil)
				assert.Contains(t, list.body, `"total":1`)
			})
		})
	}
}

// TestBatchRateLimitCost: a batch of n items costs ceil(n/10) requests of
// the organization's REST limit, and one the limit has no room for is
// refused with 429 and writes nothing.
func TestBatchRateLimitCost(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			batchRateLimitCost(t, b.url(t))
		})
	}
}

func batchRateLimitCost(t *testing.T, dbURL string) {
	w := newBulkWorld(t, dbURL, "40")
	accounts := w.base + "/v1/" + w.branch + "/accounts"
	remaining := func(a swAnswer) int {
		t.Helper()
		// RateLimit: "rest";r=N;t=S
		for part := range strings.SplitSeq(a.header.Get("RateLimit"), ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(part), "r="); ok {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatalf("no RateLimit remaining in %q", a.header.Get("RateLimit"))
		return 0
	}
	first := swDo(t, http.MethodGet, accounts+"?limit=1", w.token, "", nil)
	require.Equal(t, http.StatusOK, first.status, first.body)
	before := remaining(first)
	a := swDo(t, http.MethodPost, accounts, w.token, accountItems("A", 250), nil)
	require.Equal(t, http.StatusCreated, a.status, a.body)
	assert.InDelta(t, before-25, remaining(a), 1, "250 items cost 25 requests (the quota refills meanwhile by at most one)")
	// What is left is less than 30: a batch of 300 is refused whole.
	a = swDo(t, http.MethodPost, accounts, w.token, accountItems("B", 300), nil)
	require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
	assert.NotEmpty(t, a.header.Get("Retry-After"))
	list := swDo(t, http.MethodGet, accounts+"?limit=1&filter=external_id:eq:B-0", w.token, "", nil)
	require.Equal(t, http.StatusOK, list.status, list.body)
	assert.Contains(t, list.body, `"total":0`, "the refused batch wrote nothing")
}

// TestExportThroughTheServer: an export through the reference server
// outlives the request deadline (--db-timeout), which bounds only its
// start: a client that reads 20,000 records slowly still gets them all,
// with the feed's cursor, and the feed from it holds the writes made
// meanwhile and no other.
func TestExportThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			w := newBulkWorld(t, dbURL, "0", "--db-timeout", "2s")
			accounts := w.base + "/v1/" + w.branch + "/accounts"
			seedAccounts(t, dbURL, w.org, w.branch, 20000)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, accounts+"?sort=id:asc", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+w.token)
			req.Header.Set("Accept", "application/x-ndjson")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)
			cursor := res.Header.Get("Waybill-Feed-Cursor")
			require.NotEmpty(t, cursor)
			// A write while the export streams: after the cursor, not in
			// the export. On SQLite, whose one connection the export holds,
			// the write waits for it (and, longer than --db-timeout, would
			// be 503): it comes after.
			var late swAnswer
			write := func() {
				late = swDo(t, http.MethodPost, accounts, w.token, `{"company_name":"Late","account_type":"customer"}`, nil)
				require.Equal(t, http.StatusCreated, late.status, late.body)
			}
			if b.name == "postgres" {
				write()
			}
			started := time.Now()
			var lines int
			buf := make([]byte, 64<<10)
			var rest []byte
			for {
				n, err := res.Body.Read(buf)
				rest = append(rest, buf[:n]...)
				for {
					i := bytes.IndexByte(rest, '\n')
					if i < 0 {
						break
					}
					assert.NotContains(t, string(rest[:i]), `"Late"`)
					lines++
					rest = rest[i+1:]
				}
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				time.Sleep(40 * time.Millisecond) // a slow reader
			}
			assert.Equal(t, 20000, lines)
			assert.Greater(t, time.Since(started), 2*time.Second, "the export outlived the request deadline")
			if b.name != "postgres" {
				write()
			}
			events, _ := w.feed(t, cursor)
			lateID := batchIDs(t, "{\"data\":["+strings.TrimSuffix(strings.TrimPrefix(late.body, `{"data":`), `,"version":"v1"}`+"\n")+"]}")
			assert.Equal(t, []string{"account.created " + lateID[0]}, events)
		})
	}
}

// seedAccounts inserts n accounts into the branch with one statement,
// past the API: a test's data, quickly, whatever the machine's load.
func seedAccounts(t *testing.T, dbURL, org, branch string, n int) {
	t.Helper()
	db, dialect, _, err := openAndMigrate(t.Context(), dbURL, 1)
	require.NoError(t, err)
	defer db.Close()
	stmt := `INSERT INTO accounts (id, organization_id, branch_id, company_name, created_at, updated_at)
		SELECT gen_random_uuid(), $1, $2, 'Seeded ' || i, now(), now() FROM generate_series(1, $3) AS i`
	if dialect == query.SQLite {
		stmt = `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $3)
		INSERT INTO accounts (id, organization_id, branch_id, company_name, created_at, updated_at)
		SELECT printf('%08x-0000-4000-8000-%012x', i, i), $1, $2, 'Seeded ' || i,
			strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z', strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z' FROM s`
	}
	_, err = db.ExecContext(t.Context(), stmt, org, branch, n)
	require.NoError(t, err)
}
