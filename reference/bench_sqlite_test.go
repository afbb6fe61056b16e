package main

// BenchmarkSQLiteHTTP measures the embedded default, SQLite, as users load
// the server: the built waybill binary over HTTP, from concurrent clients,
// on a SQLite file, beside the same binary on PostgreSQL in the same run.
// Run it with
//
//	go test -run '^$' -bench BenchmarkSQLiteHTTP -benchtime 1x ./reference
//
// with WAYBILL_TEST_DATABASE_URL set (or Docker for testcontainers). It
// needs the go command on PATH: it builds the binary once as it is, and
// once more for every other SQLite setting it measures, with db_sqlite.go
// replaced (go build -overlay) by the setting's pragmas and pool size. Its
// own flags follow -args, with BenchmarkHTTP's -bh.duration, -bh.warmup,
// -bh.rounds and -bh.max-conns (the pool on PostgreSQL):
//
//	-bs.clients N     concurrent clients of every case (16)
//	-bs.settings RE   the other SQLite settings to measure, by name (all);
//	                  -bs.settings '^$' measures the server's own only
//
// It loads 100,000 quotations into a SQLite file (one INSERT ... SELECT
// over a recursive CTE) and into a PostgreSQL database of its own, creates
// an app with the admin command of the built binary, copies the SQLite
// file for every setting, starts every server (rate limits off, logs to a
// buffer), checks that all answer the same list, and drives each in turn
// with the same closed loop: N clients on keep-alive connections, each
// sending its next request as soon as the last one is answered. The cases:
// list (bench_test.go's benchQuery, with its total), get (one quotation by
// id), create (POST of an account, with its event and history entry) and
// mixed (three gets, then a create, in turn: reads beside writes; the list
// is left out of it, as on SQLite its CPU time, its count above all, would
// be most of what the mix measures). The order of the servers rotates from case to case.
// It prints a table of req/s, p50 and p99 latency, non-2xx answers, failed
// requests, the CPU time of the server's process per request (on
// PostgreSQL the database's own processes are not counted) and the waits
// for a free database connection (from /metrics), and the ratio of each
// server's throughput to PostgreSQL's.
//
// The load generator, every server and PostgreSQL run on one machine: the
// figures are those of one box doing everything, and move with whatever
// else it runs.

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waybillhq/waybill/internal/testdb"
)

var (
	bsClients  = flag.Int("bs.clients", 16, "BenchmarkSQLiteHTTP: concurrent `clients` of every case")
	bsSettings = flag.String("bs.settings", "", "BenchmarkSQLiteHTTP: `regexp` of the names of the other SQLite settings to measure (all when empty)")
)

// bsSetting is a setting of SQLite the server is built with: the two
// constants of db_sqlite.go.
type bsSetting struct {
	name    string
	pragmas string // sqlitePragmas
	conns   int    // sqliteMaxConns
}

// bsOthers are the SQLite settings measured beside the server's own (the
// ones equal to it are skipped): the journal stays WAL and foreign keys on;
// the planner's statistics kept (optimize) as the server's own keeps them;
// the pool, the lock BEGIN takes, synchronous and busy_timeout vary.
func bsOthers() []bsSetting {
	const base = "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=optimize(0x10002)"
	return []bsSetting{
		{"1 conn, deferred, FULL", "_pragma=busy_timeout(5000)&" + base, 1},
		{"1 conn, immediate, FULL", "_pragma=busy_timeout(5000)&" + base + "&_txlock=immediate", 1},
		{"1 conn, immediate, NORMAL", "_pragma=busy_timeout(5000)&" + base + "&_pragma=synchronous(NORMAL)&_txlock=immediate", 1},
		{"4 conns, immediate, FULL", "_pragma=busy_timeout(5000)&" + base + "&_txlock=immediate", 4},
		{"16 conns, immediate, FULL", "_pragma=busy_timeout(5000)&" + base + "&_txlock=immediate", 16},
		{"16 conns, immediate, NORMAL", "_pragma=busy_timeout(5000)&" + base + "&_pragma=synchronous(NORMAL)&_txlock=immediate", 16},
		{"16 conns, immediate, FULL, busy 100 ms", "_pragma=busy_timeout(100)&" + base + "&_txlock=immediate", 16},
	}
}

// bsTarget is a server under load with what its requests need.
type bsTarget struct {
	label  string // the database and its setting
	p      *bhProgram
	mon    *pgx.Conn // watches its PostgreSQL sessions; nil on SQLite
	branch string
	bearer string
	quote  string // the id of a quotation, for get
}

// bsRequest returns the request of kind ("list", "get" or "create") to t.
func bsRequest(ctx context.Context, t *bsTarget, kind string) *http.Request {
	var req *http.Request
	var err error
	switch kind {
	case "list":
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, t.p.url+"/v1/"+t.branch+"/quotations?"+benchQuery, nil)
	case "get":
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, t.p.url+"/v1/"+t.branch+"/quotations/"+t.quote, nil)
	default:
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, t.p.url+"/v1/"+t.branch+"/accounts", strings.NewReader(`{"company_name":"Bench Carrier"}`))
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		panic(err) // Unreachable: the URL is ours.
	}
	req.Header.Set("Authorization", "Bearer "+t.bearer)
	return req
}

// bsCase returns the case kind ("list", "get", "create" or "mixed")
// against t.
func bsCase(t *bsTarget, kind string) bhCase {
	c := bhCase{kind: kind, clients: *bsClients}
	switch kind {
	case "mixed":
		var n atomic.Uint64
		c.request = func(ctx context.Context, _ string) *http.Request {
			if n.Add(1)%4 == 0 {
				return bsRequest(ctx, t, "create")
			}
			return bsRequest(ctx, t, "get")
		}
	default:
		c.request = func(ctx context.Context, _ string) *http.Request { return bsRequest(ctx, t, kind) }
	}
	return c
}

// loadSQLiteQuotations migrates the SQLite file at path and loads n
// quotations into it (insertSQLiteQuotations). It runs no ANALYZE of its
// own: the server gathers the planner's statistics itself when it opens
// the file (see sqlitePragmas). The file is closed, its WAL checkpointed
// into it, when it returns.
func loadSQLiteQuotations(b testing.TB, path string, n int) benchData {
	b.Helper()
	db, _, _, err := openAndMigrate(b.Context(), "sqlite://"+path, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	d := insertSQLiteQuotations(b, db, n)
	d.url = "sqlite://" + path
	return d
}

// insertSQLiteQuotations loads n quotations into the migrated SQLite
// database db, in a branch of their own: the same history as
// loadQuotationsAt's on PostgreSQL, in one INSERT ... SELECT over a
// recursive CTE. The benchData it returns has no url.
func insertSQLiteQuotations(b testing.TB, db *sql.DB, n int) benchData {
	b.Helper()
	ctx := b.Context()
	d := benchData{org: newID(), branch: newID(), account: newID()}
	start := time.Now()
	for _, s := range []struct {
		stmt string
		args []any
	}{
		{`INSERT INTO organizations (id, name) VALUES ($1, 'Bench')`, []any{d.org}},
		{`INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, 'Main')`, []any{d.branch, d.org}},
		{`INSERT INTO accounts (id, organization_id, branch_id, company_name) VALUES ($1, $2, $3, 'Acme')`, []any{d.account, d.org, d.branch}},
		{`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $4)
		INSERT INTO quotations (id, organization_id, branch_id, created_at, updated_at, quotation_number,
			account_id, quotation_date, valid_until, status, total_weight_kg, total_volume_m3, total_packages)
		SELECT printf('%08x-0000-7000-8000-%012x', i, i), $1, $2,
			strftime('%Y-%m-%dT%H:%M:%f', '2026-11-22', '-' || (i * 216) || ' seconds') || '000Z',
			strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z',
			'Q-' || printf('%07d', i), $3, date('2026-11-22', '-' || (i / 400) || ' days'),
			date('2026-11-22', '-' || (i / 400) || ' days', '+30 days'),
			CASE i % 6 WHEN 0 THEN 'draft' WHEN 1 THEN 'sent' WHEN 2 THEN 'accepted'
				WHEN 3 THEN 'rejected' WHEN 4 THEN 'expired' ELSE 'cancelled' END,
			(i % 1000) * 1.5, (i % 100) * 0.25, i % 50
		FROM s`, []any{d.org, d.branch, d.account, n}},
	} {
		if _, err := db.ExecContext(ctx, s.stmt, s.args...); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d quotations loaded into SQLite in %v", n, time.Since(start).Round(time.Millisecond))
	return d
}

// bsCopy copies the file src to dst.
func bsCopy(b *testing.B, src, dst string) {
	b.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// bsBuild builds the server with setting s in place of db_sqlite.go.
func bsBuild(b *testing.B, dir string, i int, s bsSetting) string {
	b.Helper()
	orig, err := filepath.Abs("db_sqlite.go")
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(dir, fmt.Sprintf("db_sqlite_%d.go", i))
	code := fmt.Sprintf("package main\n\nconst sqlitePragmas = %q\n\nconst sqliteMaxConns = %d\n", s.pragmas, s.conns)
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{orig: src}})
	if err != nil {
		b.Fatal(err)
	}
	overlayPath := filepath.Join(dir, fmt.Sprintf("overlay_%d.json", i))
	if err := os.WriteFile(src, []byte(code), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(overlayPath, overlay, 0o600); err != nil {
		b.Fatal(err)
	}
	return buildPackage(b, dir, fmt.Sprintf("waybill-%d", i), "github.com/waybillhq/waybill/reference", "-overlay", overlayPath)
}

// bsSQLiteInfo returns what the SQLite file at path runs with under
// setting s, as a connection of that setting reads it: its journal mode
// and synchronous.
func bsSQLiteInfo(b *testing.B, path string, s bsSetting) string {
	b.Helper()
	db, err := sql.Open("sqlite", path+"?"+s.pragmas)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	conn, err := db.Conn(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	var journal, sync, busy string
	for _, p := range []struct {
		pragma string
		dst    *string
	}{{"journal_mode", &journal}, {"synchronous", &sync}, {"busy_timeout", &busy}} {
		if err := conn.QueryRowContext(b.Context(), "PRAGMA "+p.pragma).Scan(p.dst); err != nil {
			b.Fatal(err)
		}
	}
	return fmt.Sprintf("journal_mode %s, synchronous %s, busy_timeout %s ms", journal, sync, busy)
}

// BenchmarkSQLiteHTTP is documented at the top of this file.
func BenchmarkSQLiteHTTP(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	settings := []bsSetting{{"the server's own", sqlitePragmas, sqliteMaxConns}}
	re, err := regexp.Compile(*bsSettings)
	if err != nil {
		b.Fatalf("-bs.settings: %v", err)
	}
	for _, s := range bsOthers() {
		switch {
		case s.pragmas == sqlitePragmas && s.conns == sqliteMaxConns:
			settings[0].name = s.name + " (the server's own)"
		case re.MatchString(s.name):
			settings = append(settings, s)
		}
	}
	bins := make([]string, len(settings))
	for i, s := range settings {
		if i == 0 {
			bins[i] = buildPackage(b, dir, "waybill", "github.com/waybillhq/waybill/reference")
		} else {
			bins[i] = bsBuild(b, dir, i, s)
		}
	}

	// The data, and an app of every database.
	master := filepath.Join(dir, "master.db")
	lite := loadSQLiteQuotations(b, master, bhQuotations)
	pgURL := testdb.PostgresDatabaseURL(b)
	pg := loadQuotationsAt(b, pgURL, bhQuotations)
	type app struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	newApp := func(d benchData) app {
		var a app
		out := bhRunCommand(b, bins[0], "admin", "app", "create", "--org", d.org, "--name", "Bench",
			"--scopes", bhScope, "--branches", d.branch, "--database-url", d.url)
		if err := json.Unmarshal(out, &a); err != nil || a.ClientID == "" {
			b.Fatalf("admin app create: %v: %s", err, out)
		}
		return a
	}
	liteApp, pgApp := newApp(lite), newApp(pg)
	jwtSecret := newID() + newID()
	serve := func(dbURL string) []string {
		return []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL,
			"--issuer", bhIssuer, "--jwt-secret", jwtSecret, "--rate-rest", "0", "--rate-token", "0", "--rate-edge", "0"}
	}
	token := func(p *bhProgram, a app) string {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/auth/v1/oauth/token", strings.NewReader("grant_type=client_credentials"))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(a.ClientID), url.QueryEscape(a.ClientSecret))
		status, body := bhDo(b, req)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.Unmarshal(body, &tok); status != http.StatusOK || err != nil || tok.AccessToken == "" {
			b.Fatalf("%s: token: %d %s", p.name, status, body)
		}
		return tok.AccessToken
	}

	var targets []*bsTarget
	var notes []string
	for i, s := range settings {
		path := filepath.Join(dir, fmt.Sprintf("waybill-%d.db", i))
		bsCopy(b, master, path)
		label := "SQLite " + s.name
		notes = append(notes, fmt.Sprintf("%s: %s (%s)", label, bsSQLiteInfo(b, path, s), s.pragmas))
		p := bhStart(b, label, "", bins[i], "waybill listening on ", serve("sqlite://"+path)...)
		targets = append(targets, &bsTarget{label: label, p: p, branch: lite.branch, bearer: token(p, liteApp)})
	}
	mon, err := pgx.Connect(ctx, bhWithParam(b, pgURL, "application_name", "bs-monitor"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = mon.Close(context.Background()) }()
	pgLabel := fmt.Sprintf("PostgreSQL, --db-max-conns %d", *bhMaxConns)
	p := bhStart(b, pgLabel, "bs-waybill", bins[0], "waybill listening on ",
		append(serve(bhWithParam(b, pgURL, "application_name", "bs-waybill")), "--db-max-conns", strconv.Itoa(*bhMaxConns))...)
	pgTarget := &bsTarget{label: pgLabel, p: p, mon: mon, branch: pg.branch, bearer: token(p, pgApp)}
	targets = append(targets, pgTarget)

	// Every server answers the same list.
	var want any
	for _, t := range targets {
		status, body := bhDo(b, bsRequest(ctx, t, "list"))
		var list struct {
			Data       []map[string]any `json:"data"`
			Pagination map[string]any   `json:"pagination"`
		}
		if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil {
			b.Fatalf("%s: list: %d %v %s", t.label, status, err, body)
		}
		var numbers []any
		for _, q := range list.Data {
			numbers = append(numbers, q["quotation_date"], q["status"], q["valid_until"])
		}
		if len(list.Data) > 0 {
			t.quote, _ = list.Data[0]["id"].(string)
		}
		if status, body := bhDo(b, bsRequest(ctx, t, "get")); status != http.StatusOK {
			b.Fatalf("%s: get %s: %d %s", t.label, t.quote, status, body)
		}
		got := []any{len(list.Data), list.Pagination["total"], numbers}
		if want == nil {
			want = got
		} else if fmt.Sprint(got) != fmt.Sprint(want) {
			b.Fatalf("%s: the list differs:\n%v\nwant %v", t.label, got, want)
		}
	}
	b.Logf("every server lists the same page: %v records of %v", want.([]any)[0], want.([]any)[1])

	type row struct {
		kind     string
		results  []bhResult
		complete bool
	}
	var rows []*row
	for _, kind := range []string{"list", "get", "create", "mixed"} {
		rows = append(rows, &row{kind: kind, results: make([]bhResult, len(targets))})
	}
	for ci, r := range rows {
		b.Run(fmt.Sprintf("%s/clients=%d", r.kind, *bsClients), func(b *testing.B) {
			for round := range *bhRounds {
				for k := range targets {
					j := (k + ci + round) % len(targets)
					t := targets[j]
					res := bhLoad(b, t.mon, t.p, bsCase(t, r.kind))
					if res.sample != "" {
						b.Logf("%s: %d non-2xx, %d errors; first: %s; last line of its log: %s",
							t.label, res.non2xx, res.errs, res.sample, bhLastLine(t.p.logs.String()))
					}
					r.results[j].add(res)
				}
			}
			r.complete = true
			for j, t := range targets {
				prefix := "pg-"
				if t != pgTarget {
					prefix = fmt.Sprintf("sqlite%d-", j)
				}
				bhReport(b, prefix, bhRuns{r.results[j]})
			}
			b.ReportMetric(0, "ns/op")
		})
	}

	// The table.
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nBenchmarkSQLiteHTTP: %d quotations; %d clients; %v runs after %v of warm-up, %d per server and case; mixed: 3 gets, then 1 create\n",
		bhQuotations, *bsClients, *bhDuration, *bhWarmup, *bhRounds)
	for _, n := range notes {
		fmt.Fprintln(&sb, "  "+n)
	}
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tserver\t|\treq/s\tp50\tp99\tnon-2xx\terr\tcpu/req\tpool waits\t|\treq/s ÷ PostgreSQL\t")
	pgIndex := len(targets) - 1
	for _, r := range rows {
		if !r.complete {
			continue
		}
		for j, t := range targets {
			res := &r.results[j]
			cpu, waits := "-", "-"
			if c := res.cpuPerRequest(); c >= 0 {
				cpu = fmt.Sprintf("%dµs", c.Microseconds())
			}
			if res.countersOK && res.counters.hasWaits && res.requests > 0 {
				waits = fmt.Sprintf("%.2f", res.counters.waits/float64(res.requests))
				if res.counters.waits > 0 {
					waits += " (" + bhMillis(time.Duration(res.counters.waitSeconds/res.counters.waits*1e9)) + ")"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t|\t%.0f\t%s\t%s\t%d\t%d\t%s\t%s\t|\t%.2f\t\n", r.kind, t.label,
				res.throughput(), bhMillis(res.quantile(0.5)), bhMillis(res.quantile(0.99)), res.non2xx, res.errs,
				cpu, waits, res.throughput()/r.results[pgIndex].throughput())
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(&sb, "cpu/req: CPU time of the server's process per request (PostgreSQL's own processes not counted); pool waits: waits for a free database connection per request (their mean)")
	fmt.Print(sb.String())
}
