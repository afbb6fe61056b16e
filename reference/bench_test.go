package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// The list request of the benchmark: the draft quotations still valid on
// 2026-05-26, the newest 50 by quotation date. The data is a branch's
// history, 400 quotations a day going back from 2026-11-22, each valid for
// 30 days: the filter matches the last 210 days' drafts, about 14,000
// quotations, whether the history holds 100,000 quotations (250 days) or
// 1,000,000 (seven years).
const benchQuery = "filter=status:eq:draft&filter=valid_until:gte:2026-05-26&sort=quotation_date:desc&limit=50"

// benchData is a PostgreSQL database with n quotations in one branch.
type benchData struct {
	url, org, branch, account string
	db                        *sql.DB
}

// loadQuotations loads n quotations into a schema of their own.
func loadQuotations(b testing.TB, n int) benchData {
	b.Helper()
	return loadQuotationsAt(b, testdb.PostgresURL(b), n)
}

// loadQuotationsAt migrates the database that dbURL names and loads n
// quotations into it.
func loadQuotationsAt(b testing.TB, dbURL string, n int) benchData {
	b.Helper()
	ctx := context.Background()
	db, _, _, err := openAndMigrate(ctx, dbURL, defaultDBMaxConns)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	d := benchData{url: dbURL, org: newID(), branch: newID(), account: newID(), db: db}
	account := d.account
	start := time.Now()
	for _, stmt := range []string{
		fmt.Sprintf(`INSERT INTO organizations (id, name) VALUES ('%s', 'Bench')`, d.org),
		fmt.Sprintf(`INSERT INTO branches (id, organization_id, name) VALUES ('%s', '%s', 'Main')`, d.branch, d.org),
		fmt.Sprintf(`INSERT INTO accounts (id, organization_id, branch_id, company_name) VALUES ('%s', '%s', '%s', 'Acme')`, account, d.org, d.branch),
		fmt.Sprintf(`INSERT INTO quotations (id, organization_id, branch_id, created_at, updated_at, quotation_number,
			account_id, quotation_date, valid_until, status, total_weight_kg, total_volume_m3, total_packages)
		SELECT gen_random_uuid(), '%[1]s', '%[2]s', timestamptz '2026-11-22' - make_interval(secs => i * 216), now(),
			'Q-' || lpad(i::text, 7, '0'), '%[3]s', date '2026-11-22' - i / 400, date '2026-11-22' - i / 400 + 30,
			(ARRAY['draft','sent','accepted','rejected','expired','cancelled'])[1 + i %% 6],
			(i %% 1000) * 1.5, (i %% 100) * 0.25, i %% 50
		FROM generate_series(1, %[4]d) AS i`, d.org, d.branch, account, n),
		`VACUUM (ANALYZE) quotations`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d quotations loaded in %v", n, time.Since(start).Round(time.Millisecond))
	return d
}

// statements returns the two statements the API runs for benchQuery, with
// their arguments, as the resource handlers build them.
func (d benchData) statements(b testing.TB) (count string, countArgs []any, page string, pageArgs []any) {
	b.Helper()
	return d.statementsOf(b, benchQuery, nil)
}

// statementsOf returns the two statements the API runs for the list
// request rawQuery (limit, offset, sort and filters), with their arguments,
// as the resource handlers build them: the count, and the page, which reads
// one row more than the limit, to know whether a next page exists. after is
// the position of a cursor, the values of the sort keys of the last row of
// the previous page (nil: no cursor); the page then seeks past it.
func (d benchData) statementsOf(b testing.TB, rawQuery string, after []any) (count string, countArgs []any, page string, pageArgs []any) {
	b.Helper()
	dialect := query.Postgres
	if strings.HasPrefix(d.url, "sqlite://") {
		dialect = query.SQLite
	}
	api, err := newAPI(d.db, dialect, nil, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	r := api.Resource("quotations")
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		b.Fatal(err)
	}
	q, err := r.Schema().Parse(values)
	if err != nil {
		b.Fatal(err)
	}
	q.After = after
	var cols []string
	for _, f := range r.AllFields() {
		cols = append(cols, f.Name)
	}
	cols = append(cols, "organization_id", "branch_id")
	tenant := sq.Expr("organization_id = ? AND branch_id = ?", d.org, d.branch)
	count, countArgs, err = sqlbuild.SQL(dialect, sqlbuild.Count(dialect, q, sq.Select("COUNT(*)").From("quotations").Where(tenant)))
	if err != nil {
		b.Fatal(err)
	}
	peek := *q
	peek.Limit++
	page, pageArgs, err = sqlbuild.SQL(dialect, sqlbuild.Page(dialect, &peek, sq.Select(cols...).From("quotations").Where(tenant)))
	if err != nil {
		b.Fatal(err)
	}
	return count, countArgs, page, pageArgs
}

// explain logs the plans of the two statements of benchQuery.
func (d benchData) explain(b testing.TB) {
	count, countArgs, page, pageArgs := d.statements(b)
	d.logPlan(b, count, countArgs)
	d.logPlan(b, page, pageArgs)
}

// logPlan runs stmt with args under EXPLAIN (ANALYZE, BUFFERS) and logs
// the statement and its plan, without the planner's costs.
func (d benchData) logPlan(b testing.TB, stmt string, args []any) {
	b.Helper()
	rows, err := d.db.Query("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+stmt, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s %v\n%s", stmt, args, strings.Join(plan, "\n"))
}

// BenchmarkQuotationList is GET /v1/{branch}/quotations with three filters,
// a sort and a page through the whole stack (bearer verification, tenancy,
// query parsing, both SQL statements, JSON), against its floor: the same two
// statements through pgx alone, scanning into plain Go values.
func BenchmarkQuotationList(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("quotations=%d", n), func(b *testing.B) {
			d := loadQuotations(b, n)
			d.explain(b)
			b.Run("stack", func(b *testing.B) { benchStack(b, d, false) })
			b.Run("stack-parallel", func(b *testing.B) { benchStack(b, d, true) })
			b.Run("floor", func(b *testing.B) { benchFloor(b, d, false) })
			b.Run("floor-parallel", func(b *testing.B) { benchFloor(b, d, true) })
		})
	}
}

func benchStack(b *testing.B, d benchData, parallel bool) {
	h, token := benchAPI(b, d, false, true)
	target := "/v1/" + d.branch + "/quotations?" + benchQuery
	one := func() {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"limit":50`) {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	}
	measure(b, parallel, one)
}

func benchFloor(b *testing.B, d benchData, parallel bool) {
	ctx := context.Background()
	count, countArgs, page, pageArgs := d.statements(b)
	pool, err := pgxpool.New(ctx, d.url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	one := func() {
		var total int64
		if err := pool.QueryRow(ctx, count, countArgs...).Scan(&total); err != nil {
			b.Fatal(err)
		}
		rows, err := pool.Query(ctx, page, pageArgs...)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, number, account, status, org, branch string
			var external *string
			var qdate, valid, created, updated time.Time
			var weight, volume float64
			var packages int64
			if err := rows.Scan(&id, &external, &number, &account, &qdate, &valid, &status, &weight, &volume, &packages, &created, &updated, &org, &branch); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if rows.Err() != nil || n != 51 || total == 0 {
			b.Fatalf("rows %d total %d: %v", n, total, rows.Err())
		}
	}
	measure(b, parallel, one)
}

// measure runs one request per iteration, in parallel on every core or
// one after another, and reports requests per second besides ns/op, and
// the CPU time of this process per request (cpu-ns/op: the handler's own
// cost, without the database's, which ns/op includes while one request
// waits for its statements).
func measure(b *testing.B, parallel bool, one func()) {
	b.ReportAllocs()
	cpu := processCPU(b)
	start := time.Now()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				one()
			}
		})
	} else {
		for b.Loop() {
			one()
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time, user and system, this process has used.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
