package main

// BenchmarkHTTP measures the waybill server as its users load it: over
// HTTP, from many concurrent clients, against its floor, a minimal net/http
// + pgxpool program (internal/cmd/benchfloor) that runs the same SQL on the
// same data. Run it with
//
//	go test -run '^$' -bench BenchmarkHTTP -benchtime 1x ./reference
//
// with WAYBILL_TEST_DATABASE_URL set (or Docker for testcontainers), or
// with scripts/benchhttp, which sets it up. It needs the go command on PATH
// (it builds both programs) and takes about four minutes. Its own flags
// follow -args:
//
//	go test -run '^$' -bench BenchmarkHTTP -benchtime 1x ./reference -args -bh.rounds 3 -bh.duration 10s
//
//	-bh.duration D       measured time of each run (5s)
//	-bh.warmup D         unmeasured load before it (1s)
//	-bh.rounds N         runs of each program per case, interleaved (2)
//	-bh.max-conns N      the pool of both: waybill --db-max-conns, the floor's MaxConns (16);
//	                     both keep their connections, so 2N must fit in
//	                     PostgreSQL's max_connections beside everything else
//	-bh.waybill-flags S  more flags of waybill serve, space-separated
//	-bh.waybill-bin F    a waybill binary to measure instead of building this
//	                     one, e.g. one built from another commit
//
// It loads 100,000 quotations into a database of its own, creates an app
// with the admin command of the built binary, starts the built waybill
// server (rate limits off, logs to a buffer) and the built floor, checks
// that both answer the same, and drives each in turn with the same closed
// loop: N clients on keep-alive connections, each sending its next request
// as soon as the last one is answered. The cases are the list of
// bench_test.go's benchQuery (with its total), the client-credentials token
// request, the introspection of an access token by its client and the
// creation of an account, at 16 and 64 clients. Every case runs waybill and
// the floor one after the other, the order alternating from case to case
// and round to round, so that both see the same machine. It prints a table
// of each round and of the medians over the rounds, and reports, per case,
// the medians of req/s, p50 and p99 latency, and over all rounds non-2xx
// responses (transport errors apart), the statements each program sent to
// PostgreSQL per request, its PostgreSQL sessions during the run (the most
// seen in pg_stat_activity, sampled every 100 ms, by application_name), the
// sessions opened in the database meanwhile (pg_stat_database.sessions,
// warm-up included), the CPU time of the program's process per request
// (from /proc), its heap allocations per request, and the ratios
// waybill/floor of the medians of throughput and p99.
// b.ReportAllocs would count the load generator's allocations, the same
// for both; the programs' own heap allocations per request are reported
// instead, with the time requests waited for a free database connection,
// from waybill's /metrics (go_memstats_mallocs_total, go_sql_wait_*,
// waybill_db_statements_total) and from the line the floor prints on
// SIGUSR1 (runtime.MemStats, pgxpool's Stat, its pgx tracer's count).
//
// The load generator runs in the test process, on the same machine as both
// programs and PostgreSQL: the figures are those of one box doing
// everything, and move with whatever else it runs.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waybillhq/waybill/internal/testdb"
)

var (
	bhDuration     = flag.Duration("bh.duration", 5*time.Second, "BenchmarkHTTP: measured `time` of each run")
	bhWarmup       = flag.Duration("bh.warmup", time.Second, "BenchmarkHTTP: unmeasured `time` of load before each run")
	bhRounds       = flag.Int("bh.rounds", 2, "BenchmarkHTTP: `runs` of each program per case, interleaved; the table gives each and their median")
	bhMaxConns     = flag.Int("bh.max-conns", 16, "BenchmarkHTTP: database `connections` of each program (waybill --db-max-conns, the floor's MaxConns)")
	bhWaybillFlags = flag.String("bh.waybill-flags", "", "BenchmarkHTTP: more `flags` of waybill serve, space-separated")
	bhWaybillBin   = flag.String("bh.waybill-bin", "", "BenchmarkHTTP: a waybill `binary` to measure instead of building this one")
)

// bhQuotations is the size of the branch's history.
const bhQuotations = 100_000

// bhIssuer is the issuer of both programs' tokens, so that their tokens
// differ only in iat, exp and jti.
const bhIssuer = "http://waybill.bench"

// bhScope is the app's scope.
const bhScope = "svc:quotations:read svc:accounts:write"

// bhProgram is a program under load: the waybill server or the floor.
type bhProgram struct {
	name   string // "waybill" or "floor"
	url    string
	pid    int
	app    string // its application_name in pg_stat_activity
	logs   *syncBuffer
	stdout <-chan string // the lines of stdout after the first
}

// bhCase is one request shape at one concurrency.
type bhCase struct {
	kind    string // "list", "token", "introspect" or "post"
	clients int
	request func(ctx context.Context, base string) *http.Request
}

// bhResult is what one or more runs of one program measured.
type bhResult struct {
	requests   int             // ended within the measured windows, errors included
	non2xx     int             // of them, answers that are not 2xx
	errs       int             // requests that failed without an answer
	window     time.Duration   // the measured windows, summed
	latencies  []time.Duration // of every request counted, sorted by merge
	cpu        time.Duration   // CPU time of the program's process during the windows
	cpuKnown   bool
	sessMax    int        // most sessions of the program seen at once
	sessNew    int64      // sessions opened in the database, warm-up included
	counters   bhCounters // of the program's own, over the windows
	countersOK bool
	sample     string // the first failure, for the log
}

func (r *bhResult) throughput() float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(r.requests) / r.window.Seconds()
}

// quantile returns the q-quantile of the latencies, nearest rank.
func (r *bhResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(r.latencies)))) - 1
	return r.latencies[min(max(i, 0), len(r.latencies)-1)]
}

func (r *bhResult) cpuPerRequest() time.Duration {
	if !r.cpuKnown || r.requests == 0 {
		return -1
	}
	return r.cpu / time.Duration(r.requests)
}

// add merges the result of another run of the same program.
func (r *bhResult) add(o bhResult) {
	if r.window == 0 {
		*r = o
		return
	}
	r.requests += o.requests
	r.non2xx += o.non2xx
	r.errs += o.errs
	r.window += o.window
	r.latencies = append(r.latencies, o.latencies...)
	slices.Sort(r.latencies)
	r.cpu += o.cpu
	r.cpuKnown = r.cpuKnown && o.cpuKnown
	r.sessMax = max(r.sessMax, o.sessMax)
	r.sessNew += o.sessNew
	r.countersOK = r.countersOK && o.countersOK
	r.counters = r.counters.plus(o.counters)
	if r.sample == "" {
		r.sample = o.sample
	}
}

// bhRuns are the runs of one program in one case, one a round.
type bhRuns []bhResult

// merged returns the runs as one result: their requests, errors, CPU time
// and counters summed, their latencies pooled.
func (rs bhRuns) merged() bhResult {
	var m bhResult
	for _, r := range rs {
		m.add(r)
	}
	return m
}

// median returns the median over the runs of what f measures of each.
func (rs bhRuns) median(f func(*bhResult) float64) float64 {
	v := make([]float64, len(rs))
	for i := range rs {
		v[i] = f(&rs[i])
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// bhFigures are the headline figures of one program in one case: of a run,
// or the medians of the runs.
type bhFigures struct {
	throughput float64       // req/s
	p50, p99   time.Duration // latency
}

func (r *bhResult) figures() bhFigures {
	return bhFigures{r.throughput(), r.quantile(0.5), r.quantile(0.99)}
}

// medians returns the medians over the runs of throughput, p50 and p99.
func (rs bhRuns) medians() bhFigures {
	return bhFigures{
		throughput: rs.median(func(r *bhResult) float64 { return r.throughput() }),
		p50:        time.Duration(rs.median(func(r *bhResult) float64 { return float64(r.quantile(0.5)) })),
		p99:        time.Duration(rs.median(func(r *bhResult) float64 { return float64(r.quantile(0.99)) })),
	}
}

// BenchmarkHTTP is documented at the top of this file.
func BenchmarkHTTP(b *testing.B) {
	dbURL := testdb.PostgresDatabaseURL(b)
	d := loadQuotationsAt(b, dbURL, bhQuotations)
	countSQL, countArgs, pageSQL, pageArgs := d.statements(b)

	dir := b.TempDir()
	waybillBin := *bhWaybillBin
	if waybillBin == "" {
		waybillBin = buildPackage(b, dir, "waybill", "github.com/waybillhq/waybill/reference")
	}
	floorBin := buildPackage(b, dir, "benchfloor", "github.com/waybillhq/waybill/internal/cmd/benchfloor")

	var app struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	out := bhRunCommand(b, waybillBin, "admin", "app", "create", "--org", d.org, "--name", "Bench",
		"--scopes", bhScope, "--branches", d.branch, "--database-url", dbURL)
	if err := json.Unmarshal(out, &app); err != nil || app.ClientID == "" || app.ClientSecret == "" {
		b.Fatalf("admin app create: %v: %s", err, out)
	}
	jwtSecret := newID() + newID() // 72 bytes

	serveArgs := []string{"serve", "--addr", "127.0.0.1:0", "--database-url", bhWithParam(b, dbURL, "application_name", "bh-waybill"),
		"--issuer", bhIssuer, "--jwt-secret", jwtSecret, "--rate-rest", "0", "--rate-token", "0", "--rate-edge", "0"}
	help := string(bhRunCommand(b, waybillBin, "serve", "-h"))
	poolNote := "waybill without --db-max-conns (its pool: database/sql defaults)"
	if strings.Contains(help, "--db-max-conns") {
		serveArgs = append(serveArgs, "--db-max-conns", strconv.Itoa(*bhMaxConns))
		poolNote = fmt.Sprintf("waybill --db-max-conns %d", *bhMaxConns)
	}
	if extra := strings.Fields(*bhWaybillFlags); len(extra) > 0 {
		serveArgs = append(serveArgs, extra...)
		poolNote += " " + strings.Join(extra, " ")
	}
	waybill := bhStart(b, "waybill", "bh-waybill", waybillBin, "waybill listening on ", serveArgs...)

	cfg, err := json.Marshal(map[string]any{
		"database_url": bhWithParam(b, dbURL, "application_name", "bh-floor"),
		"max_conns":    *bhMaxConns,
		"issuer":       bhIssuer,
		"jwt_secret":   jwtSecret,
		"count_sql":    countSQL, "count_args": countArgs,
		"page_sql": pageSQL, "page_args": pageArgs,
		"limit": pageArgs[len(pageArgs)-2].(int) - 1, "offset": pageArgs[len(pageArgs)-1],
		"organization_id": d.org,
	})
	if err != nil {
		b.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "floor.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	floor := bhStart(b, "floor", "bh-floor", floorBin, "benchfloor listening on ", "-config", cfgPath)

	tokenReq := func(ctx context.Context, base string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/v1/oauth/token", strings.NewReader("grant_type=client_credentials"))
		if err != nil {
			panic(err) // Unreachable: the URL is ours.
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(app.ClientID), url.QueryEscape(app.ClientSecret))
		return req
	}
	listPath := "/v1/" + d.branch + "/quotations?" + benchQuery
	bearer := bhCheck(b, waybill, floor, tokenReq, listPath)
	listReq := func(ctx context.Context, base string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+listPath, nil)
		if err != nil {
			panic(err) // Unreachable: the URL is ours.
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		return req
	}

	mon, err := pgx.Connect(b.Context(), bhWithParam(b, dbURL, "application_name", "bh-monitor"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = mon.Close(context.Background()) }()

	type row struct {
		c        bhCase
		wb, fl   bhRuns
		complete bool
	}
	var rows []*row
	// A write: an account, with its event appended in its transaction.
	postReq := func(ctx context.Context, base string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/"+d.branch+"/accounts", strings.NewReader(`{"company_name":"Bench Carrier"}`))
		if err != nil {
			panic(err) // Unreachable: the URL is ours.
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	// The introspection of an access token by its client (RFC 7662).
	introspectReq := func(ctx context.Context, base string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/v1/oauth/introspect", strings.NewReader("token="+bearer))
		if err != nil {
			panic(err) // Unreachable: the URL is ours.
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(app.ClientID), url.QueryEscape(app.ClientSecret))
		return req
	}
	bhCheckIntrospection(b, waybill, floor, introspectReq)
	for _, kind := range []string{"list", "token", "introspect", "post"} {
		for _, clients := range []int{16, 64} {
			c := bhCase{kind: kind, clients: clients, request: listReq}
			switch kind {
			case "token":
				c.request = tokenReq
			case "introspect":
				c.request = introspectReq
			case "post":
				c.request = postReq
			}
			rows = append(rows, &row{c: c})
		}
	}
	for i, r := range rows {
		b.Run(fmt.Sprintf("%s/clients=%d", r.c.kind, r.c.clients), func(b *testing.B) {
			for round := range *bhRounds {
				order := []*bhProgram{waybill, floor}
				if (i+round)%2 == 1 {
					order = []*bhProgram{floor, waybill}
				}
				for _, p := range order {
					res := bhLoad(b, mon, p, r.c)
					if res.sample != "" {
						b.Logf("%s: %d non-2xx, %d errors; first: %s; last line of its log: %s",
							p.name, res.non2xx, res.errs, res.sample, bhLastLine(p.logs.String()))
					}
					if p == waybill {
						r.wb = append(r.wb, res)
					} else {
						r.fl = append(r.fl, res)
					}
				}
			}
			r.complete = true
			wb, fl := r.wb.medians(), r.fl.medians()
			bhReport(b, "waybill-", r.wb)
			bhReport(b, "floor-", r.fl)
			b.ReportMetric(wb.throughput/fl.throughput, "ratio-req/s")
			b.ReportMetric(float64(wb.p99)/float64(fl.p99), "ratio-p99")
			b.ReportMetric(0, "ns/op")
		})
	}

	// The table.
	var sb strings.Builder
	if *bhWaybillBin != "" {
		poolNote += " (" + *bhWaybillBin + ")"
	}
	fmt.Fprintf(&sb, "\nBenchmarkHTTP: %d quotations in a database of its own; %v runs after %v of warm-up, %d per program and case, interleaved; %s; floor pgxpool MaxConns %d\n",
		bhQuotations, *bhDuration, *bhWarmup, *bhRounds, poolNote, *bhMaxConns)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tclients\tround\t|\twaybill req/s\tp50\tp99\tnon-2xx\terr\tstmts/req\tpg max\tpg new\tcpu/req\tallocs/req\tpool waits\t|\tfloor req/s\tp50\tp99\tnon-2xx\terr\tstmts/req\tpg max\tpg new\tcpu/req\tallocs/req\tpool waits\t|\treq/s w/f\tp99 w/f\t")
	for _, r := range rows {
		if !r.complete {
			continue
		}
		line := func(round string, wb, fl bhFigures, wr, fr *bhResult) {
			fmt.Fprintf(tw, "%s\t%d\t%s\t|\t%s\t|\t%s\t|\t%.2f\t%.2f\t\n", r.c.kind, r.c.clients, round,
				bhCells(wb, wr), bhCells(fl, fr), wb.throughput/fl.throughput, float64(wb.p99)/float64(fl.p99))
		}
		for i := range r.wb {
			line(strconv.Itoa(i+1), r.wb[i].figures(), r.fl[i].figures(), &r.wb[i], &r.fl[i])
		}
		wm, fm := r.wb.merged(), r.fl.merged()
		line("median", r.wb.medians(), r.fl.medians(), &wm, &fm)
	}
	_ = tw.Flush()
	fmt.Fprintln(&sb, "round: each run, and the medians of the runs' req/s, p50 and p99 (the other columns of the median line: all runs together);")
	fmt.Fprintln(&sb, "stmts/req: statements sent to PostgreSQL per request (BEGIN and COMMIT included); pg max: most sessions of the program in pg_stat_activity (sampled every 100 ms);")
	fmt.Fprintln(&sb, "pg new: sessions opened in the database, warm-ups included; cpu/req, allocs/req: CPU time and heap allocations of the program's process per request;")
	fmt.Fprintln(&sb, "pool waits: waits for a database connection per request (their mean)")
	fmt.Print(sb.String())
}

// bhCells formats a program's columns of the table: its figures f, and
// the rest from r.
func bhCells(f bhFigures, r *bhResult) string {
	stmts := "-"
	if r.countersOK && r.counters.hasStatements && r.requests > 0 {
		stmts = fmt.Sprintf("%.2f", r.counters.statements/float64(r.requests))
	}
	cells := []string{
		fmt.Sprintf("%.0f", f.throughput),
		bhMillis(f.p50), bhMillis(f.p99),
		strconv.Itoa(r.non2xx), strconv.Itoa(r.errs), stmts,
		strconv.Itoa(r.sessMax), strconv.FormatInt(r.sessNew, 10), "-",
	}
	if c := r.cpuPerRequest(); c >= 0 {
		cells[8] = fmt.Sprintf("%dµs", c.Microseconds())
	}
	allocs, waits := "-", "-"
	if r.countersOK && r.requests > 0 {
		allocs = fmt.Sprintf("%.0f", r.counters.mallocs/float64(r.requests))
	}
	if r.countersOK && r.counters.hasWaits && r.requests > 0 {
		waits = fmt.Sprintf("%.2f", r.counters.waits/float64(r.requests))
		if r.counters.waits > 0 {
			waits += " (" + bhMillis(time.Duration(r.counters.waitSeconds/r.counters.waits*1e9)) + ")"
		}
	}
	cells = append(cells, allocs, waits)
	return strings.Join(cells, "\t")
}

func bhMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// bhLastLine returns the last line of logs, at most 1000 bytes of it.
func bhLastLine(logs string) string {
	logs = strings.TrimSpace(logs)
	line := logs[strings.LastIndexByte(logs, '\n')+1:]
	if len(line) > 1000 {
		line = line[:1000] + "…"
	}
	return line
}

// bhReport reports a program's figures as metrics of b, each unit
// prefixed: the medians of the runs' req/s, p50 and p99, the rest of all
// runs together.
func bhReport(b *testing.B, prefix string, runs bhRuns) {
	f := runs.medians()
	merged := runs.merged()
	r := &merged
	b.ReportMetric(f.throughput, prefix+"req/s")
	b.ReportMetric(float64(f.p50)/1e6, prefix+"p50-ms")
	b.ReportMetric(float64(f.p99)/1e6, prefix+"p99-ms")
	b.ReportMetric(float64(r.non2xx), prefix+"non2xx")
	b.ReportMetric(float64(r.errs), prefix+"errors")
	b.ReportMetric(float64(r.sessMax), prefix+"pg-sessions-max")
	b.ReportMetric(float64(r.sessNew), prefix+"pg-sessions-new")
	if c := r.cpuPerRequest(); c >= 0 {
		b.ReportMetric(float64(c)/1e3, prefix+"cpu-µs/req")
	}
	if r.countersOK && r.requests > 0 {
		b.ReportMetric(r.counters.mallocs/float64(r.requests), prefix+"allocs/req")
	}
	if r.countersOK && r.counters.hasStatements && r.requests > 0 {
		b.ReportMetric(r.counters.statements/float64(r.requests), prefix+"statements/req")
	}
	if r.countersOK && r.counters.hasWaits && r.requests > 0 {
		b.ReportMetric(r.counters.waits/float64(r.requests), prefix+"pool-waits/req")
		b.ReportMetric(r.counters.waitSeconds*1e3/float64(r.requests), prefix+"pool-wait-ms/req")
	}
}

// bhWithParam returns rawURL with the query parameter key set to value.
func bhWithParam(b *testing.B, rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// bhRunCommand runs bin with args, which must succeed, and returns its
// stdout.
func bhRunCommand(b *testing.B, bin string, args ...string) []byte {
	b.Helper()
	cmd := exec.CommandContext(b.Context(), bin, args...)
	cmd.Env = binaryEnv(nil)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// bhStart starts bin with args, waits for the line of stdout that starts
// with prefix and holds its URL, and stops it in b.Cleanup: SIGTERM, then
// SIGKILL after wait. Its stdin is a pipe closed first (the floor stops at
// its end), its stderr a buffer.
func bhStart(b *testing.B, name, app, bin, prefix string, args ...string) *bhProgram {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = binaryEnv(nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	more := make(chan string, 16)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		lines <- line
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			select {
			case more <- strings.TrimSpace(line):
			default:
			}
		}
		exited <- cmd.Wait() // after stdout is drained, as StdoutPipe requires
	}()
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				b.Errorf("%s: exit after SIGTERM: %v; stderr:\n%s", name, err, logs)
			}
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			<-exited
			b.Errorf("%s: no exit after SIGTERM; stderr:\n%s", name, logs)
		}
	})
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			b.Fatalf("%s: first line of stdout %q; stderr:\n%s", name, line, logs)
		}
		return &bhProgram{name: name, url: u, pid: cmd.Process.Pid, app: app, logs: logs, stdout: more}
	case <-time.After(wait):
		b.Fatalf("%s: no address on stdout; stderr:\n%s", name, logs)
		return nil
	}
}

// bhServe creates an app of the organization org with the admin command of
// bin (appArgs: its --name, --scopes, --branches or --all-branches), starts
// bin's server on dbURL with the rate limits off, its sessions named
// application in pg_stat_activity, more flags in serveArgs, and returns it
// with a client-credentials token of the app.
func bhServe(b *testing.B, bin, dbURL, org, application string, appArgs []string, serveArgs ...string) (*bhProgram, string) {
	b.Helper()
	var app struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	out := bhRunCommand(b, bin, append([]string{"admin", "app", "create", "--org", org, "--database-url", dbURL}, appArgs...)...)
	if err := json.Unmarshal(out, &app); err != nil || app.ClientID == "" {
		b.Fatalf("admin app create: %v: %s", err, out)
	}
	p := bhStart(b, "waybill", application, bin, "waybill listening on ", append([]string{"serve", "--addr", "127.0.0.1:0",
		"--database-url", bhWithParam(b, dbURL, "application_name", application), "--issuer", bhIssuer, "--jwt-secret", newID() + newID(),
		"--rate-rest", "0", "--rate-token", "0", "--rate-edge", "0"}, serveArgs...)...)
	return p, bbToken(b, p.url, app.ClientID, app.ClientSecret)
}

// bhDo sends req with http.DefaultClient and returns the status and body.
func bhDo(b *testing.B, req *http.Request) (int, []byte) {
	b.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	return res.StatusCode, body
}

// bhCheck checks that both programs answer the same: the same list, and
// tokens with the same header and claims but for iat, exp and jti, which
// waybill accepts. It returns a token of waybill's.
func bhCheck(b *testing.B, waybill, floor *bhProgram, tokenReq func(context.Context, string) *http.Request, listPath string) string {
	b.Helper()
	ctx := b.Context()
	var tokens [2]map[string]any
	var jwts [2][2]map[string]any // header, claims
	for i, p := range []*bhProgram{waybill, floor} {
		status, body := bhDo(b, tokenReq(ctx, p.url))
		if status != http.StatusOK {
			b.Fatalf("%s: token: %d %s", p.name, status, body)
		}
		if err := json.Unmarshal(body, &tokens[i]); err != nil {
			b.Fatalf("%s: token: %v: %s", p.name, err, body)
		}
		parts := strings.Split(fmt.Sprint(tokens[i]["access_token"]), ".")
		if len(parts) != 3 {
			b.Fatalf("%s: access_token is no JWT: %s", p.name, body)
		}
		for j := range 2 {
			raw, err := base64.RawURLEncoding.DecodeString(parts[j])
			if err == nil {
				err = json.Unmarshal(raw, &jwts[i][j])
			}
			if err != nil {
				b.Fatalf("%s: access_token part %d: %v", p.name, j, err)
			}
		}
		for _, k := range []string{"iat", "exp", "jti"} {
			if _, ok := jwts[i][1][k]; !ok {
				b.Fatalf("%s: no %s claim: %v", p.name, k, jwts[i][1])
			}
			delete(jwts[i][1], k)
		}
		delete(tokens[i], "access_token")
	}
	if !reflect.DeepEqual(tokens[0], tokens[1]) || !reflect.DeepEqual(jwts[0], jwts[1]) {
		b.Fatalf("the token responses differ:\nwaybill %v %v\nfloor   %v %v", tokens[0], jwts[0], tokens[1], jwts[1])
	}

	var lists [2]map[string]any
	var bearers [2]string
	for i, p := range []*bhProgram{waybill, floor} {
		_, body := bhDo(b, tokenReq(ctx, p.url))
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		_ = json.Unmarshal(body, &tok)
		bearers[i] = tok.AccessToken
	}
	for i, p := range []*bhProgram{waybill, floor} {
		// Each with the other's token: waybill accepts the floor's.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+listPath, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+bearers[1-i])
		status, body := bhDo(b, req)
		if status != http.StatusOK {
			b.Fatalf("%s: list: %d %s", p.name, status, body)
		}
		if err := json.Unmarshal(body, &lists[i]); err != nil {
			b.Fatalf("%s: list: %v", p.name, err)
		}
	}
	// Both have a next cursor; their formats differ (the floor's is an HMAC
	// of the same keys, without Waybill's encoding).
	for i, p := range []string{"waybill", "floor"} {
		page, _ := lists[i]["pagination"].(map[string]any)
		if c, _ := page["next_cursor"].(string); c == "" {
			b.Fatalf("%s: the list has no next cursor: %v", p, page)
		}
		delete(page, "next_cursor")
	}
	if !reflect.DeepEqual(lists[0], lists[1]) {
		b.Fatalf("the lists differ:\nwaybill %v\nfloor   %v", lists[0], lists[1])
	}
	if n := len(lists[0]["data"].([]any)); n != 50 {
		b.Fatalf("the list holds %d quotations, want 50", n)
	}
	return bearers[0]
}

// bhCheckIntrospection checks that both programs answer the same
// introspection of the same token (waybill's, which the floor verifies with
// the same key).
func bhCheckIntrospection(b *testing.B, waybill, floor *bhProgram, introspectReq func(context.Context, string) *http.Request) {
	b.Helper()
	var answers [2]map[string]any
	for i, p := range []*bhProgram{waybill, floor} {
		status, body := bhDo(b, introspectReq(b.Context(), p.url))
		if status != http.StatusOK {
			b.Fatalf("%s: introspect: %d %s", p.name, status, body)
		}
		if err := json.Unmarshal(body, &answers[i]); err != nil {
			b.Fatalf("%s: introspect: %v: %s", p.name, err, body)
		}
	}
	if answers[0]["active"] != true || !reflect.DeepEqual(answers[0], answers[1]) {
		b.Fatalf("the introspections differ or are inactive:\nwaybill %v\nfloor   %v", answers[0], answers[1])
	}
}

// bhLoad runs c against p: c.clients goroutines in a closed loop, for
// *bhWarmup unmeasured and then *bhDuration measured, and returns what it
// measured. Requests answered within the measured window count, whenever
// they started. mon is the PostgreSQL connection that watches p's
// sessions; nil for a program on another database (SQLite), whose
// sessions are not counted.
func bhLoad(b *testing.B, mon *pgx.Conn, p *bhProgram, c bhCase) bhResult {
	b.Helper()
	ctx := b.Context()
	var res bhResult
	var sess0 int64
	if mon != nil {
		sess0 = bhSessions(b, mon)
	}

	tr := &http.Transport{MaxIdleConns: c.clients, MaxIdleConnsPerHost: c.clients, DisableCompression: true, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: wait}

	start := time.Now().Add(*bhWarmup)
	end := start.Add(*bhDuration)
	type worker struct {
		lat         []time.Duration
		non2xx, err int
		sample      string
	}
	workers := make([]worker, c.clients)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.lat = make([]time.Duration, 0, 4096)
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				resp, err := client.Do(c.request(ctx, p.url))
				status := 0
				var body []byte
				if err == nil {
					status = resp.StatusCode
					if status/100 != 2 && w.sample == "" {
						body, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
					}
					_, err = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				t1 := time.Now()
				if t1.Before(start) || t1.After(end) {
					continue
				}
				w.lat = append(w.lat, t1.Sub(t0))
				switch {
				case err != nil:
					w.err++
					if w.sample == "" {
						w.sample = err.Error()
					}
				case status/100 != 2:
					w.non2xx++
					if w.sample == "" {
						w.sample = fmt.Sprintf("%d %s", status, strings.TrimSpace(string(body)))
					}
				}
			}
		})
	}

	// Sessions, CPU time and allocations over the measured window.
	time.Sleep(time.Until(start))
	cpu0, cpuOK0 := bhCPU(p.pid)
	counters0, countersOK0 := bhReadCounters(ctx, p)
	for t := time.Now(); t.Before(end); t = time.Now() {
		if mon == nil {
			time.Sleep(time.Until(end))
			break
		}
		var n int
		if err := mon.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, p.app).Scan(&n); err != nil {
			b.Fatal(err)
		}
		res.sessMax = max(res.sessMax, n)
		time.Sleep(min(100*time.Millisecond, time.Until(end)))
	}
	cpu1, cpuOK1 := bhCPU(p.pid)
	counters1, countersOK1 := bhReadCounters(ctx, p)
	wg.Wait()

	res.window = *bhDuration
	res.cpu, res.cpuKnown = cpu1-cpu0, cpuOK0 && cpuOK1
	res.counters, res.countersOK = counters1.minus(counters0), countersOK0 && countersOK1
	for _, w := range workers {
		res.requests += len(w.lat)
		res.latencies = append(res.latencies, w.lat...)
		res.non2xx += w.non2xx
		res.errs += w.err
		if res.sample == "" {
			res.sample = w.sample
		}
	}
	slices.Sort(res.latencies)
	if mon != nil {
		// Backends report their statistics at most once a second.
		time.Sleep(1500 * time.Millisecond)
		res.sessNew = bhSessions(b, mon) - sess0
	}
	return res
}

// bhSessions returns pg_stat_database.sessions of the current database.
func bhSessions(b *testing.B, mon *pgx.Conn) int64 {
	b.Helper()
	var n int64
	if _, err := mon.Exec(b.Context(), `SELECT pg_stat_clear_snapshot()`); err != nil {
		b.Fatal(err)
	}
	if err := mon.QueryRow(b.Context(), `SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// bhCPU returns the CPU time, user and system, of the process pid so far,
// from /proc (Linux; false elsewhere).
func bhCPU(pid int) (time.Duration, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command, which is in parentheses: state is
	// field 3, utime 14 and stime 15, in clock ticks of 1/100 s.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// bhCounters are counters of a program's own.
type bhCounters struct {
	mallocs       float64 // heap allocations
	waits         float64 // acquisitions of a database connection that waited for one
	waitSeconds   float64 // the time they waited
	hasWaits      bool    // waits and waitSeconds are known (not for a waybill without go_sql_*)
	statements    float64 // statements sent to PostgreSQL
	hasStatements bool    // statements is known (not for a waybill without waybill_db_statements_total)
}

func (c bhCounters) plus(o bhCounters) bhCounters {
	return bhCounters{c.mallocs + o.mallocs, c.waits + o.waits, c.waitSeconds + o.waitSeconds, c.hasWaits && o.hasWaits,
		c.statements + o.statements, c.hasStatements && o.hasStatements}
}

func (c bhCounters) minus(o bhCounters) bhCounters {
	return bhCounters{c.mallocs - o.mallocs, c.waits - o.waits, c.waitSeconds - o.waitSeconds, c.hasWaits && o.hasWaits,
		c.statements - o.statements, c.hasStatements && o.hasStatements}
}

// bhReadCounters returns the counters of p so far: from waybill's /metrics,
// or from the line "mallocs N waits W wait_ns T statements S" that the
// floor prints on SIGUSR1. It returns false when they cannot be read.
func bhReadCounters(ctx context.Context, p *bhProgram) (bhCounters, bool) {
	var c bhCounters
	if p.name == "floor" {
		for len(p.stdout) > 0 {
			<-p.stdout
		}
		if err := syscall.Kill(p.pid, syscall.SIGUSR1); err != nil {
			return c, false
		}
		timeout := time.After(5 * time.Second)
		for {
			select {
			case line := <-p.stdout:
				var ns float64
				if _, err := fmt.Sscanf(line, "mallocs %g waits %g wait_ns %g statements %g", &c.mallocs, &c.waits, &ns, &c.statements); err == nil {
					c.waitSeconds, c.hasWaits, c.hasStatements = ns/1e9, true, true
					return c, true
				}
			case <-timeout:
				return c, false
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/metrics", nil)
	if err != nil {
		return c, false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, false
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := map[string]bool{}
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		name, _, _ = strings.Cut(name, "{")
		var dst *float64
		switch name {
		case "go_memstats_mallocs_total":
			dst = &c.mallocs
		case "go_sql_wait_count_total":
			dst = &c.waits
		case "go_sql_wait_duration_seconds_total":
			dst = &c.waitSeconds
		case "waybill_db_statements_total":
			dst = &c.statements
		default:
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return c, false
		}
		*dst += f
		found[name] = true
	}
	c.hasWaits = found["go_sql_wait_count_total"] && found["go_sql_wait_duration_seconds_total"]
	c.hasStatements = found["waybill_db_statements_total"]
	return c, found["go_memstats_mallocs_total"]
}
