package main

// BenchmarkExport measures an export as a resynchronizing client meets it:
// 1,000,000 quotations of one branch through the built waybill server, as
// NDJSON and as CSV, beside PostgreSQL's own COPY (SELECT ...) TO STDOUT of
// the same rows in the same order (text format for NDJSON, CSV for CSV),
// read by pgx in the same run. Run it with
//
//	go test -run '^$' -bench BenchmarkExport -benchtime 1x ./reference
//
// with WAYBILL_TEST_DATABASE_URL set (or Docker for testcontainers). It
// reports rows per second of each, their ratio (goal: at least 0.5), and
// the server's peak resident memory during each export above its resident
// memory before it (goal: under 100 MiB), sampled every 10 ms from
// /proc/<pid>/status.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waybillhq/waybill/internal/testdb"
)

// beRows is the size of the exported branch.
const beRows = 1_000_000

// lineCounter counts the lines written to it.
type lineCounter struct{ lines int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// rss returns the resident memory of the process pid, in bytes.
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// peakRSS samples the resident memory of pid every 10 ms until stop is
// closed and returns the most it saw.
func peakRSS(pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := rss(pid); err == nil {
				peak = max(peak, v)
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

func BenchmarkExport(b *testing.B) {
	dbURL := testdb.PostgresDatabaseURL(b)
	d := loadQuotationsAt(b, dbURL, beRows)
	waybillBin := buildPackage(b, b.TempDir(), "waybill", "github.com/waybillhq/waybill/reference")
	waybill, token := bhServe(b, waybillBin, dbURL, d.org, "be-waybill",
		[]string{"--name", "Resync", "--scopes", "svc:quotations:read", "--branches", d.branch})
	conn, err := pgx.Connect(b.Context(), bhWithParam(b, dbURL, "application_name", "be-floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	// The export's query: the list's columns, in its default order.
	const columns = `id, external_id, quotation_number, account_id, quotation_date, valid_until, status, total_weight_kg, total_volume_m3,
		total_packages, created_at, updated_at, organization_id, branch_id`
	selectRows := fmt.Sprintf(`SELECT %s FROM quotations WHERE organization_id = '%s' AND branch_id = '%s' ORDER BY created_at DESC, id DESC`, columns, d.org, d.branch)

	type result struct {
		rows    int64
		elapsed time.Duration
		peak    int64 // bytes above idle; -1 for the floor
	}
	run := func(name, accept string) result {
		idle, err := rss(waybill.pid)
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		peak := peakRSS(waybill.pid, stop)
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, waybill.url+"/v1/"+d.branch+"/quotations", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", accept)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var c lineCounter
		_, err = io.Copy(&c, res.Body)
		res.Body.Close()
		elapsed := time.Since(start)
		close(stop)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d %v", name, res.StatusCode, err)
		}
		rows := c.lines
		if accept == "text/csv" {
			rows-- // the header row
		}
		if rows != beRows {
			b.Fatalf("%s: %d rows, not %d", name, rows, beRows)
		}
		return result{rows: rows, elapsed: elapsed, peak: <-peak - idle}
	}
	floor := func(copySQL string, header bool) result {
		var c lineCounter
		start := time.Now()
		if _, err := conn.PgConn().CopyTo(b.Context(), &c, copySQL); err != nil {
			b.Fatal(err)
		}
		rows := c.lines
		if header {
			rows--
		}
		return result{rows: rows, elapsed: time.Since(start), peak: -1}
	}
	floor("COPY ("+selectRows+") TO STDOUT", false) // unmeasured: the rows in the cache for all
	results := map[string]result{}
	for _, c := range []struct {
		name string
		run  func() result
	}{
		{"copy-text", func() result { return floor("COPY ("+selectRows+") TO STDOUT", false) }},
		{"ndjson", func() result { return run("ndjson", "application/x-ndjson") }},
		{"copy-csv", func() result { return floor("COPY ("+selectRows+") TO STDOUT WITH (FORMAT csv, HEADER)", true) }},
		{"csv", func() result { return run("csv", "text/csv") }},
	} {
		results[c.name] = c.run()
	}
	perSecond := func(r result) float64 { return float64(r.rows) / r.elapsed.Seconds() }
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nBenchmarkExport: %d quotations of one branch through the built server, beside COPY of the same rows\n", beRows)
	for _, name := range []string{"ndjson", "copy-text", "csv", "copy-csv"} {
		r := results[name]
		peak := ""
		if r.peak >= 0 {
			peak = fmt.Sprintf("  server peak RSS +%.1f MiB", float64(r.peak)/(1<<20))
			b.ReportMetric(float64(r.peak)/(1<<20), name+"-peak-MiB")
		}
		fmt.Fprintf(&sb, "%-9s %9.0f rows/s  %6.2f s%s\n", name, perSecond(r), r.elapsed.Seconds(), peak)
		b.ReportMetric(perSecond(r), name+"-rows/s")
	}
	nd, cs := perSecond(results["ndjson"])/perSecond(results["copy-text"]), perSecond(results["csv"])/perSecond(results["copy-csv"])
	fmt.Fprintf(&sb, "ndjson/copy %.2fx, csv/copy-csv %.2fx (goal >= 0.5x); peak RSS goal < 100 MiB above idle\n", nd, cs)
	b.ReportMetric(nd, "ndjson/copy")
	b.ReportMetric(cs, "csv/copy")
	b.ReportMetric(0, "ns/op")
	fmt.Print(sb.String())
}
