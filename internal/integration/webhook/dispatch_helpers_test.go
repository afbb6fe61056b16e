package webhook_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
	"github.com/waybillhq/waybill/webhook/signature"
)

// dispatchEnv is one test's database with the tables of events and webhooks.
type dispatchEnv struct {
	t   testing.TB
	db  *sql.DB
	d   query.Dialect
	org string
}

// eachDB runs f, in parallel, on PostgreSQL and on SQLite.
func eachDB(t *testing.T, f func(t *testing.T, e *dispatchEnv)) {
	t.Helper()
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			f(t, newDispatchEnv(t, d))
		})
	}
}

func newDispatchEnv(t testing.TB, d query.Dialect) *dispatchEnv {
	t.Helper()
	var db *sql.DB
	if d == query.Postgres {
		db = testdb.Postgres(t)
	} else {
		db = testdb.SQLite(t)
	}
	require.NoError(t, (&webhook.API{Registry: &resource.Registry{DB: db, Dialect: d}}).Migrate(t.Context()))
	return &dispatchEnv{t: t, db: db, d: d, org: uuid.NewString()}
}

// exec runs text, written with ? placeholders.
func (e *dispatchEnv) exec(text string, args ...any) sql.Result {
	e.t.Helper()
	text, args, err := sqlbuild.SQL(e.d, sq.Expr(text, args...))
	require.NoError(e.t, err)
	r, err := e.db.ExecContext(context.Background(), text, args...)
	require.NoError(e.t, err)
	return r
}

// queryRow runs text, written with ? placeholders, and scans its one row.
func (e *dispatchEnv) queryRow(text string, args []any, dest ...any) {
	e.t.Helper()
	text, args, err := sqlbuild.SQL(e.d, sq.Expr(text, args...))
	require.NoError(e.t, err)
	require.NoError(e.t, e.db.QueryRowContext(context.Background(), text, args...).Scan(dest...))
}

// event is an event the test appended.
type event struct {
	ID, Type, Record, Branch string
	Seq                      int64
}

// cloudEvent is the CloudEvent JSON of an event, its keys in the order of
// the outbox.
type cloudEvent struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Subject         string `json:"subject"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	OrganizationID  string `json:"organizationid"`
	BranchID        string `json:"branchid,omitempty"`
	ClientID        string `json:"clientid"`
	Data            struct {
		Record  map[string]any `json:"record"`
		Changed []string       `json:"changed"`
	} `json:"data"`
}

// addEvent appends an event of org, as the outbox does: it raises the
// organization's head and inserts the event with that seq, in one
// transaction. typ is "<singular>.<change>"; the resource is the plural.
func (e *dispatchEnv) addEvent(org, typ, branch, record string, at time.Time) event {
	e.t.Helper()
	ctx := context.Background()
	resource := strings.SplitN(typ, ".", 2)[0] + "s"
	ev := event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, Record: record, Branch: branch}
	tx, err := e.db.BeginTx(ctx, nil)
	require.NoError(e.t, err)
	defer func() { _ = tx.Rollback() }()
	text, args, err := sqlbuild.SQL(e.d, sq.Expr(`INSERT INTO waybill_event_heads (organization_id, seq) VALUES (?, 1)
ON CONFLICT (organization_id) DO UPDATE SET seq = waybill_event_heads.seq + 1 RETURNING seq`, org))
	require.NoError(e.t, err)
	require.NoError(e.t, tx.QueryRowContext(ctx, text, args...).Scan(&ev.Seq))
	ce := cloudEvent{SpecVersion: "1.0", ID: ev.ID, Source: "/v1/" + org + "/" + resource + "/" + record, Type: typ,
		Subject: record, Time: at.UTC().Format("2006-01-02T15:04:05.000000Z"), DataContentType: "application/json",
		OrganizationID: org, BranchID: branch, ClientID: "client-1"}
	ce.Data.Record = map[string]any{"id": record}
	ce.Data.Changed = []string{}
	body, err := json.Marshal(ce)
	require.NoError(e.t, err)
	var branchValue any
	if branch != "" {
		branchValue = branch
	}
	text, args, err = sqlbuild.SQL(e.d, sq.Insert("waybill_events").
		Columns("organization_id", "seq", "id", "type", "resource", "branch_id", "record_id", "time", "body").
		Values(org, ev.Seq, ev.ID, typ, resource, branchValue, record, e.d.Timestamp(at), string(body)))
	require.NoError(e.t, err)
	_, err = tx.ExecContext(ctx, text, args...)
	require.NoError(e.t, err)
	require.NoError(e.t, tx.Commit())
	return ev
}

// endpointSpec describes an endpoint to insert. The lists are stored as
// JSON arrays; nil Branches and GrantBranches are NULL (every branch).
type endpointSpec struct {
	Org            string // "" is the dispatchEnv's organization
	URL            string
	Types          []string
	Branches       []string
	GrantResources []string // nil is quotations and accounts
	GrantBranches  []string
	AfterSeq       int64
	Disabled       bool
	Sealer         webhook.Sealer // nil: the secret in clear
}

// addEndpoint inserts an endpoint as the endpoints API does and returns its
// id and secret.
func (e *dispatchEnv) addEndpoint(s endpointSpec) (id, secret string) {
	e.t.Helper()
	id, secret = uuid.Must(uuid.NewV7()).String(), signature.NewSecret()
	if s.Org == "" {
		s.Org = e.org
	}
	if s.GrantResources == nil {
		s.GrantResources = []string{"quotations", "accounts"}
	}
	list := func(l []string) any {
		if l == nil {
			return nil
		}
		b, err := json.Marshal(l)
		require.NoError(e.t, err)
		return string(b)
	}
	sealed, keyID := []byte(secret), ""
	if s.Sealer != nil {
		sealed, keyID = s.Sealer.Seal([]byte(secret), []byte(id))
	}
	status := "enabled"
	if s.Disabled {
		status = "disabled"
	}
	now := e.d.Timestamp(time.Now())
	text, args, err := sqlbuild.SQL(e.d, sq.Insert("waybill_webhook_endpoints").
		Columns("id", "organization_id", "url", "event_types", "branch_ids", "grant_resources", "grant_branches",
			"secret", "secret_key_id", "status", "client_id", "after_seq", "created_at", "updated_at").
		Values(id, s.Org, s.URL, list(s.Types), list(s.Branches), list(s.GrantResources), list(s.GrantBranches),
			sealed, keyID, status, "client-1", s.AfterSeq, now, now))
	require.NoError(e.t, err)
	_, err = e.db.ExecContext(context.Background(), text, args...)
	require.NoError(e.t, err)
	return id, secret
}

// delivery is a row of waybill_webhook_deliveries.
type delivery struct {
	ID, EventID, Record, Status string
	Seq                         int64
	Attempts                    int
}

// deliveries returns the deliveries of an endpoint in event order.
func (e *dispatchEnv) deliveries(endpointID string) []delivery {
	e.t.Helper()
	text, args, err := sqlbuild.SQL(e.d, sq.Select("id", "event_id", "record_id", "status", "event_seq", "attempts").
		From("waybill_webhook_deliveries").Where("endpoint_id = ?", endpointID).OrderBy("event_seq"))
	require.NoError(e.t, err)
	rows, err := e.db.QueryContext(context.Background(), text, args...)
	require.NoError(e.t, err)
	defer rows.Close()
	var out []delivery
	for rows.Next() {
		var d delivery
		require.NoError(e.t, rows.Scan(&d.ID, &d.EventID, &d.Record, &d.Status, &d.Seq, &d.Attempts))
		out = append(out, d)
	}
	require.NoError(e.t, rows.Err())
	return out
}

// seqs returns the event seqs of an endpoint's deliveries.
func (e *dispatchEnv) seqs(endpointID string) []int64 {
	e.t.Helper()
	out := []int64{}
	for _, d := range e.deliveries(endpointID) {
		out = append(out, d.Seq)
	}
	return out
}

// deliveryOf returns the delivery of an event to an endpoint.
func (e *dispatchEnv) deliveryOf(endpointID, eventID string) delivery {
	e.t.Helper()
	for _, d := range e.deliveries(endpointID) {
		if d.EventID == eventID {
			return d
		}
	}
	e.t.Fatalf("no delivery of event %s to endpoint %s", eventID, endpointID)
	return delivery{}
}

// attempt is a row of waybill_webhook_attempts.
type attempt struct {
	N     int
	Code  int // 0: NULL
	Error string
}

// attempts returns the attempts of a delivery in order.
func (e *dispatchEnv) attempts(deliveryID string) []attempt {
	e.t.Helper()
	text, args, err := sqlbuild.SQL(e.d, sq.Select("n", "status_code", "error").From("waybill_webhook_attempts").
		Where("delivery_id = ?", deliveryID).OrderBy("n"))
	require.NoError(e.t, err)
	rows, err := e.db.QueryContext(context.Background(), text, args...)
	require.NoError(e.t, err)
	defer rows.Close()
	var out []attempt
	for rows.Next() {
		var (
			a    attempt
			code sql.NullInt64
		)
		require.NoError(e.t, rows.Scan(&a.N, &code, &a.Error))
		a.Code = int(code.Int64)
		out = append(out, a)
	}
	require.NoError(e.t, rows.Err())
	return out
}

// endpointStatus returns the status and disabled reason of an endpoint.
func (e *dispatchEnv) endpointStatus(id string) (status, reason string) {
	e.t.Helper()
	e.queryRow(`SELECT status, disabled_reason FROM waybill_webhook_endpoints WHERE id = ?`, []any{id}, &status, &reason)
	return status, reason
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now().UTC().Truncate(time.Second)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// outcomes collects what a Dispatcher observes.
type outcomes struct {
	mu   sync.Mutex
	list []webhook.Outcome
}

func (o *outcomes) Observe(x webhook.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, x)
}

func (o *outcomes) Get() []webhook.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]webhook.Outcome(nil), o.list...)
}

// dispatcher returns a Dispatcher on e with short times for tests: the
// clock c (nil: the real one), a backoff of 1 s, attempts of 2 s at most.
func (e *dispatchEnv) dispatcher(c *fakeClock) *webhook.Dispatcher {
	d := &webhook.Dispatcher{
		DB: e.db, Dialect: e.d, Guard: webhook.Guard{AllowPrivate: true},
		Timeout: 2 * time.Second, Lease: 5 * time.Second, PollInterval: 5 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Second },
	}
	if c != nil {
		d.Now = c.Now
	}
	return d
}

// received is a delivery a receiver got and verified.
type received struct {
	ID, Timestamp string
	Header        http.Header
	Body          []byte
}

// receiver is an HTTP receiver of webhooks that verifies every delivery
// with its own implementation of the Standard Webhooks signature.
type receiver struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	secrets map[string]string // by URL path
	got     []received
	bad     []string
	tries   map[string]int
	// answer returns the status of the try-th request (from 1) for the
	// delivery; nil: 200. It may block.
	answer func(r *http.Request, id string, body []byte, try int) int
}

func newReceiver(t testing.TB, answer func(r *http.Request, id string, body []byte, try int) int) *receiver {
	rc := &receiver{t: t, secrets: map[string]string{}, tries: map[string]int{}, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

// url returns the URL of the receiver for an endpoint whose name is path.
func (rc *receiver) url(path string) string { return rc.srv.URL + "/" + path }

// expect sets the secret of the deliveries to path.
func (rc *receiver) expect(path, secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets["/"+path] = secret
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	secret := rc.secrets[r.URL.Path]
	id := r.Header.Get("webhook-id")
	err = verifySignature(secret, r.Header, body)
	if err == nil && r.Method != http.MethodPost {
		err = errors.New("method " + r.Method)
	}
	if err != nil {
		rc.bad = append(rc.bad, r.URL.Path+": "+err.Error())
		rc.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.got = append(rc.got, received{ID: id, Timestamp: r.Header.Get("webhook-timestamp"), Header: r.Header.Clone(), Body: body})
	rc.tries[id]++
	try := rc.tries[id]
	answer := rc.answer
	rc.mu.Unlock()
	status := http.StatusOK
	if answer != nil {
		status = answer(r, id, body, try)
	}
	w.WriteHeader(status)
	if status >= 300 {
		_, _ = io.WriteString(w, "boom\x00\n\tbad")
	}
}

// Got returns the ids of the verified deliveries in the order they came.
func (rc *receiver) Got() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ids []string
	for _, g := range rc.got {
		ids = append(ids, g.ID)
	}
	return ids
}

// requireClean fails the test if a delivery had a bad signature.
func (rc *receiver) requireClean() {
	rc.t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Empty(rc.t, rc.bad, "deliveries with bad signatures")
}

// verifySignature checks a delivery as the Standard Webhooks specification
// says, independently of package webhook: webhook-signature holds
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" under the key that is the
// base64 after "whsec_".
func verifySignature(secret string, h http.Header, body []byte) error {
	encoded, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return errors.New("no secret for this path")
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" {
		return errors.New("no webhook-id")
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return errors.New("webhook-timestamp is not Unix seconds")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// gcmSealer seals with AES-256-GCM under one key named "k1".
type gcmSealer struct{ aead cipher.AEAD }

func newSealer(t testing.TB) *gcmSealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	return &gcmSealer{aead: aead}
}

func (s *gcmSealer) Seal(plaintext, additionalData []byte) ([]byte, string) {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plaintext, additionalData), "k1"
}

func (s *gcmSealer) Open(sealed, additionalData []byte, keyID string) ([]byte, error) {
	if keyID != "k1" {
		return nil, errors.New("unknown key")
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], additionalData)
}
