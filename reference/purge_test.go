package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// The purge of the token service's expired state and the limit of the
// consent form, through the real server on SQLite and on PostgreSQL. Rows
// are aged with SQL: the server's clock is the real one.

const puDay = 24 * time.Hour

// puDB is a connection to the database of a world, to age its rows.
type puDB struct {
	db      *sql.DB
	dialect query.Dialect
}

// puOpen opens the database of w.
func puOpen(t *testing.T, w lcWorld) puDB {
	t.Helper()
	db, dialect, err := openDB(t.Context(), w.db, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return puDB{db, dialect}
}

// time returns ts as the store keeps it: a timestamp on PostgreSQL, UTC
// text on SQLite.
func (p puDB) time(ts time.Time) any {
	return p.dialect.Timestamp(ts.Truncate(time.Microsecond))
}

// exec runs a statement that must change at least one row.
func (p puDB) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	res, err := p.db.ExecContext(t.Context(), query, args...)
	require.NoError(t, err, query)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Positive(t, n, "no row changed: %s", query)
}

// count returns the number of rows of the query.
func (p puDB) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, p.db.QueryRowContext(t.Context(), query, args...).Scan(&n), query)
	return n
}

// puFamily returns the refresh token family of an access token, which its
// jti names.
func puFamily(t *testing.T, access string) string {
	t.Helper()
	family, _, ok := strings.Cut(claimsOf(t, access)["jti"].(string), ".")
	require.True(t, ok)
	return family
}

// puPurge runs "waybill admin purge" on the world's database.
func puPurge(t *testing.T, w lcWorld) map[string]any {
	t.Helper()
	return lcAdmin(t, w, "purge")
}

// puCounts is the output of a purge that deleted these.
func puCounts(codes, tokens, families, grants int) map[string]any {
	return map[string]any{"codes": float64(codes), "refresh_tokens": float64(tokens), "families": float64(families), "grants": float64(grants), "idempotency_keys": 0.0, "events": 0.0, "webhook_deliveries": 0.0, "history_entries": 0.0}
}

// What has ended goes, what lives stays; a replayed token of a revoked
// family is refused as revoked within the retention, and as unknown after
// it.
func TestPurgeEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base := lcServe(t, w, "--purge-interval", "0")
			db := puOpen(t, w)
			now := time.Now()

			// A live authorization, refreshed once: its first token is spent.
			live := lcAuthorize(t, base, w.app, w.email, w.org)
			status, body := lcRefresh(t, base, live.refresh)
			require.Equal(t, http.StatusOK, status, body)
			liveNext := lcTokens{body["access_token"].(string), body["refresh_token"].(string)}
			// An authorization revoked by the reuse of its first token.
			revoked := lcAuthorize(t, base, w.app, w.bystanderEmail, w.org)
			status, body = lcRefresh(t, base, revoked.refresh)
			require.Equal(t, http.StatusOK, status, body)
			revokedNext := lcTokens{body["access_token"].(string), body["refresh_token"].(string)}
			lcRefused(t, base, revoked.refresh, "reuse")
			// An authorization of the other app, aged past its maximum age
			// and the retention, with its code, token and consent.
			staleGrant := lcConsent(t, base, w.other, w.email, w.org)
			status, body = lcExchange(t, base, w.other, staleGrant)
			require.Equal(t, http.StatusOK, status, body)
			stale := lcTokens{body["access_token"].(string), body["refresh_token"].(string)}
			long := now.Add(-oauth.DefaultRefreshMaxAge - oauth.DefaultPurgeRetention - puDay)
			db.exec(t, "UPDATE oauth_families SET created_at = $1 WHERE id = $2", db.time(long), puFamily(t, stale.access))
			db.exec(t, "UPDATE oauth_refresh_tokens SET expires_at = $1 WHERE family_id = $2", db.time(now.Add(-8*puDay)), puFamily(t, stale.access))
			db.exec(t, "UPDATE oauth_codes SET used_at = $1 WHERE hash = $2", db.time(long), codeHash(staleGrant.code))
			db.exec(t, "UPDATE oauth_grants SET created_at = $1 WHERE client_id = $2", db.time(long), w.other.id)
			// A code never exchanged, expired eight days ago.
			unused := lcConsent(t, base, w.app, w.email, w.org)
			db.exec(t, "UPDATE oauth_codes SET expires_at = $1 WHERE hash = $2", db.time(now.Add(-8*puDay)), codeHash(unused.code))

			assert.Equal(t, puCounts(2, 1, 1, 1), puPurge(t, w), "the unused code; the stale authorization's code, token, family and grant")
			assert.Equal(t, 0, db.count(t, "SELECT count(*) FROM oauth_codes WHERE hash = $1", codeHash(unused.code)))
			assert.Equal(t, 0, db.count(t, "SELECT count(*) FROM oauth_grants WHERE client_id = $1", w.other.id))
			assert.Equal(t, 3, db.count(t, "SELECT count(*) FROM oauth_grants"), "the live consents stay")
			status, body = lcRefresh(t, base, stale.refresh)
			assert.Equal(t, http.StatusBadRequest, status, body)
			assert.Equal(t, "invalid_grant", body["error"])

			t.Run("within the retention a revoked family's replay is still refused as revoked", func(t *testing.T) {
				for _, refresh := range []string{revoked.refresh, revokedNext.refresh} {
					status, body := lcRefresh(t, base, refresh)
					assert.Equal(t, http.StatusBadRequest, status, body)
					assert.Equal(t, "invalid_grant", body["error"])
					assert.Contains(t, body["error_description"], "revoked")
				}
				assert.Equal(t, http.StatusUnauthorized, lcAPI(t, base, w.org, revokedNext.access), "its access token stays refused")
			})
			t.Run("after the retention it is refused as unknown", func(t *testing.T) {
				db.exec(t, "UPDATE oauth_families SET revoked_at = $1 WHERE id = $2", db.time(now.Add(-8*puDay)), puFamily(t, revoked.access))
				assert.Equal(t, puCounts(0, 2, 1, 0), puPurge(t, w), "the revoked family and its two tokens")
				for _, refresh := range []string{revoked.refresh, revokedNext.refresh} {
					status, body := lcRefresh(t, base, refresh)
					assert.Equal(t, http.StatusBadRequest, status, body)
					assert.Equal(t, "invalid_grant", body["error"])
				}
				assert.Equal(t, puCounts(0, 0, 0, 0), puPurge(t, w), "a second purge finds nothing")
			})
			t.Run("the live authorization stands, and its reuse is still detected", func(t *testing.T) {
				assert.Equal(t, http.StatusOK, lcAPI(t, base, w.org, liveNext.access))
				status, body := lcRefresh(t, base, liveNext.refresh)
				require.Equal(t, http.StatusOK, status, body)
				last := body["refresh_token"].(string)
				status, body = lcRefresh(t, base, live.refresh)
				assert.Equal(t, http.StatusBadRequest, status, body)
				assert.Contains(t, body["error_description"], "already used")
				lcRefused(t, base, last, "the reuse revoked the family")
			})
		})
	}
}

func TestAdminPurgeFlags(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/purge.db"
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // the output, or
		wantErr string
	}{
		{name: "empty database", args: []string{"admin", "purge", "--database-url", db}, want: `{"codes":0,"refresh_tokens":0,"families":0,"grants":0,"idempotency_keys":0,"events":0,"webhook_deliveries":0,"history_entries":0}`},
		{name: "refresh max age", args: []string{"admin", "purge", "--database-url", db, "--refresh-max-age", "720h"}, want: `{"codes":0,"refresh_tokens":0,"families":0,"grants":0,"idempotency_keys":0,"events":0,"webhook_deliveries":0,"history_entries":0}`},
		{name: "environment", args: []string{"admin", "purge"}, env: map[string]string{"WAYBILL_DATABASE_URL": db, "WAYBILL_REFRESH_MAX_AGE": "24h"}, want: `{"codes":0,"refresh_tokens":0,"families":0,"grants":0,"idempotency_keys":0,"events":0,"webhook_deliveries":0,"history_entries":0}`},
		{name: "event retention", args: []string{"admin", "purge", "--database-url", db, "--event-retention", "24h"}, want: `{"codes":0,"refresh_tokens":0,"families":0,"grants":0,"idempotency_keys":0,"events":0,"webhook_deliveries":0,"history_entries":0}`},
		{name: "no event retention", args: []string{"admin", "purge", "--database-url", db, "--event-retention", "0s"}, wantErr: "admin purge: --event-retention must be positive"},
		{name: "audit retention", args: []string{"admin", "purge", "--database-url", db, "--audit-retention", "24h"}, want: `{"codes":0,"refresh_tokens":0,"families":0,"grants":0,"idempotency_keys":0,"events":0,"webhook_deliveries":0,"history_entries":0}`},
		{name: "no audit retention", args: []string{"admin", "purge", "--database-url", db, "--audit-retention", "0s"}, wantErr: "admin purge: --audit-retention must be positive"},
		{name: "no refresh max age", args: []string{"admin", "purge", "--database-url", db, "--refresh-max-age", "0s"}, wantErr: "admin purge: --refresh-max-age must be positive"},
		{name: "positional argument", args: []string{"admin", "purge", "now", "--database-url", db}, wantErr: `admin purge: unexpected argument "now"`},
		{name: "unknown flag", args: []string{"admin", "purge", "--all"}, wantErr: "admin purge: flag provided but not defined: -all"},
		{name: "two words", args: []string{"admin", "org"}, wantErr: "admin org: want one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCommand(t, tt.env, tt.args...)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want+"\n", out)
		})
	}
	t.Run("help", func(t *testing.T) {
		out, err := runCommand(t, nil, "admin", "-h")
		require.NoError(t, err)
		assert.Contains(t, out, "waybill admin purge [--refresh-max-age D]")
		out, err = runCommand(t, nil, "admin", "purge", "-h")
		require.NoError(t, err)
		assert.Contains(t, out, "--refresh-max-age")
	})
}

// puServe starts the server on the world's database with args added, the
// token endpoint's rate limit off, and returns its URL, its log and the
// function that stops it.
func puServe(t *testing.T, w lcWorld, args ...string) (string, *syncBuffer, func() error) {
	t.Helper()
	return startRun(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", w.db, "--rate-token", "0"}, args...), env(nil))
}

// serve purges every --purge-interval, logs each purge, and stops purging
// at once on shutdown.
func TestPurgePeriodic(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base, logs, stop := puServe(t, w, "--purge-interval", "200ms")
			db := puOpen(t, w)
			unused := lcConsent(t, base, w.app, w.email, w.org)
			db.exec(t, "UPDATE oauth_codes SET expires_at = $1 WHERE hash = $2", db.time(time.Now().Add(-8*puDay)), codeHash(unused.code))

			purged := func() (runs, codes int) {
				for _, l := range logLines(t, logs.String()) {
					if l["msg"] == "purged expired tokens" {
						runs++
						codes += int(l["codes"].(float64))
						assert.Equal(t, "INFO", l["level"])
					}
				}
				return runs, codes
			}
			assert.Eventually(t, func() bool {
				runs, codes := purged()
				return runs >= 3 && codes == 1
			}, wait, 50*time.Millisecond, "the purge runs again and again and deletes the expired code once")
			assert.Equal(t, 0, db.count(t, "SELECT count(*) FROM oauth_codes WHERE hash = $1", codeHash(unused.code)))
			assert.Equal(t, 1, db.count(t, "SELECT count(*) FROM oauth_grants"), "the consent stays")

			started := time.Now()
			require.NoError(t, stop())
			assert.Less(t, time.Since(started), 2*time.Second, "the purge does not hold up the shutdown")
			lines := logLines(t, logs.String())
			assert.True(t, hasLog(lines, "periodic purge of expired tokens"))
			assert.True(t, hasLog(lines, "stopped"))
			runs, _ := purged()
			time.Sleep(500 * time.Millisecond)
			after, _ := purged()
			assert.Equal(t, runs, after, "no purge after the shutdown")
		})
	}
}

// puBrowser is a browser signed in to the server at base as email, on the
// consent page of app, with the hidden fields of its form.
type puBrowser struct {
	client *http.Client
	form   url.Values
}

// puSignIn signs in as email through the real pages and returns the
// browser on the consent page of app, for org.
func puSignIn(t *testing.T, base string, app lcApp, email, org string) puBrowser {
	t.Helper()
	conf := &oauth2.Config{
		ClientID: app.id, ClientSecret: app.secret, RedirectURL: lcRedirect, Scopes: []string{lcScope},
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken},
	}
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), lcRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, page := puPage(t)(client.Get(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))))
	require.Equal(t, http.StatusOK, res.StatusCode, page)
	login := lcHidden(page)
	login.Set("email", email)
	login.Set("password", lcPassword)
	res, page = puPage(t)(client.PostForm(base+oauth.PathLogin, login))
	require.Equal(t, http.StatusOK, res.StatusCode, page)
	form := lcHidden(page)
	form.Set("organization_id", org)
	return puBrowser{client, form}
}

// puPage returns a function that reads a response whole.
func puPage(t *testing.T) func(res *http.Response, err error) (*http.Response, string) {
	return func(res *http.Response, err error) (*http.Response, string) {
		t.Helper()
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
}

// consent posts the consent form with decision.
func (b puBrowser) consent(t *testing.T, base, decision string) (*http.Response, string) {
	t.Helper()
	form := url.Values{}
	for k, v := range b.form {
		form[k] = v
	}
	form.Set("decision", decision)
	return puPage(t)(b.client.PostForm(base+oauth.PathConsent, form))
}

// The consent form is limited per signed-in user, and without a session
// per remote address: over the quota it is answered 429 rate_limited.
func TestConsentRateLimit(t *testing.T) {
	t.Parallel()
	const quota = 3
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base, _, stop := puServe(t, w, "--purge-interval", "0", "--rate-token", "3")
			t.Cleanup(func() { assert.NoError(t, stop()) })

			user := puSignIn(t, base, w.app, w.email, w.org) // the address's first sign-in
			for i := range quota {
				res, page := user.consent(t, base, []string{"approve", "deny"}[i%2])
				require.Equal(t, http.StatusSeeOther, res.StatusCode, "consent %d: %s", i+1, page)
				assert.Contains(t, res.Header.Get("RateLimit-Policy"), `"token";q=3;w=60`)
			}
			res, page := user.consent(t, base, "approve")
			assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, page)
			assert.NotEmpty(t, res.Header.Get("Retry-After"))
			var answer map[string]any
			require.NoError(t, json.Unmarshal([]byte(page), &answer), page)
			assert.Equal(t, "rate_limited", answer["error"])

			other := puSignIn(t, base, w.app, w.bystanderEmail, w.org) // the second
			res, page = other.consent(t, base, "deny")
			assert.Equal(t, http.StatusSeeOther, res.StatusCode, "another user has a quota of their own: %s", page)

			// Without a session a post counts under its address, which the
			// two sign-ins have used already.
			anonymous := puBrowser{client: &http.Client{}, form: user.form}
			res, page = anonymous.consent(t, base, "approve")
			assert.Equal(t, http.StatusForbidden, res.StatusCode, page)
			res, page = anonymous.consent(t, base, "approve")
			assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, page)
		})
	}
}

// puStore is a token store whose Purge fails the first fail times, then
// blocks until its context ends when block is set, and else deletes one
// code.
type puStore struct {
	oauth.Store
	mu    sync.Mutex
	fail  int
	block bool
}

// Purge fails, blocks or deletes one code, as s says.
func (s *puStore) Purge(ctx context.Context, _ oauth.PurgeBefore) (oauth.PurgeResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fail > 0:
		s.fail--
		return oauth.PurgeResult{}, errors.New("connection refused")
	case s.block:
		<-ctx.Done()
		return oauth.PurgeResult{Codes: 1}, ctx.Err()
	}
	return oauth.PurgeResult{Codes: 1}, nil
}

// A failed purge is a warning and the next one runs; a purge in progress
// stops at once on shutdown.
func TestStartPurges(t *testing.T) {
	t.Parallel()
	levels := func(logs *syncBuffer) []string {
		var out []string
		for _, l := range logLines(t, logs.String()) {
			if msg := l["msg"].(string); strings.HasPrefix(msg, "purge") {
				out = append(out, l["level"].(string)+" "+msg)
			}
		}
		return out
	}
	t.Run("a failure does not stop the purges", func(t *testing.T) {
		t.Parallel()
		logs := &syncBuffer{}
		stop := startPurges(t.Context(), &oauth.Server{Store: &puStore{fail: 1}}, nil, 10*time.Millisecond, newLogger(logs))
		assert.Eventually(t, func() bool { return len(levels(logs)) >= 3 }, wait, 10*time.Millisecond)
		stop()
		got := levels(logs)
		assert.Equal(t, []string{"WARN purge of expired tokens failed; the next one tries again", "INFO purged expired tokens", "INFO purged expired tokens"}, got[:3])
		assert.Contains(t, logs.String(), `"error":"oauth: purge: connection refused"`)
	})
	t.Run("shutdown stops a purge in progress", func(t *testing.T) {
		t.Parallel()
		logs := &syncBuffer{}
		ctx, cancel := context.WithCancel(t.Context())
		stop := startPurges(ctx, &oauth.Server{Store: &puStore{block: true}}, nil, 10*time.Millisecond, newLogger(logs))
		time.Sleep(100 * time.Millisecond) // the first purge is in progress
		started := time.Now()
		cancel()
		stop()
		assert.Less(t, time.Since(started), time.Second)
		assert.Equal(t, []string{"INFO purge of expired tokens stopped by the shutdown"}, levels(logs))
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		logs := &syncBuffer{}
		startPurges(t.Context(), &oauth.Server{Store: &puStore{}}, nil, 0, newLogger(logs))()
		assert.Contains(t, logs.String(), "periodic purge of expired tokens disabled")
	})
}

// codeHash returns the hash under which the token service stores a code:
// its SHA-256.
func codeHash(code string) []byte {
	h := sha256.Sum256([]byte(code))
	return h[:]
}
