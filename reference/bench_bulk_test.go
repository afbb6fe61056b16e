package main

// BenchmarkBulk measures batch writes as an ERP integration loads them:
// through the built waybill server, over HTTP, from concurrent clients,
// beside the floor of the same rows written with bare SQL in the same run.
// Run it with
//
//	go test -run '^$' -bench BenchmarkBulk -benchtime 1x ./reference
//
// with WAYBILL_TEST_DATABASE_URL set (or Docker for testcontainers). Its
// flags follow -args: -bb.duration D (each case's measured time, 5s),
// -bb.clients N (concurrent clients of each case, 4), -bb.shared (every
// client writes to one branch, instead of each to a branch of its own, as
// an ERP per branch does: the quotations of a branch take their numbers
// one transaction after the other, so the writers of one branch queue).
//
// The cases, each for the same time: "single" POSTs one quotation a
// request; "batch" POSTs batches of 1,000 quotations; "floor-insert"
// inserts the same 1,000 rows per statement with pgx (one multi-row
// INSERT, the server's columns, no hooks, events or API); "upsert" sends
// upserts of 1,000 existing quotations, each item changing a field (every
// outcome "updated"); "floor-update" updates the same 1,000 rows per
// statement with pgx (one UPDATE ... FROM (VALUES ...)). It reports
// records/s of each, the p99 latency of a request, and the ratios the
// goals name: batch/single and batch/floor-insert records per second.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waybillhq/waybill/internal/testdb"
)

var (
	bbDuration = flag.Duration("bb.duration", 5*time.Second, "BenchmarkBulk: measured `time` of each case")
	bbClients  = flag.Int("bb.clients", 4, "BenchmarkBulk: concurrent `clients` of each case")
	bbShared   = flag.Bool("bb.shared", false, "BenchmarkBulk: every client writes to one branch")
)

// bbBatch is the size of a batch.
const bbBatch = 1000

// bbResult is what one case measured.
type bbResult struct {
	records   int64
	latencies []time.Duration
	elapsed   time.Duration
	failures  int64
	sample    string
}

func (r *bbResult) perSecond() float64 { return float64(r.records) / r.elapsed.Seconds() }

func (r *bbResult) p99() time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	slices.Sort(r.latencies)
	return r.latencies[min(len(r.latencies)-1, len(r.latencies)*99/100)]
}

// bbRun runs one per client for the case's time, each call writing records
// (or failing with a sample of what went wrong), and measures.
func bbRun(b *testing.B, clients int, one func(ctx context.Context, client, round int) (records int, err error)) *bbResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), *bbDuration)
	defer cancel()
	res := &bbResult{}
	var mu sync.Mutex
	var records, failures atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for round := 0; ctx.Err() == nil; round++ {
				t0 := time.Now()
				n, err := one(ctx, c, round)
				if ctx.Err() != nil {
					break // cut by the end of the case: not counted
				}
				if err != nil {
					failures.Add(1)
					mu.Lock()
					if res.sample == "" {
						res.sample = err.Error()
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, time.Since(t0))
				records.Add(int64(n))
			}
			mu.Lock()
			res.latencies = append(res.latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.records, res.failures = records.Load(), failures.Load()
	if res.failures > 0 {
		b.Errorf("%d failed requests; first: %s", res.failures, res.sample)
	}
	return res
}

// bbToken returns a client-credentials token of the app from the server
// at base.
func bbToken(b *testing.B, base, clientID, secret string) string {
	b.Helper()
	req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, base+"/auth/v1/oauth/token", strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	status, body := bhDo(b, req)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); status != http.StatusOK || err != nil {
		b.Fatalf("token: %d %s", status, body)
	}
	return tok.AccessToken
}

func BenchmarkBulk(b *testing.B) {
	dbURL := testdb.PostgresDatabaseURL(b)
	d := loadQuotationsAt(b, dbURL, 0)
	waybillBin := buildPackage(b, b.TempDir(), "waybill", "github.com/waybillhq/waybill/reference")
	clients := *bbClients
	// Each client's branch and account: d's, or one of its own.
	branches, accounts := make([]string, clients), make([]string, clients)
	for c := range clients {
		branches[c], accounts[c] = d.branch, d.account
		if c == 0 || *bbShared {
			continue
		}
		branches[c], accounts[c] = newID(), newID()
		for _, stmt := range []string{
			fmt.Sprintf(`INSERT INTO branches (id, organization_id, name) VALUES ('%s', '%s', 'Branch %d')`, branches[c], d.org, c),
			fmt.Sprintf(`INSERT INTO accounts (id, organization_id, branch_id, company_name) VALUES ('%s', '%s', '%s', 'Acme')`, accounts[c], d.org, branches[c]),
		} {
			if _, err := d.db.ExecContext(b.Context(), stmt); err != nil {
				b.Fatal(err)
			}
		}
	}
	waybill, token := bhServe(b, waybillBin, dbURL, d.org, "bb-waybill",
		[]string{"--name", "ERP", "--scopes", "svc:quotations:read svc:quotations:write", "--all-branches"},
		"--db-max-conns", fmt.Sprint(2*clients))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	post := func(ctx context.Context, c int, body string, header map[string]string, want int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, waybill.url+"/v1/"+branches[c]+"/quotations", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != want {
			msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			return fmt.Errorf("%d: %s", res.StatusCode, msg)
		}
		_, err = io.Copy(io.Discard, res.Body)
		return err
	}
	item := func(c int, ext string, packages int) string {
		if ext == "" {
			return fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-11-20","valid_until":"2026-12-20","total_packages":%d}`, accounts[c], packages)
		}
		return fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-11-20","valid_until":"2026-12-20","total_packages":%d,"external_id":%q}`, accounts[c], packages, ext)
	}
	batchOf := func(c int, prefix string, packages int) string {
		items := make([]string, bbBatch)
		for i := range items {
			ext := ""
			if prefix != "" {
				ext = fmt.Sprintf("%s-%d", prefix, i)
			}
			items[i] = item(c, ext, packages)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	pool, err := pgxpool.New(b.Context(), bhWithParam(b, dbURL, "application_name", "bb-floor")+"&pool_max_conns="+fmt.Sprint(clients))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var floorSeq atomic.Int64
	results := map[string]*bbResult{}
	cases := []struct {
		name string
		one  func(ctx context.Context, client, round int) (int, error)
	}{
		{"single", func(ctx context.Context, c, round int) (int, error) {
			return 1, post(ctx, c, item(c, "", round%50), nil, http.StatusCreated)
		}},
		{"batch", func(ctx context.Context, c, round int) (int, error) {
			return bbBatch, post(ctx, c, batchOf(c, "", round%50), nil, http.StatusCreated)
		}},
		{"floor-insert", func(ctx context.Context, c, round int) (int, error) {
			var sb strings.Builder
			sb.WriteString(`INSERT INTO quotations (id, organization_id, branch_id, created_at, updated_at, quotation_number, account_id, quotation_date, valid_until, status, total_packages) VALUES `)
			args := []any{d.org, branches[c], accounts[c]}
			for i := range bbBatch {
				if i > 0 {
					sb.WriteString(", ")
				}
				p := len(args)
				fmt.Fprintf(&sb, "($%d, $1, $2, now(), now(), $%d, $3, '2026-11-20', '2026-12-20', 'draft', $%d)", p+1, p+2, p+3)
				args = append(args, newID(), fmt.Sprintf("F-%09d", floorSeq.Add(1)), round%50)
			}
			_, err := pool.Exec(ctx, sb.String(), args...)
			return bbBatch, err
		}},
	}
	for _, c := range cases {
		results[c.name] = bbRun(b, clients, c.one)
	}
	// The upserts change every record of their batch each round; each
	// client has its own 1,000.
	for c := range clients {
		if err := post(b.Context(), c, batchOf(c, fmt.Sprintf("ERP%d", c), 0), nil, http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	merge := map[string]string{"Prefer": "resolution=merge-duplicates"}
	results["upsert"] = bbRun(b, clients, func(ctx context.Context, c, round int) (int, error) {
		return bbBatch, post(ctx, c, batchOf(c, fmt.Sprintf("ERP%d", c), round%49+1), merge, http.StatusOK)
	})
	results["floor-update"] = bbRun(b, clients, func(ctx context.Context, c, round int) (int, error) {
		_, err := pool.Exec(ctx, `UPDATE quotations q SET total_packages = v.n, updated_at = now()
FROM (SELECT external_id, $3::bigint AS n FROM quotations WHERE branch_id = $1 AND external_id LIKE $2) v
WHERE q.branch_id = $1 AND q.external_id = v.external_id`, branches[c], fmt.Sprintf("ERP%d-%%", c), round%49+1)
		return bbBatch, err
	})

	var sb strings.Builder
	where := "each in a branch of its own"
	if *bbShared {
		where = "all in one branch"
	}
	fmt.Fprintf(&sb, "\nBenchmarkBulk: %d clients %s, %v a case, batches of %d quotations through the built server\n", clients, where, *bbDuration, bbBatch)
	for _, name := range []string{"single", "batch", "floor-insert", "upsert", "floor-update"} {
		r := results[name]
		fmt.Fprintf(&sb, "%-13s %10.0f records/s  p99 %8.1f ms  (%d records)\n", name, r.perSecond(), float64(r.p99().Microseconds())/1000, r.records)
		b.ReportMetric(r.perSecond(), name+"-records/s")
	}
	batchVsSingle := results["batch"].perSecond() / results["single"].perSecond()
	batchVsFloor := results["batch"].perSecond() / results["floor-insert"].perSecond()
	fmt.Fprintf(&sb, "batch/single %.1fx (goal >= 10x), batch/floor-insert %.2fx (goal >= 0.5x), upsert/floor-update %.2fx\n",
		batchVsSingle, batchVsFloor, results["upsert"].perSecond()/results["floor-update"].perSecond())
	b.ReportMetric(batchVsSingle, "batch/single")
	b.ReportMetric(batchVsFloor, "batch/floor")
	b.ReportMetric(0, "ns/op")
	fmt.Print(sb.String())
}
