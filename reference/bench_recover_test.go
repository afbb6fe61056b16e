package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/webhook"
)

// BenchmarkWebhookRecover measures, through the server in process on
// PostgreSQL, a recovery of a full batch: 10,001 account events are kept
// and a disabled endpoint subscribes to them; each recovery reads the
// range and queues webhook.MaxRecover (10,000) deliveries, answering
// next_since for the one left. The deliveries are deleted between
// iterations (not timed), so each recovery makes all of them. It reports
// the time per event queued (ns/event).
func BenchmarkWebhookRecover(b *testing.B) {
	dbURL := testdb.PostgresURL(b)
	w := newWebhookWorld(b, dbURL, "--rate-rest", "0", "--webhook-allow-private")
	base, org, branch, token := w.base, w.org, w.branch, w.token
	res := benchDo(b, "POST", base+"/v1/"+org+"/webhook_endpoints", token, `{"url": "http://127.0.0.1:9/hook", "event_types": ["account.*"]}`)
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != http.StatusCreated {
		b.Fatalf("register: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	endpoint := base + "/v1/" + org + "/webhook_endpoints/" + created.Data.ID
	// Disabled: the recovered deliveries wait, and nothing is posted.
	if res := benchDo(b, "PATCH", endpoint, token, `{"status": "disabled"}`); res.StatusCode != http.StatusOK {
		b.Fatalf("disable: %d", res.StatusCode)
	}
	since := time.Now().UTC().Add(-time.Second)
	const events = webhook.MaxRecover + 1
	for start := 0; start < events; start += 1000 {
		items := make([]string, 0, 1000)
		for i := start; i < min(start+1000, events); i++ {
			items = append(items, fmt.Sprintf(`{"company_name": "Firm %d"}`, i))
		}
		res := benchDo(b, "POST", base+"/v1/"+branch+"/accounts", token, "["+strings.Join(items, ",")+"]")
		if res.StatusCode != http.StatusCreated {
			b.Fatalf("batch: %d", res.StatusCode)
		}
		res.Body.Close()
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	body := `{"since": "` + since.Format(time.RFC3339Nano) + `"}`
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if _, err := db.Exec(`DELETE FROM waybill_webhook_deliveries WHERE endpoint_id = $1`, created.Data.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res := benchDo(b, "POST", endpoint+"/recover", token, body)
		var out struct {
			Data struct {
				Queued    int     `json:"queued"`
				NextSince *string `json:"next_since"`
			} `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusAccepted {
			b.Fatalf("recover: %d %v", res.StatusCode, err)
		}
		res.Body.Close()
		if out.Data.Queued != webhook.MaxRecover || out.Data.NextSince == nil {
			b.Fatalf("recover queued %d, next_since %v", out.Data.Queued, out.Data.NextSince)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/webhook.MaxRecover, "ns/event")
}
