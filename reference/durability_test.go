package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// This file holds the tests of the built binary under duress: TestKill9
// kills it with SIGKILL in the middle of concurrent writes and checks that
// every acknowledged write survived; TestSoak drives mixed traffic through
// it for half a minute and checks that its memory does not grow.

// durScopes are the scopes of the apps of these tests.
const durScopes = "svc:accounts:write svc:accounts:read svc:quotations:write svc:quotations:read"

// durAdmin runs "bin admin ARGS --database-url dbURL", which must succeed,
// and returns the JSON object it prints.
func durAdmin(t *testing.T, bin, dbURL string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append(append([]string{"admin"}, args...), "--database-url", dbURL)...)
	cmd.Env = binaryEnv(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "waybill admin %s: %s", strings.Join(args, " "), stderr.String())
	var out map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout %q", stdout.String())
	return out
}

// durTenant creates, with the binary's admin commands, an organization with
// one branch and an app that may read and write the branch's accounts and
// quotations.
func durTenant(t *testing.T, bin, dbURL string) (rlTenant, string) {
	t.Helper()
	org := durAdmin(t, bin, dbURL, "org", "create", "--name", "Durable Freight")["id"].(string)
	branch := durAdmin(t, bin, dbURL, "branch", "create", "--org", org, "--name", "Main")["id"].(string)
	app := durAdmin(t, bin, dbURL, "app", "create", "--org", org, "--name", "Writer", "--scopes", durScopes, "--branches", branch)
	return rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}, branch
}

// durClient is an HTTP client with enough idle connections for the
// concurrent clients of these tests. It never retries a POST or PATCH.
func durClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 32}, Timeout: wait}
}

// durCall sends a request with a JSON body (when body is not nil) and the
// bearer token, and decodes the JSON object of the answer. An error means
// that no complete answer arrived.
func durCall(ctx context.Context, c *http.Client, method, target, token string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return res.StatusCode, nil, fmt.Errorf("status %d, body not JSON: %q", res.StatusCode, raw)
	}
	return res.StatusCode, m, nil
}

// durMust is durCall for the test's own goroutine: the call must answer
// want; it returns the answer's data.
func durMust(t *testing.T, c *http.Client, method, target, token string, body any, want int) map[string]any {
	t.Helper()
	status, m, err := durCall(t.Context(), c, method, target, token, body)
	require.NoError(t, err, "%s %s", method, target)
	require.Equal(t, want, status, "%s %s: %v", method, target, m)
	data, ok := m["data"].(map[string]any)
	require.True(t, ok, "%s %s: no data object in %v", method, target, m)
	return data
}

// durJSON returns v as JSON decodes it into an any: the form of the values
// of a decoded answer.
func durJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// durOpenDB opens the database of dbURL (postgres://... or sqlite://PATH)
// for the checks of the tests, next to the server that uses it.
func durOpenDB(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", dbURL
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		driver, dsn = "sqlite", path+"?_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	require.NoError(t, db.PingContext(t.Context()))
	return db
}

// durQuote is a quotation whose creation the server acknowledged.
type durQuote struct {
	id, number string
	// acked is the record as the last acknowledged write (the 201 of the
	// POST, or the 200 of a later PATCH) returned it.
	acked map[string]any
	// pending holds the fields of a PATCH sent after acked that got no
	// answer: it may or may not have been applied. nil when none.
	pending map[string]any
}

// durLedger is what the writers of one database were told, across every
// round.
type durLedger struct {
	mu     sync.Mutex
	quotes []*durQuote
	// known is the number of quotations of the branch in the database at
	// the last check; created and uncertain count the creates since then
	// that were acknowledged, and that got no answer.
	known, created, uncertain int
}

// durWriter writes quotations to base until a request gets no answer (the
// process is gone) or stop is closed: it creates quotations and patches the
// ones it created, one request at a time, and records every outcome in l.
// Any answer but 201 to a POST and 200 to a PATCH is an error of t.
func durWriter(t *testing.T, rnd *rand.Rand, c *http.Client, base, branch, account, token string, l *durLedger, acks *atomic.Int64, stop <-chan struct{}) {
	var own []*durQuote
	path := base + "/v1/" + branch + "/quotations"
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if len(own) > 0 && rnd.IntN(3) == 0 {
			q := own[rnd.IntN(len(own))]
			patch := map[string]any{"total_packages": rnd.IntN(1_000_000), "total_weight_kg": float64(rnd.IntN(1_000_000)) / 1000}
			l.mu.Lock()
			q.pending = patch
			l.mu.Unlock()
			status, m, err := durCall(ctx, c, http.MethodPatch, path+"/"+q.id, token, patch)
			if err != nil {
				return // no answer: the PATCH stays pending
			}
			if status != http.StatusOK {
				t.Errorf("PATCH %s: status %d: %v", q.id, status, m)
				return
			}
			data, _ := m["data"].(map[string]any)
			l.mu.Lock()
			q.acked, q.pending = data, nil
			l.mu.Unlock()
			acks.Add(1)
			continue
		}
		body := map[string]any{
			"account_id": account, "quotation_date": "2026-03-01", "valid_until": "2026-03-31",
			"total_packages": rnd.IntN(1000), "total_weight_kg": float64(rnd.IntN(1_000_000)) / 1000,
		}
		status, m, err := durCall(ctx, c, http.MethodPost, path, token, body)
		if err != nil {
			l.mu.Lock()
			l.uncertain++
			l.mu.Unlock()
			return
		}
		data, _ := m["data"].(map[string]any)
		if status != http.StatusCreated || data == nil {
			t.Errorf("POST: status %d: %v", status, m)
			return
		}
		q := &durQuote{id: data["id"].(string), number: data["quotation_number"].(string), acked: data}
		own = append(own, q)
		l.mu.Lock()
		l.quotes = append(l.quotes, q)
		l.created++
		l.mu.Unlock()
		acks.Add(1)
	}
}

// durNumber parses a quotation number Q-YYYY-NNNNNN.
func durNumber(t *testing.T, s string) (year int, n int64) {
	t.Helper()
	parts := strings.Split(s, "-")
	require.Len(t, parts, 3, "quotation number %q", s)
	require.Equal(t, "Q", parts[0], "quotation number %q", s)
	year, err := strconv.Atoi(parts[1])
	require.NoError(t, err, "quotation number %q", s)
	require.GreaterOrEqual(t, len(parts[2]), 6, "quotation number %q", s)
	n, err = strconv.ParseInt(parts[2], 10, 64)
	require.NoError(t, err, "quotation number %q", s)
	return year, n
}

// durCheck checks, on a freshly restarted server p, that every write of l
// that was acknowledged is there with its acknowledged values, and in SQL
// that the branch's quotation numbers are unique, without gaps (a write
// that did not commit gives its number back), that the counter is past
// them, and that the number of quotations is what the writers could have
// made. It then settles what was uncertain: the database now shows it.
func durCheck(t *testing.T, c *http.Client, p *proc, dbURL, branch, token string, l *durLedger) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	path := p.url + "/v1/" + branch + "/quotations/"
	lost, wrong, pendingN, pendingApplied := 0, 0, 0, 0
	for _, q := range l.quotes {
		status, m, err := durCall(t.Context(), c, http.MethodGet, path+q.id, token, nil)
		require.NoError(t, err)
		if status == http.StatusNotFound {
			lost++
			t.Errorf("quotation %s (%s), acknowledged with 201, is lost after kill -9", q.id, q.number)
			continue
		}
		require.Equal(t, http.StatusOK, status, "GET %s: %v", q.id, m)
		got := m["data"].(map[string]any)
		if q.pending == nil {
			if !assert.Equal(t, q.acked, got, "quotation %s: the record as last acknowledged", q.id) {
				wrong++
			}
			continue
		}
		// A PATCH without an answer: all of its fields, or none of them.
		pending := durJSON(t, q.pending)
		applied := true
		for f, v := range pending {
			applied = applied && got[f] == v
		}
		pendingN++
		if applied {
			pendingApplied++
		}
		if !applied {
			for f := range pending {
				if !assert.Equal(t, q.acked[f], got[f], "quotation %s: %s, neither as acknowledged nor as the unanswered PATCH %v (half a PATCH?)", q.id, f, pending) {
					wrong++
				}
			}
		}
		for f, v := range q.acked {
			if _, patched := pending[f]; !patched && f != "updated_at" {
				if !assert.Equal(t, v, got[f], "quotation %s: %s", q.id, f) {
					wrong++
				}
			}
		}
		if !applied {
			assert.Equal(t, q.acked["updated_at"], got["updated_at"], "quotation %s: the unanswered PATCH was not applied, yet updated_at moved", q.id)
		}
		q.acked, q.pending = got, nil
	}

	db := durOpenDB(t, dbURL)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), "SELECT quotation_number, COUNT(*) FROM quotations WHERE branch_id = $1 GROUP BY quotation_number HAVING COUNT(*) > 1", branch)
	require.NoError(t, err)
	var dups []string
	for rows.Next() {
		var number string
		var n int
		require.NoError(t, rows.Scan(&number, &n))
		dups = append(dups, fmt.Sprintf("%s ×%d", number, n))
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	assert.Empty(t, dups, "quotation numbers held by more than one quotation of the branch")

	numbers := map[int][]int64{}
	rows, err = db.QueryContext(t.Context(), "SELECT quotation_number FROM quotations WHERE branch_id = $1", branch)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		y, n := durNumber(t, s)
		numbers[y] = append(numbers[y], n)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	total := 0
	for y, ns := range numbers {
		total += len(ns)
		slices.Sort(ns)
		for i, n := range ns {
			if n != int64(i+1) {
				t.Errorf("quotation numbers of %d: the %d-th is %d: a gap or a duplicate (numbers %v)", y, i+1, n, ns)
				break
			}
		}
		var next int64
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT next_value FROM number_sequences WHERE branch_id = $1 AND kind = 'quotation' AND year = $2", branch, y).Scan(&next))
		assert.Equal(t, int64(len(ns))+1, next, "the quotation counter of %d after %d quotations", y, len(ns))
	}

	low, high := l.known+l.created, l.known+l.created+l.uncertain
	assert.GreaterOrEqual(t, total, low, "quotations in the branch: fewer than were acknowledged")
	assert.LessOrEqual(t, total, high, "quotations in the branch: more than were sent")
	t.Logf("%d quotations: %d acknowledged, %d POST without an answer since the last check, %d of those written; %d PATCH without an answer, %d of those applied; %d lost, %d differ",
		total, l.known+l.created, l.uncertain, total-low, pendingN, pendingApplied, lost, wrong)
	l.known, l.created, l.uncertain = total, 0, 0
}

// durFresh creates n quotations, one after the other, on a restarted server
// and checks that each gets a number no quotation had: the next one.
func durFresh(t *testing.T, c *http.Client, p *proc, dbURL, branch, account, token string, l *durLedger, n int) {
	t.Helper()
	db := durOpenDB(t, dbURL)
	defer db.Close()
	taken := map[string]bool{}
	var highest int64
	rows, err := db.QueryContext(t.Context(), "SELECT quotation_number FROM quotations WHERE branch_id = $1", branch)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		taken[s] = true
		_, n := durNumber(t, s)
		highest = max(highest, n)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())

	for range n {
		data := durMust(t, c, http.MethodPost, p.url+"/v1/"+branch+"/quotations", token,
			map[string]any{"account_id": account, "quotation_date": "2026-04-01", "valid_until": "2026-04-30"}, http.StatusCreated)
		number := data["quotation_number"].(string)
		assert.False(t, taken[number], "the new quotation %s got the number %s of an existing one", data["id"], number)
		_, got := durNumber(t, number)
		assert.Greater(t, got, highest, "the new quotation %s got %s, not past the highest number %d", data["id"], number, highest)
		taken[number] = true
		highest = max(highest, got)
		l.mu.Lock()
		l.quotes = append(l.quotes, &durQuote{id: data["id"].(string), number: number, acked: data})
		l.known++
		l.mu.Unlock()
	}
}

// A write that the server answered 201 or 200 survives a kill -9 of the
// process at any moment, and quotation numbers stay unique: writers create
// and patch quotations concurrently, the process is killed in the middle,
// restarted on the same database, and everything acknowledged is checked;
// three times on each database.
func TestKill9(t *testing.T) {
	t.Parallel()
	const (
		rounds  = 3
		writers = 8
		fresh   = 3
	)
	bin := buildBinary(t)
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rnd := rand.New(rand.NewPCG(seed, 0))
			dbURL := b.url(t)
			tenant, branch := durTenant(t, bin, dbURL)
			args := serveArgs("--database-url", dbURL)
			c := durClient()
			defer c.CloseIdleConnections()

			p := startProc(t, bin, nil, args...)
			token := rlToken(t, p.url, tenant)
			account := durMust(t, c, http.MethodPost, p.url+"/v1/"+branch+"/accounts", token,
				map[string]any{"company_name": "Acme Freight"}, http.StatusCreated)["id"].(string)

			l := &durLedger{}
			for round := range rounds {
				// Writers until the kill; the kill after a random number of
				// acknowledged writes and a random short pause, so that the
				// rounds hit different moments.
				var acks atomic.Int64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for w := range writers {
					wrnd := rand.New(rand.NewPCG(seed, uint64(round*writers+w+1)))
					wg.Go(func() { durWriter(t, wrnd, c, p.url, branch, account, token, l, &acks, stop) })
				}
				target := int64(20 + rnd.IntN(100))
				pause := time.Duration(rnd.IntN(20_000)) * time.Microsecond
				deadline := time.Now().Add(wait)
				for acks.Load() < target && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if acks.Load() < target {
					t.Errorf("round %d: only %d writes acknowledged in %v", round+1, acks.Load(), wait)
				}
				time.Sleep(pause)
				p.kill9(t)
				atDeath := acks.Load()
				close(stop)
				wg.Wait()
				l.mu.Lock()
				pending := 0
				for _, q := range l.quotes {
					if q.pending != nil {
						pending++
					}
				}
				t.Logf("round %d: killed after %d acknowledged writes (+%v); %d POST and %d PATCH requests got no answer",
					round+1, atDeath, pause, l.uncertain, pending)
				l.mu.Unlock()
				if t.Failed() {
					t.Logf("stderr of the killed process:\n%s", p.logs)
				}

				// The restart migrates the database and serves what was
				// acknowledged; tokens of the old issuer (its address) are
				// not valid here.
				p = startProc(t, bin, nil, args...)
				token = rlToken(t, p.url, tenant)
				durCheck(t, c, p, dbURL, branch, token, l)
				durFresh(t, c, p, dbURL, branch, account, token, l, fresh)
			}
			durCheck(t, c, p, dbURL, branch, token, l)
			require.NoError(t, p.stop(t), "exit after SIGTERM; stderr:\n%s", p.logs)
		})
	}
}

// durSoakWorker is one client of the soak: it lists, reads and creates the
// quotations of its own account and asks for new tokens, until deadline.
// It counts its requests in done and reports failures to fail.
func durSoakWorker(rnd *rand.Rand, c *http.Client, base, branch, account string, tenant rlTenant, token string, deadline time.Time,
	done *atomic.Int64, fail func(format string, args ...any)) {
	type mine struct{ id, number string }
	var own []mine
	path := base + "/v1/" + branch + "/quotations"
	list := path + "?" + url.Values{
		"filter": {"account_id:eq:" + account, "status:eq:draft", "valid_until:gte:2026-01-01"},
		"sort":   {"quotation_date:desc,quotation_number:desc"},
		"limit":  {"20"},
	}.Encode()
	ctx := context.Background()
	for time.Now().Before(deadline) {
		op := rnd.IntN(10)
		if op >= 4 && op <= 6 && len(own) == 0 {
			op = 7
		}
		done.Add(1)
		switch {
		case op <= 3: // a filtered list with its total
			status, m, err := durCall(ctx, c, http.MethodGet, list, token, nil)
			if err != nil || status != http.StatusOK {
				fail("list: status %d, error %v: %v", status, err, m)
				continue
			}
			data, _ := m["data"].([]any)
			pg, _ := m["pagination"].(map[string]any)
			if total, _ := pg["total"].(float64); int(total) != len(own) || len(data) != min(20, len(own)) {
				fail("list of account %s: total %v and %d records, after %d creates", account, pg["total"], len(data), len(own))
				continue
			}
			for _, d := range data {
				if rec, _ := d.(map[string]any); rec["account_id"] != account {
					fail("list of account %s: a record of account %v", account, rec["account_id"])
				}
			}
		case op <= 6: // a record by id
			q := own[rnd.IntN(len(own))]
			status, m, err := durCall(ctx, c, http.MethodGet, path+"/"+q.id, token, nil)
			if err != nil || status != http.StatusOK {
				fail("get %s: status %d, error %v: %v", q.id, status, err, m)
				continue
			}
			if data, _ := m["data"].(map[string]any); data["id"] != q.id || data["quotation_number"] != q.number {
				fail("get %s: %v", q.id, data)
			}
		case op <= 8: // a create
			body := map[string]any{"account_id": account, "quotation_date": "2026-03-01", "valid_until": "2026-03-31",
				"total_packages": rnd.IntN(1000), "total_weight_kg": float64(rnd.IntN(1_000_000)) / 1000}
			status, m, err := durCall(ctx, c, http.MethodPost, path, token, body)
			data, _ := m["data"].(map[string]any)
			if err != nil || status != http.StatusCreated || data == nil {
				fail("create: status %d, error %v: %v", status, err, m)
				continue
			}
			own = append(own, mine{id: data["id"].(string), number: data["quotation_number"].(string)})
		default: // a new token, used from now on
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/oauth/token",
				strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
			if err != nil {
				fail("token request: %v", err)
				continue
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(tenant.clientID), url.QueryEscape(tenant.secret))
			res, err := c.Do(req)
			if err != nil {
				fail("token: %v", err)
				continue
			}
			var m map[string]any
			err = json.NewDecoder(res.Body).Decode(&m)
			_ = res.Body.Close()
			tok, _ := m["access_token"].(string)
			if err != nil || res.StatusCode != http.StatusOK || tok == "" {
				fail("token: status %d, error %v: %v", res.StatusCode, err, m)
				continue
			}
			token = tok
		}
	}
}

// Half a minute of mixed traffic through the built binary on PostgreSQL:
// every answer is the expected one, and the resident memory at the end is
// at most 1.5 times what it was after the first 10 s.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s soak; skipped with -short")
	}
	t.Parallel()
	const (
		clients  = 16
		duration = 30 * time.Second
		warmup   = 10 * time.Second
	)
	bin := buildBinary(t)
	dbURL := testdb.PostgresURL(t)
	tenant, branch := durTenant(t, bin, dbURL)
	p := startProc(t, bin, nil, serveArgs("--database-url", dbURL)...)
	c := durClient()
	defer c.CloseIdleConnections()
	token := rlToken(t, p.url, tenant)
	accounts := make([]string, clients)
	for i := range accounts {
		accounts[i] = durMust(t, c, http.MethodPost, p.url+"/v1/"+branch+"/accounts", token,
			map[string]any{"company_name": fmt.Sprintf("Soak Customer %d", i+1)}, http.StatusCreated)["id"].(string)
	}

	var (
		done     atomic.Int64
		mu       sync.Mutex
		failures []string
		failed   int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	seed := uint64(time.Now().UnixNano())
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i, account := range accounts {
		rnd := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() { durSoakWorker(rnd, c, p.url, branch, account, tenant, token, deadline, &done, fail) })
	}

	time.Sleep(time.Until(start.Add(warmup)))
	rssWarm, doneWarm := p.memory(t, "VmRSS"), done.Load()
	wg.Wait()
	elapsed := time.Since(start)
	rssEnd := p.memory(t, "VmRSS")
	requests := done.Load()

	t.Logf("%d requests in %v (%d in the first %v); VmRSS %d KiB at %v, %d KiB at the end (×%.2f)",
		requests, elapsed.Round(time.Millisecond), doneWarm, warmup, rssWarm, warmup, rssEnd, float64(rssEnd)/float64(rssWarm))
	assert.Zero(t, failed, "requests that did not get the expected answer; the first ones:\n%s", strings.Join(failures, "\n"))
	assert.Positive(t, requests)
	assert.LessOrEqual(t, float64(rssEnd), 1.5*float64(rssWarm), "resident memory grew from %d KiB at %v to %d KiB", rssWarm, warmup, rssEnd)

	// Every create is there once, with a number of its own.
	status, m, err := durCall(t.Context(), c, http.MethodGet, p.url+"/v1/"+branch+"/quotations?limit=1", token, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, m)
	db := durOpenDB(t, dbURL)
	defer db.Close()
	var rowsN, numbersN int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT COUNT(*), COUNT(DISTINCT quotation_number) FROM quotations WHERE branch_id = $1", branch).Scan(&rowsN, &numbersN))
	assert.Equal(t, rowsN, numbersN, "quotation numbers are unique")
	assert.EqualValues(t, rowsN, m["pagination"].(map[string]any)["total"])

	require.NoError(t, p.stop(t), "exit after SIGTERM; stderr:\n%s", p.logs)
	if t.Failed() {
		t.Logf("stderr:\n%s", p.logs)
	}
}
