package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/password"
)

// rpStartProcess is startProcess that also returns the server's process
// id, for the tests that read what the process uses.
func rpStartProcess(t *testing.T, bin string, vars map[string]string, args ...string) (url string, logs *syncBuffer, pid int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "WAYBILL_") || strings.HasPrefix(e, "GOMAXPROCS=")
	})
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdoutR, stdoutW := io.Pipe()
	cmd.Stdout = stdoutW
	logs = &syncBuffer{}
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = stdoutW.Close()
		exited <- err
	}()
	url = readURL(t, stdoutR)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			assert.NoError(t, err, "exit after SIGTERM; stderr:\n%s", logs)
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			t.Errorf("no exit after SIGTERM; stderr:\n%s", logs)
		}
	})
	return url, logs, cmd.Process.Pid
}

// rpPeakMemory returns the peak resident memory of the process pid so far
// (VmHWM of /proc/PID/status), in bytes.
func rpPeakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		require.NoError(t, err, "VmHWM %q", rest)
		return kb << 10
	}
	require.NoError(t, sc.Err())
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// rpSignIn is one password sign-in: POST /auth/v1/token?grant_type=password
// with email and password in a JSON body.
func rpSignIn(ctx context.Context, client *http.Client, base, email, password string) (int, http.Header, error) {
	body := `{"email":` + strconv.Quote(email) + `,"password":` + strconv.Quote(password) + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/v1/token?grant_type=password", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header, nil
}

// rpMiB formats bytes in MiB for the logs.
func rpMiB(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// Thirty concurrent sign-ins with a wrong password, from one address, to
// the built binary: the password hashes computed at once are bounded, so
// the server's peak memory stays far below thirty hashes' worth (the
// unbounded server, at 64 MiB a hash, reached about 2 GB). Sign-ins beyond
// the bound wait briefly or are answered 503 with Retry-After.
func TestSignInMemoryBounded(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + testdb.SQLitePath(t)
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	adminJSON(t, "admin", "user", "create", "--email", "ops@acme.test", "--password", "correct horse", "--org", org, "--database-url", db)

	bin := buildBinary(t)
	// GOMAXPROCS fixes the number of hashes in flight at two, whatever the
	// machine, so that the bound below holds anywhere.
	base, logs, pid := rpStartProcess(t, bin, map[string]string{"WAYBILL_DATABASE_URL": db, "WAYBILL_RATE_TOKEN": "1000", "GOMAXPROCS": "2"},
		"serve", "--addr", "127.0.0.1:0")
	idle := rpPeakMemory(t, pid)

	const signIns = 30
	ctx, cancel := context.WithTimeout(t.Context(), 2*wait)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: signIns, MaxIdleConnsPerHost: signIns}}
	defer client.CloseIdleConnections()
	statuses := make([]int, signIns)
	retryAfter := make([]string, signIns)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range signIns {
		wg.Go(func() {
			<-start
			status, header, err := rpSignIn(ctx, client, base, "ops@acme.test", "wrong password "+strconv.Itoa(i))
			assert.NoError(t, err)
			statuses[i] = status
			if header != nil {
				retryAfter[i] = header.Get("Retry-After")
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)

	peak := rpPeakMemory(t, pid)
	counts := map[int]int{}
	for i, s := range statuses {
		counts[s]++
		switch s {
		case http.StatusBadRequest: // invalid_grant: the wrong password, verified
		case http.StatusServiceUnavailable:
			assert.NotEmpty(t, retryAfter[i], "a 503 carries Retry-After")
		default:
			t.Errorf("sign-in %d: status %d", i, s)
		}
	}
	t.Logf("%d concurrent wrong-password sign-ins in %v: statuses %v; peak memory %s idle, %s after (VmHWM)",
		signIns, took.Round(time.Millisecond), counts, rpMiB(idle), rpMiB(peak))
	assert.Positive(t, counts[http.StatusBadRequest], "some sign-ins were verified")
	// Two hashes in flight at 19 MiB (or, for a hash of the old cost, 64
	// MiB) and the garbage collector's headroom: well under 30 × 19 MiB.
	assert.Less(t, peak, int64(320<<20), "peak memory %s; logs:\n%s", rpMiB(peak), logs)
}

// rpClientFrom returns a client whose connections come from the loopback
// address ip (127.0.0.2, say), so that one test plays several remote
// addresses.
func rpClientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: wait}
	transport := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: wait}
}

// rpTenant is an organization with branches, an app whose
// client-credentials tokens may use the first branch only, and a user.
type rpTenant struct {
	db, org, clientID, secret, email, password string
	branches                                   []string
}

// newRPTenant creates an organization with branches branches, an app of
// the scopes for the first branch, and a user, in the database dbURL.
func newRPTenant(t *testing.T, dbURL, scopes string, branches int) rpTenant {
	t.Helper()
	c := rpTenant{db: dbURL, email: "ops-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@acme.test", password: "correct horse"}
	c.org = createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	for i := range branches {
		c.branches = append(c.branches, createID(t, "admin", "branch", "create", "--org", c.org, "--name", "Branch "+strconv.Itoa(i+1), "--database-url", dbURL))
	}
	c.clientID, c.secret = c.app(t, scopes, c.branches[:1])
	adminJSON(t, "admin", "user", "create", "--email", c.email, "--password", c.password, "--org", c.org, "--database-url", dbURL)
	return c
}

// app registers another app of c's organization with scopes for branches
// and returns its credentials.
func (c rpTenant) app(t *testing.T, scopes string, branches []string) (clientID, secret string) {
	t.Helper()
	app := adminJSON(t, "admin", "app", "create", "--org", c.org, "--name", "Acme Sync", "--scopes", scopes,
		"--branches", strings.Join(branches, ","), "--database-url", c.db)
	return app["client_id"].(string), app["client_secret"].(string)
}

// token gets a client-credentials access token of the app with clientID
// and secret from base.
func (c rpTenant) token(t *testing.T, base, clientID, secret string) string {
	t.Helper()
	res := rlDo(t, rpTokenRequest(t, base, "/v1/oauth/token", clientID, secret))
	require.Equal(t, http.StatusOK, res.status, res.body)
	return res.body["access_token"].(string)
}

// rpCall sends method to base+path with token and a JSON body (none when
// empty) and reads the response.
func rpCall(t *testing.T, base, method, path, token, body string) rlResponse {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return rlDo(t, req)
}

// rpCPU returns the processor time the process pid has used so far (user
// and system, from /proc/PID/stat, in clock ticks of 10 ms).
func rpCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	// The fields after the command name, which is in parentheses: state is
	// the first, utime the 12th, stime the 13th.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	require.Greater(t, len(fields), 12)
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	require.NoError(t, err)
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	require.NoError(t, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// rpManyKeys returns start followed by distinct members "<key>":0 counted
// in base 36 up to about size bytes, and end.
func rpManyKeys(start, end string, size int) (body string, members int) {
	var b strings.Builder
	b.WriteString(start)
	for ; b.Len() < size-len(end)-16; members++ {
		if members > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strconv.FormatInt(int64(members), 36) + `":0`)
	}
	b.WriteString(end)
	return b.String(), members
}

// A body is read only as far as its first member the resource does not
// take: a 1 MiB body of a hundred thousand distinct members, which the
// server used to compare each with each (some 15 s of processor time), is
// refused at its first, however it ends.
func TestBodyStopsAtFirstUnknownField(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite://" + testdb.SQLitePath(t)
	c := newRPTenant(t, dbURL, "svc:vehicles:read svc:vehicles:write", 1)
	bin := buildBinary(t)
	base, _, pid := rpStartProcess(t, bin, map[string]string{"WAYBILL_DATABASE_URL": dbURL}, "serve", "--addr", "127.0.0.1:0")
	token := c.token(t, base, c.clientID, c.secret)
	path := "/v1/" + c.org + "/vehicles"
	const size = 1 << 20

	valid, members := rpManyKeys("{", "}", size)
	validAfterKnown, _ := rpManyKeys(`{"plate":"M-1",`, "}", size)
	truncated, _ := rpManyKeys(`{"fleet_no":7,`, ",", size) // not JSON: no closing brace
	tests := []struct {
		name, body, says string
	}{
		{"1 MiB of distinct members", valid, `unknown field "0"`},
		{"1 MiB of distinct members after a known one", validAfterKnown, `unknown field "0"`},
		{"an unknown field, then 1 MiB that is not JSON", truncated, `unknown field "fleet_no"`},
	}
	for _, tt := range tests {
		cpu := rpCPU(t, pid)
		began := time.Now()
		res := rpCall(t, base, http.MethodPost, path, token, tt.body)
		took, used := time.Since(began), rpCPU(t, pid)-cpu
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %v", tt.name, res.body)
		assert.Equal(t, "invalid_create", res.body["error"], tt.name)
		assert.Contains(t, res.body["error_description"], tt.says, tt.name)
		t.Logf("%s (%d bytes, %d members): answered in %v, server processor time %v", tt.name, len(tt.body), members, took.Round(time.Millisecond), used)
	}
	res := rpCall(t, base, http.MethodPost, path, token, `{"plate":"M-1","vehicle_type":"truck","plate":"M-2"}`)
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "invalid_request", res.body["error"])
	assert.Contains(t, res.body["error_description"], `names "plate" twice`)
}

// Vehicles, organization-scoped, are every branch's: a client-credentials
// token limited to some of the branches may read them but not create,
// change or delete them; a token of every branch may. The OpenAPI document
// says so.
func TestOrganizationWritesNeedEveryBranch(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			const scopes = "svc:vehicles:read svc:vehicles:write"
			c := newRPTenant(t, dbURL, scopes, 2)
			wideID, wideSecret := c.app(t, scopes, c.branches)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			narrow := c.token(t, base, c.clientID, c.secret)
			wide := c.token(t, base, wideID, wideSecret)
			path := "/v1/" + c.org + "/vehicles"

			res := rpCall(t, base, http.MethodPost, path, wide, `{"plate":"M-1","vehicle_type":"truck"}`)
			require.Equal(t, http.StatusCreated, res.status, res.body)
			item := path + "/" + res.body["data"].(map[string]any)["id"].(string)

			tests := []struct {
				name, method, path, token, body string
				status                          int
			}{
				{"narrow create", http.MethodPost, path, narrow, `{"plate":"M-2","vehicle_type":"van"}`, http.StatusForbidden},
				{"narrow update", http.MethodPatch, item, narrow, `{"active":false}`, http.StatusForbidden},
				{"narrow delete", http.MethodDelete, item, narrow, "", http.StatusForbidden},
				{"narrow list", http.MethodGet, path, narrow, "", http.StatusOK},
				{"narrow get", http.MethodGet, item, narrow, "", http.StatusOK},
				{"wide update", http.MethodPatch, item, wide, `{"active":false}`, http.StatusOK},
				{"wide delete", http.MethodDelete, item, wide, "", http.StatusOK},
			}
			for _, tt := range tests {
				res := rpCall(t, base, tt.method, tt.path, tt.token, tt.body)
				require.Equal(t, tt.status, res.status, "%s: %v", tt.name, res.body)
				if tt.status == http.StatusForbidden {
					assert.Equal(t, "insufficient_scope", res.body["error"], tt.name)
					assert.Contains(t, res.body["error_description"], "covers every branch", tt.name)
				}
			}
			list := rpCall(t, base, http.MethodGet, path, wide, "")
			assert.EqualValues(t, 0, list.body["pagination"].(map[string]any)["total"], "the narrow token changed nothing")

			// The OpenAPI document tells clients.
			_, doc := get(t, http.MethodGet, base+"/v1/openapi.json")
			var d struct {
				Paths map[string]map[string]json.RawMessage
			}
			require.NoError(t, json.Unmarshal([]byte(doc), &d))
			operation := func(path, method string) (o struct {
				Description string
				Responses   map[string]struct{ Description string }
			}) {
				require.NoError(t, json.Unmarshal(d.Paths[path][method], &o), "%s %s", method, path)
				return o
			}
			for _, op := range []struct{ path, method string }{
				{"/v1/{scopeId}/vehicles", "post"}, {"/v1/{scopeId}/vehicles/{id}", "patch"}, {"/v1/{scopeId}/vehicles/{id}", "delete"},
			} {
				o := operation(op.path, op.method)
				assert.Contains(t, o.Description, "covers every branch", "%s %s", op.method, op.path)
				assert.Contains(t, o.Responses["403"].Description, "cover every branch", "%s %s", op.method, op.path)
			}
			assert.NotContains(t, operation("/v1/{scopeId}/vehicles", "get").Description, "covers every branch")
		})
	}
}

// rpDo sends req with client and reads its response.
func rpDo(t *testing.T, client *http.Client, req *http.Request) rlResponse {
	t.Helper()
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return rlResponse{status: res.StatusCode, header: res.Header, body: m}
}

// rpTokenRequest is a client-credentials request to base+path with HTTP
// Basic credentials id and secret.
func rpTokenRequest(t *testing.T, base, path, id, secret string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader("grant_type=client_credentials"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return req
}

// Requests that name a client but fail to authenticate as it spend the
// quota of their own address, never the client's: an attacker at one
// address who names a victim's client id with wrong secrets is refused,
// while the victim, at another address, keeps its whole quota.
func TestTokenLimitNoLockout(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			victim := newRPTenant(t, dbURL, "svc:vehicles:read", 1)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL,
				"--rate-token", "3", "--rate-edge", "3"}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			attacker, victimClient := rpClientFrom(t, "127.0.0.2"), rpClientFrom(t, "127.0.0.3")

			for _, tc := range []struct{ path, limit string }{
				{"/v1/oauth/token", "token"},
				{"/functions/v1/oauth-token", "edge"},
			} {
				t.Run(tc.path, func(t *testing.T) {
					// The attacker's wrong secrets: 401 while its address has
					// quota, then 429 for its address.
					for i := range 3 {
						res := rpDo(t, attacker, rpTokenRequest(t, base, tc.path, victim.clientID, "wrong-"+strconv.Itoa(i)))
						require.Equal(t, http.StatusUnauthorized, res.status, "attempt %d: %v", i+1, res.body)
						assert.Equal(t, "invalid_client", res.body["error"])
						assertState(t, res, tc.limit, 2-i, 20*(i+1))
					}
					for range 5 {
						assertLimited(t, rpDo(t, attacker, rpTokenRequest(t, base, tc.path, victim.clientID, "wrong")), tc.limit, 3, 20)
					}

					// The victim's quota is whole: the first of three.
					res := rpDo(t, victimClient, rpTokenRequest(t, base, tc.path, victim.clientID, victim.secret))
					require.Equal(t, http.StatusOK, res.status, "the victim is locked out: %v", res.body)
					assert.NotEmpty(t, res.body["access_token"])
					assert.Equal(t, `"`+tc.limit+`";q=3;w=60`, res.header.Get("RateLimit-Policy"))
					assertState(t, res, tc.limit, 2, 20)

					// It is the attacker's address that is spent: naming
					// another client changes nothing.
					assertLimited(t, rpDo(t, attacker, rpTokenRequest(t, base, tc.path, "another-client", "x")), tc.limit, 3, 20)
				})
			}
		})
	}
}

// A sign-in is counted under its address and under its email: guesses at
// one account spread over several addresses are refused once the email's
// quota is spent, while another account at the same addresses still signs
// in until its address's quota is spent. An IPv6 address counts as its /64.
func TestSignInLimitPerEmail(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			a := newRPTenant(t, dbURL, "svc:vehicles:read", 1)
			other := newRPTenant(t, dbURL, "svc:vehicles:read", 1)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--rate-token", "3"}, env(nil))
			defer func() { require.NoError(t, stop()) }()

			signIn := func(client *http.Client, email, password string) rlResponse {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/auth/v1/token?grant_type=password",
					strings.NewReader(`{"email":`+strconv.Quote(email)+`,"password":`+strconv.Quote(password)+`}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				return rpDo(t, client, req)
			}
			// Three guesses at A from three addresses: each address has
			// spent one, the email three.
			for i, ip := range []string{"127.0.0.4", "127.0.0.5", "127.0.0.6"} {
				res := signIn(rpClientFrom(t, ip), strings.ToUpper(a.email), "wrong")
				require.Equal(t, http.StatusBadRequest, res.status, res.body)
				assert.Equal(t, "invalid_grant", res.body["error"])
				// The tighter of address and email.
				assertState(t, res, "token", 2-i, 20*(i+1))
			}
			// A fourth address, and even the right password: the email is
			// spent.
			assertLimited(t, signIn(rpClientFrom(t, "127.0.0.7"), a.email, a.password), "token", 3, 20)
			// The login form counts the same email.
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/auth/v1/login",
				strings.NewReader(url.Values{"email": {" " + a.email + " "}, "password": {"x"}}.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			assertLimited(t, rpDo(t, rpClientFrom(t, "127.0.0.8"), req), "token", 3, 20)

			// Another account at one of those addresses: that address has
			// two left.
			res := signIn(rpClientFrom(t, "127.0.0.4"), other.email, other.password)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assertState(t, res, "token", 1, 40)
		})
	}

	t.Run("IPv6 by /64", func(t *testing.T) {
		t.Parallel()
		var logs bytes.Buffer
		l, err := newRateLimits(t.Context(), limitsConfig{Token: 1}, nil, newLogger(&logs))
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Close()) }()
		h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), rpClients{})
		status := func(remote, email string) int {
			req := httptest.NewRequest(http.MethodPost, "/auth/v1/token?grant_type=password", strings.NewReader(`{"email":"`+email+`"}`))
			req.Header.Set("Content-Type", "application/json")
			req.RemoteAddr = remote
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		}
		assert.Equal(t, http.StatusOK, status("[2001:db8:1:2::1]:5000", "a@x.test"))
		assert.Equal(t, http.StatusTooManyRequests, status("[2001:db8:1:2:ffff::9]:5000", "b@x.test"), "the same /64")
		assert.Equal(t, http.StatusOK, status("[2001:db8:1:3::1]:5000", "c@x.test"), "another /64")
	})
}

// rpCSRF matches the CSRF field of the sign-in page.
var rpCSRF = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// When no slot for a password hash comes free, a sign-in is answered 503
// temporarily_unavailable with Retry-After: by the password grant in the
// API's JSON, by the login form with its page, for known and unknown
// emails alike. Once a slot is free, sign-ins are verified again.
func TestSignInBusy(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			c := newRPTenant(t, dbURL, "svc:vehicles:read", 1)
			ctx := t.Context()
			db, dialect, _, err := openAndMigrate(ctx, dbURL, defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			store := newOAuthStore(db, dialect)
			keys, err := signingKeys(ctx, store, signingConfig{}, nil)
			require.NoError(t, err)
			tokens := newOAuthServer(db, store, keys, "http://waybill.test", testLogger(t))
			// One slot, no queue, and the slot taken.
			hashes := password.NewPool(password.PoolOptions{Slots: 1, Queue: -1, Wait: time.Hour})
			tokens.Directory = &directory{db: db, hashes: hashes}
			srv := httptest.NewServer(newHandler(db, tokens, nil))
			t.Cleanup(srv.Close)
			release := rpHold(t, hashes)

			for _, email := range []string{c.email, "nobody@acme.test"} {
				status, header, err := rpSignIn(ctx, srv.Client(), srv.URL, email, c.password)
				require.NoError(t, err)
				assert.Equal(t, http.StatusServiceUnavailable, status, email)
				assert.Equal(t, "1", header.Get("Retry-After"), email)
				assert.Equal(t, "application/json", header.Get("Content-Type"), email)
			}

			// The login form, with its CSRF token.
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			browser := &http.Client{Jar: jar, Timeout: wait}
			resp, page := rpGet(t, browser, srv.URL+"/auth/v1/login")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			m := rpCSRF.FindStringSubmatch(page)
			require.NotNil(t, m, "no CSRF field in:\n%s", page)
			form := url.Values{"csrf_token": {m[1]}, "email": {c.email}, "password": {c.password}}
			resp, err = browser.PostForm(srv.URL+"/auth/v1/login", form)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))

			release()
			status, _, err := rpSignIn(ctx, srv.Client(), srv.URL, c.email, c.password)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status)
			status, _, err = rpSignIn(ctx, srv.Client(), srv.URL, c.email, "wrong horse")
			require.NoError(t, err)
			assert.Equal(t, http.StatusBadRequest, status)
		})
	}
}

// rpGet gets target with client and returns the response and its body.
func rpGet(t *testing.T, client *http.Client, target string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// A user whose password hash has the cost of earlier versions (64 MiB, 3
// passes, 2 lanes) still signs in, and the hash is then replaced by one at
// the default cost, which verifies the same password; a wrong password
// leaves the hash alone.
func TestSignInRehashes(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			c := newRPTenant(t, dbURL, "svc:vehicles:read", 1)
			db, _, _, err := openAndMigrate(t.Context(), dbURL, defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			old, err := password.HashWith(oldArgon2, c.password)
			require.NoError(t, err)
			_, err = db.ExecContext(t.Context(), "UPDATE users SET password_hash = $1 WHERE email = $2", old, c.email)
			require.NoError(t, err)
			stored := func() string {
				var h string
				require.NoError(t, db.QueryRowContext(t.Context(), "SELECT password_hash FROM users WHERE email = $1", c.email).Scan(&h))
				return h
			}

			// Two hashes at two costs fit in no 2 s deadline on a loaded
			// machine; the rehash is stored only within the request's
			// deadline (a late one waits for the next sign-in), so this test
			// gives its requests time.
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--db-timeout", wait.String()}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			client := &http.Client{Timeout: wait}

			status, _, err := rpSignIn(t.Context(), client, base, c.email, "wrong horse")
			require.NoError(t, err)
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Equal(t, old, stored(), "a wrong password changes nothing")

			status, _, err = rpSignIn(t.Context(), client, base, c.email, c.password)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status, "a hash of the old cost verifies")
			now := stored()
			assert.True(t, strings.HasPrefix(now, "$argon2id$v=19$m=19456,t=2,p=1$"), now)
			ok, err := password.Verify(now, c.password)
			require.NoError(t, err)
			assert.True(t, ok)

			status, _, err = rpSignIn(t.Context(), client, base, c.email, c.password)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, now, stored(), "a hash of the default cost stays")
		})
	}
}
