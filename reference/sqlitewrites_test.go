package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// A concurrent write on SQLite never answers 5xx but 503: two servers on
// one SQLite file, 16 writers on the first and 4 on the second, create
// accounts (a first statement that writes) and quotations (whose reference
// to an account is read before the insert, and whose number is read and
// bumped) for a few seconds. Every answer is 201, or 503
// temporarily_unavailable with Retry-After when a wait for the other
// process's lock outlasted the request's bound; no server logs an error,
// and every acknowledged create is in the file.
func TestSQLiteConcurrentWrites(t *testing.T) {
	t.Parallel()
	const (
		writers  = 16 // on the first server
		others   = 4  // on the second
		duration = 3 * time.Second
	)
	bin := buildBinary(t)
	dbURL := "sqlite://" + testdb.SQLitePath(t)
	tenant, branch := durTenant(t, bin, dbURL)
	c := durClient()
	defer c.CloseIdleConnections()

	type server struct {
		p       *proc
		token   string
		account string
	}
	servers := make([]server, 2)
	for i := range servers {
		p := startProc(t, bin, nil, serveArgs("--database-url", dbURL)...)
		token := rlToken(t, p.url, tenant)
		account := durMust(t, c, http.MethodPost, p.url+"/v1/"+branch+"/accounts", token,
			map[string]any{"company_name": fmt.Sprintf("Server %d", i+1)}, http.StatusCreated)["id"].(string)
		servers[i] = server{p: p, token: token, account: account}
	}

	var (
		mu       sync.Mutex
		statuses = map[string]int{} // "server kind status" → answers
		created  = map[string]int{} // kind → 201s
		refused  = map[string]int{} // kind → 503s
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i, s := range servers {
		n := writers
		if i == 1 {
			n = others
		}
		for w := range n {
			wg.Go(func() {
				for k := 0; time.Now().Before(deadline); k++ {
					method, kind, path := http.MethodPost, "accounts", s.p.url+"/v1/"+branch+"/accounts"
					body := map[string]any{"company_name": fmt.Sprintf("Writer %d.%d.%d", i+1, w, k)}
					want := http.StatusCreated
					switch k % 3 {
					case 1:
						kind, path = "quotations", s.p.url+"/v1/"+branch+"/quotations"
						body = map[string]any{"account_id": s.account, "quotation_date": "2026-03-01", "valid_until": "2026-03-31"}
					case 2:
						method, kind, path, want = http.MethodPatch, "updates", path+"/"+s.account, http.StatusOK
						body = map[string]any{"phone": fmt.Sprintf("+49 %d %d %d", i+1, w, k)}
					}
					b, err := json.Marshal(body)
					if err != nil {
						fail("%s: %v", kind, err)
						return
					}
					req, err := http.NewRequestWithContext(t.Context(), method, path, bytes.NewReader(b))
					if err != nil {
						fail("%s: %v", kind, err)
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+s.token)
					res, err := c.Do(req)
					if err != nil {
						fail("server %d %s: no answer: %v", i+1, kind, err)
						continue
					}
					rawBody, err := io.ReadAll(res.Body)
					_ = res.Body.Close()
					if err != nil {
						fail("server %d %s: no complete answer: %v", i+1, kind, err)
						continue
					}
					raw := string(rawBody)
					mu.Lock()
					statuses[fmt.Sprintf("server %d %s %d", i+1, kind, res.StatusCode)]++
					switch res.StatusCode {
					case want:
						created[kind]++
					case http.StatusServiceUnavailable:
						refused[kind]++
					}
					mu.Unlock()
					switch {
					case res.StatusCode == want:
					case res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" &&
						strings.Contains(raw, `"temporarily_unavailable"`):
					default:
						fail("server %d %s: %d (Retry-After %q) %s", i+1, kind, res.StatusCode, res.Header.Get("Retry-After"), raw)
					}
				}
			})
		}
	}
	wg.Wait()

	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary []string
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s: %d", k, statuses[k]))
	}
	t.Logf("answers in %v:\n%s", duration, strings.Join(summary, "\n"))
	assert.Empty(t, failures, "answers other than 201 or 503 with Retry-After")
	for i, s := range servers {
		if lines := s.p.errorLines(t); len(lines) > 0 {
			t.Errorf("server %d logged %d errors; the first: %v", i+1, len(lines), lines[0])
		}
		for kind, want := range map[string]int{"accounts": http.StatusCreated, "quotations": http.StatusCreated, "updates": http.StatusOK} {
			assert.Positive(t, statuses[fmt.Sprintf("server %d %s %d", i+1, kind, want)], "server %d: no %s succeeded", i+1, kind)
		}
	}

	// Every acknowledged create is in the file; a 503 may at most have
	// committed nothing more.
	db := durOpenDB(t, dbURL)
	defer db.Close()
	for kind, query := range map[string]string{
		"accounts":   "SELECT COUNT(*) FROM accounts WHERE branch_id = $1 AND company_name LIKE 'Writer %'",
		"quotations": "SELECT COUNT(*) FROM quotations WHERE branch_id = $1",
	} {
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), query, branch).Scan(&n))
		assert.GreaterOrEqual(t, n, created[kind], "%s: acknowledged creates missing", kind)
		assert.LessOrEqual(t, n, created[kind]+refused[kind], "%s: more rows than creates answered 201 or 503", kind)
	}
}
