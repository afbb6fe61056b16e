package events_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
)

// benchEvents is how many events the feed benchmark reads.
const benchEvents = 100_000

// BenchmarkFeed reads pages of 1,000 events of an organization with
// 100,000: through the feed over HTTP (a token that sees every event);
// eventstore.Read, which the webhook fan-out uses; and as the floor the bare
// SQL that selects what a page shows. It reports events/s.
func BenchmarkFeed(b *testing.B) {
	e := newEnv(b, backends[0])
	ctx := context.Background()
	// 100,000 events of accounts in branch A1, as the outbox writes them.
	_, err := e.db.ExecContext(ctx, `INSERT INTO waybill_events (organization_id, seq, id, type, resource, branch_id, record_id, time, body)
		SELECT $1, n, gen_random_uuid()::text, 'account.created', 'accounts', $2, gen_random_uuid()::text, now(),
			'{"specversion":"1.0","id":"' || gen_random_uuid() || '","source":"/v1/`+a1+`/accounts/x","type":"account.created","subject":"x","time":"2026-11-24T00:00:00Z","datacontenttype":"application/json","organizationid":"`+orgA+`","branchid":"`+a1+`","clientid":"c","data":{"record":{"id":"x","name":"Account ' || n || '","note":null},"changed":["name"]}}'
		FROM generate_series(1, $3::bigint) AS n`, orgA, a1, benchEvents)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.db.ExecContext(ctx, `INSERT INTO waybill_event_heads (organization_id, seq) VALUES ($1, $2)`, orgA, benchEvents); err != nil {
		b.Fatal(err)
	}
	if _, err := e.db.ExecContext(ctx, `ANALYZE waybill_events`); err != nil {
		b.Fatal(err)
	}
	tok := e.codeToken(b, orgA, "u", allScopes...)
	const limit = 1000
	read := func(b *testing.B, page func(after int64) int64) {
		b.ReportAllocs()
		start, n := time.Now(), 0
		var after int64
		for b.Loop() {
			after = page(after)
			if after >= benchEvents {
				after = 0
			}
			n += limit
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
	}
	b.Run("feed", func(b *testing.B) {
		read(b, func(after int64) int64 {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/%s/events?limit=%d&after=%d", e.http.URL, orgA, limit, after), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatal(err, res)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return after + limit
		})
	})
	b.Run("floor/sql", func(b *testing.B) {
		read(b, func(after int64) int64 {
			rows, err := e.db.QueryContext(ctx, "SELECT seq, body FROM waybill_events WHERE organization_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", orgA, after, limit)
			if err != nil {
				b.Fatal(err)
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				var seq int64
				var body []byte
				if err := rows.Scan(&seq, &body); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if rows.Err() != nil || n != limit {
				b.Fatal(rows.Err(), n)
			}
			return after + limit
		})
	})
	b.Run("read", func(b *testing.B) {
		read(b, func(after int64) int64 {
			page, err := eventstore.Read(ctx, e.db, query.Postgres, orgA, after, benchEvents, limit)
			if err != nil || len(page) != limit {
				b.Fatal(err, len(page))
			}
			return after + limit
		})
	})
}
