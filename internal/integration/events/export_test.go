package events_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
)

// exportAccounts exports the accounts of branch a1 as NDJSON and returns
// each record's name by id, and the feed cursor of the answer.
func (e *env) exportAccounts(token string) (map[string]string, string, error) {
	req, err := http.NewRequest(http.MethodGet, e.http.URL+"/v1/"+a1+"/accounts?sort=id:asc", nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return nil, "", fmt.Errorf("export: %d %s", res.StatusCode, body)
	}
	names := map[string]string{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var rec struct{ ID, Name string }
		if err := jsonUnmarshal(sc.Bytes(), &rec); err != nil {
			return nil, "", err
		}
		names[rec.ID] = rec.Name
	}
	return names, res.Header.Get("Waybill-Feed-Cursor"), sc.Err()
}

// TestExportHandsOverToTheFeed: exports run while writers create, rename
// and delete accounts, each write with a name of its own; for every
// export, the feed after its cursor holds exactly the writes the export
// does not: the export with those events applied is the final state, and
// no event after the cursor carries a name the export shows. On
// PostgreSQL the writes' events wait unnumbered (nothing reads the feed
// meanwhile but a slow poller), so the exports meet committed events
// without a number, which they must number before they hand over.
func TestExportHandsOverToTheFeed(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		e.registry.ExportsAtOnce = 32 // the exports overlap; their slots are not under test
		token := e.codeToken(t, orgA, "user-1", allScopes...)
		writers, exports := 6, 8
		if e.dialect == query.SQLite {
			writers, exports = 2, 4
		}
		_, start := e.follow(t, orgA, token, "", "")

		var stop atomic.Bool
		var wg sync.WaitGroup
		var failures atomic.Int64
		fail := func(format string, args ...any) {
			if failures.Add(1) == 1 {
				t.Errorf(format, args...)
			}
		}
		for w := range writers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				var mine []string
				for n := 0; !stop.Load(); n++ {
					name := fmt.Sprintf("w%d-%d", w, n)
					switch op := rng.IntN(10); {
					case len(mine) == 0 || op < 4:
						r, err := e.do(http.MethodPost, "/v1/"+a1+"/accounts", token, `{"name":"`+name+`"}`)
						if err != nil || r.status != http.StatusCreated {
							fail("create: %v %d %s", err, r.status, r.raw)
							return
						}
						mine = append(mine, r.data()["id"].(string))
					case op < 8:
						id := mine[rng.IntN(len(mine))]
						r, err := e.do(http.MethodPatch, "/v1/"+a1+"/accounts/"+id, token, `{"name":"`+name+`"}`)
						if err != nil || r.status != http.StatusOK {
							fail("rename: %v %d %s", err, r.status, r.raw)
							return
						}
					default:
						i := rng.IntN(len(mine))
						r, err := e.do(http.MethodDelete, "/v1/"+a1+"/accounts/"+mine[i], token, "")
						if err != nil || r.status != http.StatusOK {
							fail("delete: %v %d %s", err, r.status, r.raw)
							return
						}
						mine = append(mine[:i], mine[i+1:]...)
					}
					if n%3 == 0 { // another organization's writes share the sequencer
						_, _ = e.do(http.MethodPost, "/v1/"+b1+"/accounts", e.codeToken(t, orgB, "user-2", allScopes...), `{"name":"other"}`)
					}
				}
			})
		}
		wg.Go(func() { // a slow poller of the feed: the sequencer runs now and then
			for !stop.Load() {
				time.Sleep(150 * time.Millisecond)
				_, _ = e.do(http.MethodGet, "/v1/"+orgA+"/events?after="+start+"&limit=1", token, "")
			}
		})

		type snapshot struct {
			names  map[string]string
			cursor string
		}
		var mu sync.Mutex
		var snaps []snapshot
		var ex sync.WaitGroup
		for i := range exports {
			ex.Go(func() {
				time.Sleep(time.Duration(100+150*i) * time.Millisecond)
				names, cursor, err := e.exportAccounts(token)
				if err != nil {
					fail("export: %v", err)
					return
				}
				mu.Lock()
				snaps = append(snaps, snapshot{names, cursor})
				mu.Unlock()
			})
		}
		ex.Wait()
		stop.Store(true)
		wg.Wait()
		require.Zero(t, failures.Load())

		final, _, err := e.exportAccounts(token)
		require.NoError(t, err)
		evs, _ := e.follow(t, orgA, token, start, "")
		require.Len(t, snaps, exports)
		for i, s := range snaps {
			require.NotEmpty(t, s.cursor, "export %d has a feed cursor", i)
			state := map[string]string{}
			for id, name := range s.names {
				state[id] = name
			}
			applied := 0
			for _, ev := range e.after(t, token, s.cursor) {
				id := ev["subject"].(string)
				data := ev["data"].(map[string]any)
				rec := data["record"].(map[string]any)
				switch typ := ev["type"].(string); {
				case !strings.HasPrefix(typ, "account.") || ev["branchid"] != a1:
					continue
				case typ == "account.deleted":
					_, ok := state[id]
					assert.True(t, ok, "export %d: the delete of %s after its cursor, of a record the export does not hold", i, id)
					delete(state, id)
				default:
					name := rec["name"].(string)
					assert.NotEqual(t, s.names[id], name, "export %d: %s %s is in the export and after its cursor", i, typ, name)
					if typ == "account.created" {
						_, ok := s.names[id]
						assert.False(t, ok, "export %d: %s is created after the cursor but in the export", i, id)
					}
					state[id] = name
				}
				applied++
			}
			assert.Equal(t, final, state, "export %d with the feed after its cursor (%d events) is the final state", i, applied)
		}
		assert.NotEmpty(t, evs)
	})
}

// after returns every event of organization A after cursor.
func (e *env) after(t *testing.T, token, cursor string) []map[string]any {
	t.Helper()
	evs, _ := e.follow(t, orgA, token, cursor, "")
	return evs
}

// TestExportsOnASmallPool: on PostgreSQL an export takes a second
// connection for a moment while it begins; eight exports and writers at
// once on a pool of two connections, beside readers of the feed whose
// sequencer waits for the same lock on a connection of its own, all finish
// (with export slots enough for all eight).
func TestExportsOnASmallPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	require.Equal(t, query.Postgres, e.dialect)
	e.db.SetMaxOpenConns(2)
	e.registry.ExportsAtOnce = 16 // the pool, not the export slots, is under test
	token := e.codeToken(t, orgA, "user-1", allScopes...)
	for range 20 {
		e.must(t, http.MethodPost, "/v1/"+a1+"/accounts", token, `{"name":"seed"}`)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 8 {
		wg.Go(func() {
			names, cursor, err := e.exportAccounts(token)
			if err == nil && (len(names) < 20 || cursor == "") {
				err = fmt.Errorf("export %d: %d records, cursor %q", i, len(names), cursor)
			}
			errs <- err
		})
		wg.Go(func() {
			r, err := e.do(http.MethodPost, "/v1/"+a1+"/accounts", token, `{"name":"more"}`)
			if err == nil && r.status != http.StatusCreated {
				err = fmt.Errorf("write: %d %s", r.status, r.raw)
			}
			errs <- err
		})
		wg.Go(func() { // a reader of the feed: a sequencer, which waits for the lock on a connection
			r, err := e.do(http.MethodGet, "/v1/"+orgA+"/events?limit=1000", token, "")
			if err == nil && r.status != http.StatusOK {
				err = fmt.Errorf("feed: %d %s", r.status, r.raw)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
