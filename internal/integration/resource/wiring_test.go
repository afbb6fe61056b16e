package resource_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
)

// lockedBuffer is a bytes.Buffer that the server's goroutines may write to
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRegistryClockLoggerRealm: what the host hands the registry is what its
// requests use. Hooks and the stored created_at and updated_at read the
// registry's clock, the requests it fails are logged to its logger, and
// its challenges name its realm and its resource metadata.
func TestRegistryClockLoggerRealm(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			var logs lockedBuffer
			clock := time.Date(2031, 5, 4, 3, 2, 1, 0, time.UTC)
			var mu sync.Mutex
			var hookTimes []time.Time
			e := newEnvWith(t, b, func(reg *resource.Registry, rs []*resource.Resource) {
				reg.Now = func() time.Time {
					mu.Lock()
					defer mu.Unlock()
					clock = clock.Add(time.Hour)
					return clock
				}
				reg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
				reg.Realm = "tms"
				reg.ResourceMetadata = "https://tms.example/.well-known/oauth-protected-resource"
				accounts := rs[0]
				accounts.Hooks = resource.Combine(accounts.Hooks, resource.OnWrite(func(_ context.Context, _ *sql.Tx, w *resource.Write) error {
					mu.Lock()
					defer mu.Unlock()
					hookTimes = append(hookTimes, w.Time)
					return nil
				}))
			})
			token := e.codeToken(t, orgA, allScopes...)

			created := e.mustCreate(t, token, "/v1/"+a1+"/accounts", `{"company_name":"Acme","account_type":"customer"}`)
			updated := e.do(t, http.MethodPatch, "/v1/"+a1+"/accounts/"+created["id"].(string), token, `{"comment":"x"}`)
			require.Equal(t, http.StatusOK, updated.status, updated.raw)
			first, second := time.Date(2031, 5, 4, 4, 2, 1, 0, time.UTC), time.Date(2031, 5, 4, 5, 2, 1, 0, time.UTC)
			mu.Lock()
			assert.Equal(t, []time.Time{first, second}, hookTimes, "one reading of the clock per write, seen by the hooks")
			mu.Unlock()
			assert.Equal(t, first.Format(time.RFC3339), stamp(t, created["created_at"]))
			assert.Equal(t, first.Format(time.RFC3339), stamp(t, created["updated_at"]))
			assert.Equal(t, first.Format(time.RFC3339), stamp(t, updated.data()["created_at"]))
			assert.Equal(t, second.Format(time.RFC3339), stamp(t, updated.data()["updated_at"]))

			r := e.do(t, http.MethodGet, "/v1/"+a1+"/accounts", "", "")
			assert.Equal(t, http.StatusUnauthorized, r.status)
			assert.Equal(t, `Bearer realm="tms", resource_metadata="https://tms.example/.well-known/oauth-protected-resource"`, r.header.Get("WWW-Authenticate"))
			r = e.do(t, http.MethodPost, "/v1/"+a1+"/accounts", e.codeToken(t, orgA), `{}`)
			assert.Equal(t, http.StatusForbidden, r.status)
			assert.Contains(t, r.header.Get("WWW-Authenticate"), `Bearer realm="tms", error="insufficient_scope"`)
			assert.True(t, strings.HasSuffix(r.header.Get("WWW-Authenticate"), `, resource_metadata="https://tms.example/.well-known/oauth-protected-resource"`))

			assert.Empty(t, logs.String(), "4xx answers are not logged")
			_, err := e.db.Exec("DROP TABLE zones")
			require.NoError(t, err)
			r = e.do(t, http.MethodGet, "/v1/"+a1+"/zones", token, "")
			assert.Equal(t, http.StatusInternalServerError, r.status)
			assert.Contains(t, logs.String(), `"msg":"request failed"`)
			assert.Contains(t, logs.String(), `"path":"/v1/`+a1+`/zones"`)
		})
	}
}

// stamp returns a timestamp of a response in RFC 3339 at second precision,
// in UTC.
func stamp(t *testing.T, v any) string {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "%v is not a string", v)
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return ts.UTC().Format(time.RFC3339)
}
