package main

import (
	"bufio"
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// The PostgreSQL pool serves the requests that wait for a connection in the
// order they came: with one connection held, five waiters started one after
// another get it one after another.
func TestPoolServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.Context(), testdb.PostgresURL(t), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()

	held, err := db.Conn(ctx)
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	const waiters = 5
	for i := range waiters {
		wg.Go(func() {
			var one int
			if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
		// Long enough for the waiter to queue before the next starts.
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, held.Close())
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order, "the waiters got the connection in this order")
}

// The metrics of the PostgreSQL pool: go_sql_* as database/sql's collector
// names them, and the statements sent, BEGIN and COMMIT included.
func TestPoolMetrics(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.Context(), testdb.PostgresURL(t), 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()
	m := newMetrics()
	m.watchDB(db, "postgres")
	read := func() map[string]float64 {
		rec := httptest.NewRecorder()
		m.handler(testLogger(t)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		out := map[string]float64{}
		sc := bufio.NewScanner(rec.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") || !strings.Contains(line, `db_name="postgres"`) {
				continue
			}
			name, _, _ := strings.Cut(line, "{")
			_, value, _ := strings.Cut(line, "} ")
			f, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err, line)
			out[name] = f
		}
		return out
	}

	before := read()
	for range 3 {
		_, err := db.ExecContext(ctx, `SELECT 1`)
		require.NoError(t, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SELECT 1`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	after := read()
	assert.Equal(t, 6.0, after["waybill_db_statements_total"]-before["waybill_db_statements_total"],
		"three statements, then BEGIN, one statement and COMMIT")
	assert.Equal(t, 2.0, after["go_sql_max_open_connections"])

	// Both connections held, a third request waits.
	c1, err := db.Conn(ctx)
	require.NoError(t, err)
	c2, err := db.Conn(ctx)
	require.NoError(t, err)
	held := read()
	assert.Equal(t, 2.0, held["go_sql_in_use_connections"])
	assert.Equal(t, 2.0, held["go_sql_open_connections"])
	done := make(chan error)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := db.ExecContext(ctx, `SELECT 1`)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, c1.Close())
	require.NoError(t, <-done)
	require.NoError(t, c2.Close())
	waited := read()
	assert.Equal(t, 1.0, waited["go_sql_wait_count_total"]-held["go_sql_wait_count_total"])
	assert.GreaterOrEqual(t, waited["go_sql_wait_duration_seconds_total"]-held["go_sql_wait_duration_seconds_total"], 0.05)
	assert.Equal(t, 0.0, waited["go_sql_in_use_connections"])
	assert.Equal(t, 2.0, waited["go_sql_idle_connections"])
}

// Closing the database closes its pool: no connection of it stays open.
func TestPoolClosesWithDB(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.Context(), testdb.PostgresURL(t), 2)
	require.NoError(t, err)
	pg := pgDatabaseOf(db)
	require.NotNil(t, pg)
	_, err = db.ExecContext(t.Context(), `SELECT 1`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Nil(t, pgDatabaseOf(db), "forgotten once closed")
	assert.Equal(t, int32(0), pg.pool.Stat().TotalConns())
	var one int
	assert.ErrorContains(t, db.QueryRowContext(t.Context(), `SELECT 1`).Scan(&one), "closed")
}
