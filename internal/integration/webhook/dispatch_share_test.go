package webhook_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query/sqlbuild"
)

// addEvents appends n events of org, each of its own record, in one
// transaction, as addEvent does one.
func (e *dispatchEnv) addEvents(org string, n int) {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.db.BeginTx(ctx, nil)
	require.NoError(e.t, err)
	defer func() { _ = tx.Rollback() }()
	text, args, err := sqlbuild.SQL(e.d, sq.Expr(`INSERT INTO waybill_event_heads (organization_id, seq) VALUES (?, ?)
ON CONFLICT (organization_id) DO UPDATE SET seq = waybill_event_heads.seq + excluded.seq RETURNING seq`, org, n))
	require.NoError(e.t, err)
	var last int64
	require.NoError(e.t, tx.QueryRowContext(ctx, text, args...).Scan(&last))
	at := e.d.Timestamp(time.Now())
	for start := 0; start < n; start += 100 {
		b := sq.Insert("waybill_events").Columns("organization_id", "seq", "id", "type", "resource", "branch_id", "record_id", "time", "body")
		for i := start; i < min(n, start+100); i++ {
			id, seq := uuid.Must(uuid.NewV7()).String(), last-int64(n)+1+int64(i)
			b = b.Values(org, seq, id, "quotation.created", "quotations", nil, "bulk-"+strconv.FormatInt(seq, 10), at,
				`{"specversion":"1.0","id":"`+id+`","type":"quotation.created"}`)
		}
		text, args, err := sqlbuild.SQL(e.d, b)
		require.NoError(e.t, err)
		_, err = tx.ExecContext(ctx, text, args...)
		require.NoError(e.t, err)
	}
	require.NoError(e.t, tx.Commit())
}

// Organizations whose receivers hang, each with a backlog, share the
// workers and leave one free: the delivery of an organization that has
// none in flight leaves while they are all still stuck.
func TestDispatcherSharesWorkersAmongBusyOrganizations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		workers, slow int
		most          int // attempts of one slow organization at once
		hung          int // attempts of the slow organizations together
	}{
		{"two slow of 8 workers", 8, 2, 4, 7},
		{"three slow of 4 workers", 4, 3, 1, 3},
		{"five slow of 8 workers", 8, 5, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachDB(t, func(t *testing.T, e *dispatchEnv) {
				release := make(chan struct{})
				var (
					mu      sync.Mutex
					hanging = map[string]int{}
					most    = map[string]int{}
				)
				rc := newReceiver(t, func(r *http.Request, _ string, _ []byte, _ int) int {
					if strings.HasPrefix(r.URL.Path, "/slow") {
						mu.Lock()
						hanging[r.URL.Path]++
						most[r.URL.Path] = max(most[r.URL.Path], hanging[r.URL.Path])
						mu.Unlock()
						<-release
						mu.Lock()
						hanging[r.URL.Path]--
						mu.Unlock()
					}
					return http.StatusOK
				})
				total := func() (n int) {
					mu.Lock()
					defer mu.Unlock()
					for _, h := range hanging {
						n += h
					}
					return n
				}
				for i := range tc.slow {
					org, path := uuid.NewString(), "slow-"+strconv.Itoa(i)
					_, secret := e.addEndpoint(endpointSpec{Org: org, URL: rc.url(path), Types: []string{"*"}})
					rc.expect(path, secret)
					e.addEvents(org, 40)
				}
				idle := uuid.NewString()
				_, secret := e.addEndpoint(endpointSpec{Org: idle, URL: rc.url("idle"), Types: []string{"*"}})
				rc.expect("idle", secret)
				d := e.dispatcher(nil)
				d.Workers, d.Timeout, d.Lease = tc.workers, 30*time.Second, time.Minute
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- d.Run(ctx) }()
				var once sync.Once
				stop := func() {
					once.Do(func() {
						close(release)
						cancel()
						require.NoError(t, <-done)
					})
				}
				defer stop()
				require.Eventually(t, func() bool { return total() >= tc.hung }, 10*time.Second, 5*time.Millisecond,
					"every slow organization has its attempts hanging")
				ev := e.addEvent(idle, "quotation.created", "", "rec-idle", time.Now())
				d.Wake()
				require.Eventually(t, func() bool { return slices.Contains(rc.Got(), ev.ID) }, 10*time.Second, 5*time.Millisecond,
					"the idle organization's delivery leaves while the slow ones hang")
				mu.Lock()
				for path, n := range most {
					assert.LessOrEqual(t, n, tc.most, "%s took more than its share", path)
				}
				assert.Len(t, most, tc.slow, "every slow organization got a worker")
				mu.Unlock()
				assert.LessOrEqual(t, total(), tc.workers-1, "and they never took the last worker")
				stop()
				rc.requireClean()
			})
		})
	}
}

// A claim finds the due delivery of an idle organization behind the
// backlogs of busy ones, thousands of deliveries of one of them among
// them: the first RunOnce delivers it.
func TestDispatcherClaimFindsAnIdleOrganizationBehindABacklog(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		for i, n := range []int{3000, 50, 50} {
			org, path := uuid.NewString(), "busy-"+strconv.Itoa(i)
			_, secret := e.addEndpoint(endpointSpec{Org: org, URL: rc.url(path), Types: []string{"*"}})
			rc.expect(path, secret)
			e.addEvents(org, n)
		}
		idle := uuid.NewString()
		ep, secret := e.addEndpoint(endpointSpec{Org: idle, URL: rc.url("idle"), Types: []string{"*"}})
		rc.expect("idle", secret)
		ev := e.addEvent(idle, "quotation.created", "", "rec-idle", time.Now())
		d := e.dispatcher(nil)
		n, err := d.RunOnce(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 7, n, "8 workers for 4 organizations: 2 each, the last one kept for an organization with none")
		assert.Contains(t, rc.Got(), ev.ID)
		assert.Equal(t, "delivered", e.deliveryOf(ep, ev.ID).Status)
		rc.requireClean()
	})
}
