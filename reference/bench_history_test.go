package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/waybillhq/waybill/resource"
)

// BenchmarkHistory measures what keeping the records' history costs a
// write: POST and PATCH of a quotation through the reference's HTTP handler
// (in process, on PostgreSQL, the outbox on as served), with the history
// (one more INSERT in the write's transaction, the old values of the fields
// the write changed) and without it (Registry.History nil), in the same
// run: each iteration writes once with the history and
// once without, the order alternating, and reports the time of each
// (ns/history, ns/no-history) and their ratio. Run it with
//
//	go test -run '^$' -bench BenchmarkHistory -benchtime 5s ./reference
//
// The goal is a write with history within 1.1 times the one without.
func BenchmarkHistory(b *testing.B) {
	d := loadQuotations(b, 10_000)
	with, token := benchAPIWith(b, d, false, nil)
	without, _ := benchAPIWith(b, d, false, func(api *resource.Registry) { api.History = nil })
	create := "/v1/" + d.branch + "/quotations"
	body := func() string {
		return fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-11-23","valid_until":"2026-12-23","total_packages":3}`, d.account)
	}
	// Each PATCH changes two fields of the next of the loaded quotations,
	// in turn, so that each is a write with an entry and no row is updated
	// over and over.
	rows, err := d.db.QueryContext(b.Context(), "SELECT id FROM quotations WHERE branch_id = $1", d.branch)
	if err != nil {
		b.Fatal(err)
	}
	var items []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		items = append(items, create+"/"+id)
	}
	if err := rows.Close(); err != nil {
		b.Fatal(err)
	}
	n := 0
	patch := func(h http.Handler) func() {
		return func() {
			n++
			benchCall(b, h, token, http.MethodPatch, items[n%len(items)], http.StatusOK, func() string {
				return fmt.Sprintf(`{"total_packages":%d,"total_weight_kg":%d.5}`, 1000+n, n)
			}, nil)()
		}
	}
	// Each iteration writes once with the history and once without, the
	// order alternating, so that both see the same machine at the same
	// moment (other programs on it move both alike); ns/op is the pair,
	// and the metrics split it.
	pairs := []struct {
		name          string
		history, bare func()
	}{
		{"post", benchCall(b, with, token, http.MethodPost, create, http.StatusCreated, body, nil),
			benchCall(b, without, token, http.MethodPost, create, http.StatusCreated, body, nil)},
		{"patch", patch(with), patch(without)},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			var withNs, withoutNs time.Duration
			i := 0
			for b.Loop() {
				first, second, a, z := p.history, p.bare, &withNs, &withoutNs
				if i%2 == 1 {
					first, second, a, z = p.bare, p.history, &withoutNs, &withNs
				}
				i++
				t0 := time.Now()
				first()
				t1 := time.Now()
				second()
				*a += t1.Sub(t0)
				*z += time.Since(t1)
			}
			b.ReportMetric(float64(withNs.Nanoseconds())/float64(b.N), "ns/history")
			b.ReportMetric(float64(withoutNs.Nanoseconds())/float64(b.N), "ns/no-history")
			b.ReportMetric(float64(withNs)/float64(withoutNs), "ratio")
		})
	}
}
