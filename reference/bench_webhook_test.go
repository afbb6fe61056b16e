package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waybillhq/waybill/internal/testdb"
)

// BenchmarkWebhookLatency measures, through the server on PostgreSQL, the
// time from a write's answer (its commit is just before) to the arrival of
// its webhook at a local receiver, with writes at 100 per second; it
// reports the median and the 99th percentile, and those of the writes
// themselves (post-p50-ms, post-p99-ms), which wake the dispatcher.
func BenchmarkWebhookLatency(b *testing.B) {
	dbURL := testdb.PostgresURL(b)
	w := newWebhookWorld(b, dbURL, "--rate-rest", "0", "--webhook-allow-private")
	base, org, branch, token := w.base, w.org, w.branch, w.token

	var (
		mu      sync.Mutex
		arrived = map[string]time.Time{}
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var ev struct {
			Subject string `json:"subject"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		arrived[ev.Subject] = at
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	res := benchDo(b, "POST", base+"/v1/"+org+"/webhook_endpoints", token, `{"url": "`+receiver.URL+`", "event_types": ["account.created"]}`)
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("register: %d", res.StatusCode)
	}

	answered := map[string]time.Time{}
	var posts []time.Duration
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		<-tick.C
		sent := time.Now()
		res := benchDo(b, "POST", base+"/v1/"+branch+"/accounts", token, fmt.Sprintf(`{"company_name": "Firm %d"}`, i))
		at := time.Now()
		posts = append(posts, at.Sub(sent))
		var created struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("write: %d %v", res.StatusCode, err)
		}
		res.Body.Close()
		answered[created.Data.ID] = at
	}
	b.StopTimer()
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= len(answered) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d webhooks arrived", n, len(answered))
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lat []time.Duration
	mu.Lock()
	for id, at := range answered {
		lat = append(lat, arrived[id].Sub(at))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	slices.Sort(posts)
	b.ReportMetric(float64(posts[len(posts)/2].Microseconds())/1000, "post-p50-ms")
	b.ReportMetric(float64(posts[len(posts)*99/100].Microseconds())/1000, "post-p99-ms")
}

// benchDo sends a request with a bearer token and a JSON body.
func benchDo(b *testing.B, method, url, token, body string) *http.Response {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}
