package events_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write is a write that committed, as its client saw it.
type write struct {
	record, typ, name string
}

// TestFeedUnderConcurrentWriters is the feed's property: while many
// writers create, update and delete records of several resources and
// branches at once — some of their writes rolled back, before the outbox
// or after it appended — a consumer follows the feed; afterwards it has
// seen every committed write exactly once, nothing that rolled back, and
// the events of each record in the order they committed.
func TestFeedUnderConcurrentWriters(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		writers, perWriter := 16, 60
		if e.dialect.String() == "sqlite" {
			writers, perWriter = 4, 60
		}
		tok := e.codeToken(t, orgA, "u", allScopes...)
		paths := []string{"/v1/" + a1 + "/accounts", "/v1/" + a2 + "/accounts", "/v1/" + a1 + "/quotations", "/v1/" + a2 + "/zones", "/v1/" + orgA + "/vehicles"}
		type rec struct{ path, id string }
		var (
			mu        sync.Mutex
			committed []write
			records   []rec
			failures  []string
		)
		pick := func(r *rand.Rand) (rec, bool) {
			mu.Lock()
			defer mu.Unlock()
			if len(records) == 0 {
				return rec{}, false
			}
			return records[r.IntN(len(records))], true
		}
		done := make(chan struct{})
		var seen []map[string]any
		consumerErr := make(chan error, 1)
		go func() {
			// The consumer follows the feed while the writers write, then
			// drains it.
			after, finished := "", false
			for {
				select {
				case <-done:
					finished = true
				default:
				}
				p, r, err := e.feedPage("/v1/"+orgA+"/events?limit=25&after="+after, tok)
				if err == nil && r.status != http.StatusOK {
					err = fmt.Errorf("feed: %d %s", r.status, r.raw)
				}
				if err != nil {
					consumerErr <- err
					return
				}
				for _, raw := range p.Data {
					var ev map[string]any
					if err := jsonUnmarshal(raw, &ev); err != nil {
						consumerErr <- err
						return
					}
					seen = append(seen, ev)
				}
				moved := *p.NextCursor != after
				after = *p.NextCursor
				if finished && len(p.Data) == 0 && !moved {
					consumerErr <- nil
					return
				}
			}
		}()

		var wg sync.WaitGroup
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for k := range perWriter {
					name := fmt.Sprintf("w%d-%d", g, k)
					switch n := r.IntN(20); {
					case n == 0:
						name = fmt.Sprintf("%s-%d-%d", failName, g, k)
					case n == 1:
						name = fmt.Sprintf("%s-%d-%d", failOutbox, g, k)
					}
					target, ok := pick(r)
					op := r.IntN(10)
					var res response
					var err error
					switch {
					case !ok || op < 4:
						path := paths[r.IntN(len(paths))]
						res, err = e.do("POST", path, tok, `{"name": "`+name+`"}`)
						if err == nil && res.status == http.StatusCreated {
							id := res.data()["id"].(string)
							mu.Lock()
							records = append(records, rec{path, id})
							committed = append(committed, write{id, "created", name})
							mu.Unlock()
						}
					case op < 9:
						res, err = e.do("PATCH", target.path+"/"+target.id, tok, `{"name": "`+name+`"}`)
						if err == nil && res.status == http.StatusOK {
							mu.Lock()
							committed = append(committed, write{target.id, "updated", name})
							mu.Unlock()
						}
					default:
						res, err = e.do("DELETE", target.path+"/"+target.id, tok, "")
						if err == nil && res.status == http.StatusOK {
							mu.Lock()
							committed = append(committed, write{target.id, "deleted", ""})
							mu.Unlock()
						}
					}
					if err == nil && res.status >= 300 && !strings.HasPrefix(name, "fail-") && res.status != http.StatusNotFound {
						err = fmt.Errorf("%d %s", res.status, res.raw)
					}
					if err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		select {
		case err := <-consumerErr:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("the consumer did not catch up within a minute")
		}
		require.Empty(t, failures)

		// Every committed write exactly once, nothing else.
		want := map[write]int{}
		for _, w := range committed {
			want[w]++
		}
		got := map[write]int{}
		ids := map[string]bool{}
		perRecord := map[string][]map[string]any{}
		for _, ev := range seen {
			id := ev["id"].(string)
			require.False(t, ids[id], "event %s seen twice", id)
			ids[id] = true
			typ := strings.TrimPrefix(ev["type"].(string), strings.Split(ev["type"].(string), ".")[0]+".")
			rec := ev["data"].(map[string]any)["record"].(map[string]any)
			name, _ := rec["name"].(string)
			require.False(t, strings.HasPrefix(name, "fail-"), "an event of a write that rolled back: %v", ev)
			got[write{ev["subject"].(string), typ, name}]++
			perRecord[ev["subject"].(string)] = append(perRecord[ev["subject"].(string)], ev)
		}
		assert.Equal(t, want, got, "the consumer saw every committed write exactly once")
		t.Logf("%d writes committed, %d events seen", len(committed), len(seen))

		// Per record: created first, deleted last, in commit order (each
		// write of a record takes the record's lock, then its clock).
		for id, evs := range perRecord {
			require.Equal(t, "created", lastPart(evs[0]["type"].(string)), "record %s", id)
			prev := time.Time{}
			for i, ev := range evs {
				at, err := time.Parse(time.RFC3339Nano, ev["time"].(string))
				require.NoError(t, err)
				require.False(t, at.Before(prev), "record %s: event %d is older than the one before it", id, i)
				prev = at
				if lastPart(ev["type"].(string)) == "deleted" {
					require.Equal(t, len(evs)-1, i, "record %s: an event after its delete", id)
				}
			}
		}

		// The feed read again from the start gives the same events in the
		// same order: nothing appeared behind the consumer's cursor.
		again, _ := e.follow(t, orgA, tok, "", "")
		require.Len(t, again, len(seen))
		for i := range again {
			require.Equal(t, seen[i]["id"], again[i]["id"])
		}
	})
}

func lastPart(typ string) string { return typ[strings.LastIndex(typ, ".")+1:] }
