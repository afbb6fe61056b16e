package main

// BenchmarkMillionRows measures the list of a branch that holds a million
// quotations, with another organization's 300,000 in the same table,
// through the built waybill server over HTTP, one request at a time. Run
// it with
//
//	go test -run '^$' -bench BenchmarkMillionRows -benchtime 100x -timeout 30m ./reference
//
// with WAYBILL_TEST_DATABASE_URL set (or Docker for testcontainers) and the
// go command on PATH (it builds the server). -benchtime 100x is the number
// of requests of each shape (a time, -benchtime 2s, works too: then each
// shape runs as many as fit); the whole run takes a few minutes, most of
// them loading the rows. -v shows the plans whole. Select shapes with
// -bench, e.g. 'BenchmarkMillionRows/(first-page|cursor-page-2000)$'.
//
// It loads the rows into a database of its own (loadQuotationsAt, one
// INSERT ... SELECT generate_series per organization, then VACUUM
// ANALYZE), creates an app of the branch with the admin command of the
// built binary, and starts the built server (rate limits off). It walks the
// list by cursor from page 1 to page 1,999 and benchQuery's filtered list
// to its end, checking that no page but the last comes short, that no
// quotation comes twice and that the cursor's page 2,000 holds what the
// offset's does. Then each shape, a sub-benchmark, repeats one request,
// 50 quotations a page, on one keep-alive connection:
//
//	first-page                   the default sort (created_at:desc), Prefer: count=none
//	cursor-page-2000             after= the cursor of page 1,999's answer, count=none
//	offset-page-2000             offset=99950, count=none
//	count-estimated              first-page with Prefer: count=estimated
//	count-exact                  first-page with Prefer: count=exact (the default)
//	filtered-sorted              benchQuery's filters and sort, count=none
//	filtered-sorted-count-exact  the same, count=exact
//	filtered-sorted-last-page    its last page (a short one), by cursor, count=none
//
// Each reports ns/op (the mean latency), p50-ms and p99-ms (nearest rank),
// and server-allocs/op, the server's heap allocations per request (from
// its /metrics). b.ReportAllocs is not used: it would count the client's
// allocations, in the test process. Last, cursor-page-2000-vs-first-page
// sends the first page and the cursor's page 2,000 in turn, b.N of each,
// so that both see the same machine, reports both p50s and x-first-page,
// the ratio of the cursor's p50 to the first page's, and fails when it
// exceeds 1.2. The run prints a table of every shape and logs the plans of
// each shape's statements (EXPLAIN (ANALYZE, BUFFERS)), rebuilt as the
// server builds them. Latency is measured by the client, from sending the
// request to reading the last byte of the answer; the client, the server
// and PostgreSQL share the machine.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/waybillhq/waybill/internal/testdb"
)

const (
	// mrQuotations are the quotations of the measured branch.
	mrQuotations = 1_000_000
	// mrOthers are the quotations of another organization's branch in the
	// same table, loaded first.
	mrOthers = 300_000
	// mrLimit is the page size of every shape.
	mrLimit = 50
	// mrDeepPage is the page that the cursor and the offset reach.
	mrDeepPage = 2000
	// mrTarget is the most the cursor's deep page may cost, as a multiple
	// of the first page's p50.
	mrTarget = 1.2
)

// mrShape is one request shape of BenchmarkMillionRows.
type mrShape struct {
	name   string
	query  string // the list request's query string
	prefer string // its Prefer header
	total  int64  // the pagination.total it must answer: -1 null, 0 any number
	rows   int    // the quotations it must answer; 0 for a full page
	// The statements to explain, as statementsOf builds them: the query
	// without after, the cursor's position, and whether the server
	// counts (count=exact, or count=estimated under ExactCountBelow).
	explainQuery string
	after        []any
	counts       bool
}

// mrRow is what BenchmarkMillionRows reads of a quotation.
type mrRow struct {
	ID            string `json:"id"`
	CreatedAt     string `json:"created_at"`
	QuotationDate string `json:"quotation_date"`
}

// mrAnswer is what BenchmarkMillionRows reads of a list answer.
type mrAnswer struct {
	Data       []mrRow `json:"data"`
	Pagination struct {
		Limit      int     `json:"limit"`
		Total      *int64  `json:"total"`
		NextCursor *string `json:"next_cursor"`
	} `json:"pagination"`
}

// mrWalk is where a walk by cursor ended.
type mrWalk struct {
	pages      int
	next       string   // the cursor of the page after the last read; "" when the list ended
	last       mrAnswer // the last page read
	lastCursor string   // the cursor that asked for it
	before     mrAnswer // the page before it
}

// position returns the cursor position after row in the order
// field:desc, id:desc, as statementsOf takes it.
func (r mrRow) position(b *testing.B, field string) []any {
	b.Helper()
	var t time.Time
	var err error
	switch field {
	case "created_at":
		t, err = time.Parse(time.RFC3339Nano, r.CreatedAt)
	case "quotation_date":
		t, err = time.Parse(time.DateOnly, r.QuotationDate)
	default:
		err = fmt.Errorf("no position of %s", field)
	}
	if err != nil {
		b.Fatal(err)
	}
	return []any{t, r.ID}
}

// mrResult is what one shape measured.
type mrResult struct {
	latencies bhResult // only its latencies, sorted
	allocs    float64  // the server's per request; -1 when unknown
}

// BenchmarkMillionRows is documented at the top of this file.
func BenchmarkMillionRows(b *testing.B) {
	dbURL := testdb.PostgresDatabaseURL(b)
	loadQuotationsAt(b, dbURL, mrOthers)
	d := loadQuotationsAt(b, dbURL, mrQuotations)
	var sizes string
	if err := d.db.QueryRow(`SELECT pg_size_pretty(pg_table_size('quotations')) || ' table, ' ||
		pg_size_pretty(pg_indexes_size('quotations')) || ' indexes' `).Scan(&sizes); err != nil {
		b.Fatal(err)
	}
	b.Logf("quotations: %d rows (%d of the measured branch, %d of another organization), %s",
		mrQuotations+mrOthers, mrQuotations, mrOthers, sizes)

	waybillBin := buildPackage(b, b.TempDir(), "waybill", "github.com/waybillhq/waybill/reference")
	waybill, token := bhServe(b, waybillBin, dbURL, d.org, "mr-waybill",
		[]string{"--name", "Million", "--scopes", "svc:quotations:read", "--branches", d.branch})

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: 2 * wait}
	base := waybill.url + "/v1/" + d.branch + "/quotations?"
	// get sends one list request and returns its status, Preference-Applied
	// and body.
	get := func(b *testing.B, rawQuery, prefer string) (int, string, []byte) {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, base+rawQuery, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Prefer", prefer)
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			b.Fatal(err)
		}
		return res.StatusCode, res.Header.Get("Preference-Applied"), body
	}
	// list sends a list request that must succeed, and decodes its answer.
	list := func(b *testing.B, rawQuery, prefer string) (mrAnswer, string) {
		status, applied, body := get(b, rawQuery, prefer)
		var a mrAnswer
		if err := json.Unmarshal(body, &a); status != http.StatusOK || err != nil {
			b.Fatalf("GET %s: %d %v: %.500s", rawQuery, status, err, body)
		}
		return a, applied
	}
	// walk pages the list rawQuery (without after) by cursor from its
	// first page, count=none, until it has read pages pages or the list
	// ends. Every page but the last must be full, and no quotation may
	// come twice.
	walk := func(rawQuery string, pages int) mrWalk {
		start := time.Now()
		seen := map[string]bool{}
		var w mrWalk
		for w.pages < pages {
			q := rawQuery
			if w.next != "" {
				q += "&after=" + url.QueryEscape(w.next)
			}
			a, _ := list(b, q, "count=none")
			w.pages++
			w.before, w.last, w.lastCursor = w.last, a, w.next
			for _, r := range a.Data {
				if seen[r.ID] {
					b.Fatalf("%s: page %d repeats quotation %s", rawQuery, w.pages, r.ID)
				}
				seen[r.ID] = true
			}
			if a.Pagination.NextCursor == nil {
				w.next = ""
				break
			}
			if len(a.Data) != mrLimit {
				b.Fatalf("%s: page %d holds %d quotations and has a next page", rawQuery, w.pages, len(a.Data))
			}
			w.next = *a.Pagination.NextCursor
		}
		b.Logf("%s: walked %d pages by cursor in %v", rawQuery, w.pages, time.Since(start).Round(time.Millisecond))
		return w
	}

	// Page 2,000 of the default order: the cursor of page 1,999's answer,
	// which must lead to the rows that offset 99,950 reads.
	limit := "limit=" + strconv.Itoa(mrLimit)
	deep := walk(limit, mrDeepPage-1)
	if deep.pages != mrDeepPage-1 || deep.next == "" {
		b.Fatalf("the list ended at page %d", deep.pages)
	}
	offsetQuery := limit + "&offset=" + strconv.Itoa((mrDeepPage-1)*mrLimit)
	byCursor, _ := list(b, limit+"&after="+url.QueryEscape(deep.next), "count=none")
	byOffset, _ := list(b, offsetQuery, "count=none")
	if len(byCursor.Data) != mrLimit || len(byOffset.Data) != mrLimit {
		b.Fatalf("page %d holds %d quotations by cursor, %d by offset", mrDeepPage, len(byCursor.Data), len(byOffset.Data))
	}
	for i := range byCursor.Data {
		if byCursor.Data[i].ID != byOffset.Data[i].ID {
			b.Fatalf("page %d, row %d: by cursor %s, by offset %s", mrDeepPage, i, byCursor.Data[i].ID, byOffset.Data[i].ID)
		}
	}
	// The last page of the filtered list, by cursor.
	filtered := walk(benchQuery, math.MaxInt)
	if filtered.pages < 2 || filtered.next != "" {
		b.Fatalf("the filtered list has %d pages", filtered.pages)
	}

	shapes := []mrShape{
		{name: "first-page", query: limit, prefer: "count=none", total: -1, explainQuery: limit},
		{name: "cursor-page-2000", query: limit + "&after=" + url.QueryEscape(deep.next), prefer: "count=none", total: -1,
			explainQuery: limit, after: deep.last.Data[mrLimit-1].position(b, "created_at")},
		{name: "offset-page-2000", query: offsetQuery, prefer: "count=none", total: -1, explainQuery: offsetQuery},
		{name: "count-estimated", query: limit, prefer: "count=estimated", explainQuery: limit},
		{name: "count-exact", query: limit, prefer: "count=exact", total: mrQuotations, explainQuery: limit, counts: true},
		{name: "filtered-sorted", query: benchQuery, prefer: "count=none", total: -1, explainQuery: benchQuery},
		{name: "filtered-sorted-count-exact", query: benchQuery, prefer: "count=exact", explainQuery: benchQuery, counts: true},
		{name: "filtered-sorted-last-page", query: benchQuery + "&after=" + url.QueryEscape(filtered.lastCursor), prefer: "count=none",
			total: -1, rows: len(filtered.last.Data), explainQuery: benchQuery, after: filtered.before.Data[mrLimit-1].position(b, "quotation_date")},
	}
	results := map[string]*mrResult{}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			count, countArgs, pageSQL, pageArgs := d.statementsOf(b, s.explainQuery, s.after)
			if s.counts {
				d.logPlan(b, count, countArgs)
			}
			d.logPlan(b, pageSQL, pageArgs)
			// Warm-up, and the checks of the answer.
			rows := s.rows
			if rows == 0 {
				rows = mrLimit
			}
			for range 3 {
				a, applied := list(b, s.query, s.prefer)
				if len(a.Data) != rows || applied != s.prefer || (a.Pagination.NextCursor == nil) != (rows < mrLimit) {
					b.Fatalf("%d quotations, Preference-Applied %q, next_cursor %v: want %d, %q", len(a.Data), applied, a.Pagination.NextCursor, rows, s.prefer)
				}
				switch {
				case s.total < 0 && a.Pagination.Total != nil, s.total >= 0 && a.Pagination.Total == nil,
					s.total > 0 && *a.Pagination.Total != s.total:
					b.Fatalf("pagination.total %v, want %d (-1: null)", a.Pagination.Total, s.total)
				}
			}
			res := &mrResult{allocs: -1}
			counters0, ok0 := bhReadCounters(b.Context(), waybill)
			requests := 0
			for b.Loop() {
				t0 := time.Now()
				status, _, body := get(b, s.query, s.prefer)
				res.latencies.latencies = append(res.latencies.latencies, time.Since(t0))
				if status != http.StatusOK {
					b.Fatalf("%d %.500s", status, body)
				}
				requests++
			}
			counters1, ok1 := bhReadCounters(b.Context(), waybill)
			slices.Sort(res.latencies.latencies)
			b.ReportMetric(float64(res.latencies.quantile(0.5))/1e6, "p50-ms")
			b.ReportMetric(float64(res.latencies.quantile(0.99))/1e6, "p99-ms")
			if ok0 && ok1 {
				res.allocs = (counters1.mallocs - counters0.mallocs) / float64(requests)
				b.ReportMetric(res.allocs, "server-allocs/op")
			}
			results[s.name] = res
		})
	}

	// The target: the first page and the cursor's page 2,000 one after the
	// other, so that both see the same machine.
	var first, deepest bhResult
	b.Run("cursor-page-2000-vs-first-page", func(b *testing.B) {
		first.latencies, deepest.latencies = nil, nil
		for b.Loop() {
			for i, s := range []*mrShape{&shapes[0], &shapes[1]} {
				t0 := time.Now()
				status, _, body := get(b, s.query, s.prefer)
				if i == 0 {
					first.latencies = append(first.latencies, time.Since(t0))
				} else {
					deepest.latencies = append(deepest.latencies, time.Since(t0))
				}
				if status != http.StatusOK {
					b.Fatalf("%s: %d %.500s", s.name, status, body)
				}
			}
		}
		slices.Sort(first.latencies)
		slices.Sort(deepest.latencies)
		ratio := float64(deepest.quantile(0.5)) / float64(first.quantile(0.5))
		b.ReportMetric(float64(first.quantile(0.5))/1e6, "first-p50-ms")
		b.ReportMetric(float64(deepest.quantile(0.5))/1e6, "cursor-p50-ms")
		b.ReportMetric(ratio, "x-first-page")
		b.ReportMetric(0, "ns/op")
		if ratio > mrTarget {
			b.Errorf("the cursor's page %d takes %.2fx the first page's p50 (%v against %v), more than %.1fx",
				mrDeepPage, ratio, deepest.quantile(0.5), first.quantile(0.5), mrTarget)
		}
	})

	// The table.
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nBenchmarkMillionRows: %d quotations in the branch, %d of another organization beside them; %d quotations a page; requests one at a time\n",
		mrQuotations, mrOthers, mrLimit)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tPrefer\trequests\tp50\tp99\tserver allocs/req\t")
	for _, s := range shapes {
		r := results[s.name]
		if r == nil {
			continue
		}
		allocs := "-"
		if r.allocs >= 0 {
			allocs = fmt.Sprintf("%.0f", r.allocs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", s.name, s.prefer, len(r.latencies.latencies),
			bhMillis(r.latencies.quantile(0.5)), bhMillis(r.latencies.quantile(0.99)), allocs)
	}
	_ = tw.Flush()
	if len(first.latencies) > 0 {
		fmt.Fprintf(&sb, "cursor page %d against the first page, alternating, %d of each: p50 %s against %s, %.2fx (target at most %.1fx)\n",
			mrDeepPage, len(first.latencies), bhMillis(deepest.quantile(0.5)), bhMillis(first.quantile(0.5)),
			float64(deepest.quantile(0.5))/float64(first.quantile(0.5)), mrTarget)
	}
	fmt.Print(sb.String())
}
