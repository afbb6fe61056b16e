// Command benchfloor is the floor of the HTTP benchmark of the reference
// server (reference/bench_http_test.go, BenchmarkHTTP): the least a Go
// program must do to answer the benchmark's two requests, with net/http,
// pgx v5's pgxpool, encoding/json and golang-jwt/v5 and nothing of Waybill.
// The benchmark drives it and the waybill server with the same load, on the
// same database, and compares them.
//
// It serves two endpoints on 127.0.0.1, on a port the kernel picks:
//
//   - GET /v1/{scopeId}/quotations: runs the COUNT(*) and the page
//     statement of its configuration, whatever the path and the query say,
//     scans the page into plain Go values and answers
//     {"data":[...],"pagination":{"limit","offset","total","next_cursor"},
//     "version":"v1"}, as the waybill server answers the same list request.
//     The page statement reads one row more than limit, as the server's
//     does; when that row exists, next_cursor is an HMAC-SHA256 of the last
//     row's sort keys (quotation_date and id), base64url-encoded, the work
//     of the server's cursor without its format. It checks no bearer token.
//   - POST /auth/v1/oauth/token: the client-credentials grant with HTTP
//     Basic client authentication and a form body. One SELECT of the app by
//     client_id from oauth_apps, the SHA-256 of the secret compared in
//     constant time with secret_hash, and an HS256 token of the claims the
//     waybill server signs (oauth/bearer's Claims), signed with the raw
//     key the server takes as --jwt-secret, answered with the same fields.
//   - POST /auth/v1/oauth/introspect: the introspection (RFC 7662) of an
//     access token by the client it was issued to: the client
//     authenticated as for a token, the token's HS256 signature, issuer,
//     audience and expiry checked, answered with the fields the waybill
//     server answers.
//
// Usage:
//
//	benchfloor -config FILE
//
// FILE is a JSON object: database_url (a pgx URL), max_conns (the pool's
// MaxConns), issuer and jwt_secret (as given to waybill serve --issuer and
// --jwt-secret), count_sql and count_args, page_sql and page_args (the two
// statements and their arguments), limit and offset (the pagination the
// response reports). Arguments are JSON strings and numbers; integral
// numbers are bound as int64.
//
// It prints "benchfloor listening on http://ADDR" on stdout once it serves,
// and stops, closing its pool, on SIGINT, SIGTERM or the end of its standard
// input (so that it does not outlive a benchmark that was killed). On
// SIGUSR1 it prints on stdout "mallocs N waits W wait_ns T statements S":
// the heap allocations of the process so far (runtime.MemStats.Mallocs),
// the acquisitions of a connection that waited for one, and how long in all
// (pgxpool's EmptyAcquireCount and EmptyAcquireWaitTime), and the statements
// sent to PostgreSQL (counted by a pgx tracer), what the waybill server's
// /metrics gives as go_memstats_mallocs_total, go_sql_wait_count_total,
// go_sql_wait_duration_seconds_total and waybill_db_statements_total.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// config is the JSON of -config.
type config struct {
	DatabaseURL string `json:"database_url"`
	MaxConns    int32  `json:"max_conns"`
	Issuer      string `json:"issuer"`
	JWTSecret   string `json:"jwt_secret"`
	CountSQL    string `json:"count_sql"`
	CountArgs   []any  `json:"count_args"`
	PageSQL     string `json:"page_sql"`
	PageArgs    []any  `json:"page_args"`
	Limit       int64  `json:"limit"`
	Offset      int64  `json:"offset"`
	// OrganizationID is the organization of the accounts created.
	OrganizationID string `json:"organization_id"`
}

// Lifetime of the access tokens, as the waybill server's default.
const accessTokenTTL = time.Hour

// appSQL is the statement of the waybill server's store that reads an app
// (oauth/sqlstore findApp).
const appSQL = `
		SELECT id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at
		FROM oauth_apps WHERE client_id = $1`

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchfloor: ")
	path := flag.String("config", "", "JSON `file` of the configuration (required)")
	flag.Parse()
	if *path == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*path); err != nil {
		log.Fatal(err)
	}
}

func run(path string) error {
	cfg, err := readConfig(path)
	if err != nil {
		return err
	}
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The end of stdin stops the floor like a signal. It cancels a context
	// of its own: stop would also let the next SIGTERM kill the process
	// before it closed its pool.
	ctx, cancel := context.WithCancel(signalled)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("database_url: %w", err)
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = cfg.MaxConns
	}
	statements := new(statementCounter)
	pcfg.ConnConfig.Tracer = statements
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return err
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			st := pool.Stat()
			fmt.Printf("mallocs %d waits %d wait_ns %d statements %d\n", m.Mallocs, st.EmptyAcquireCount(), st.EmptyAcquireWaitTime().Nanoseconds(), statements.n.Load())
		}
	}()

	sum := sha256.Sum256([]byte(cfg.JWTSecret))
	f := &floor{cfg: cfg, pool: pool, secret: []byte(cfg.JWTSecret), kid: "s-" + hex.EncodeToString(sum[:6])}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/{scopeId}/quotations", f.list)
	mux.HandleFunc("POST /auth/v1/oauth/token", f.token)
	mux.HandleFunc("POST /auth/v1/oauth/introspect", f.introspect)
	mux.HandleFunc("POST /v1/{scopeId}/accounts", f.createAccount)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("benchfloor listening on http://%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// readConfig reads the configuration file; integral numbers of the
// arguments become int64, others float64.
func readConfig(path string) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var cfg config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, args := range [][]any{cfg.CountArgs, cfg.PageArgs} {
		for i, a := range args {
			n, ok := a.(json.Number)
			if !ok {
				continue
			}
			if v, err := n.Int64(); err == nil {
				args[i] = v
			} else if v, err := n.Float64(); err == nil {
				args[i] = v
			} else {
				return nil, fmt.Errorf("%s: argument %s: %w", path, n, err)
			}
		}
	}
	switch {
	case cfg.DatabaseURL == "", cfg.CountSQL == "", cfg.PageSQL == "":
		return nil, fmt.Errorf("%s: database_url, count_sql and page_sql are required", path)
	case len(cfg.JWTSecret) < 32:
		return nil, fmt.Errorf("%s: jwt_secret must be at least 32 bytes", path)
	}
	return &cfg, nil
}

type floor struct {
	cfg    *config
	pool   *pgxpool.Pool
	secret []byte
	kid    string
}

// quotation is one record of the list, as the waybill server writes it:
// dates YYYY-MM-DD, timestamps RFC 3339 in UTC with microseconds.
type quotation struct {
	ID              string  `json:"id"`
	ExternalID      *string `json:"external_id"`
	QuotationNumber string  `json:"quotation_number"`
	AccountID       string  `json:"account_id"`
	QuotationDate   string  `json:"quotation_date"`
	ValidUntil      string  `json:"valid_until"`
	Status          string  `json:"status"`
	TotalWeightKg   float64 `json:"total_weight_kg"`
	TotalVolumeM3   float64 `json:"total_volume_m3"`
	TotalPackages   int64   `json:"total_packages"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
	OrganizationID  string  `json:"organization_id"`
	BranchID        string  `json:"branch_id"`
}

type pagination struct {
	Limit      int64   `json:"limit"`
	Offset     int64   `json:"offset"`
	Total      int64   `json:"total"`
	NextCursor *string `json:"next_cursor"`
}

type listResponse struct {
	Data       []quotation `json:"data"`
	Pagination pagination  `json:"pagination"`
	Version    string      `json:"version"`
}

const timestampLayout = "2006-01-02T15:04:05.000000Z"

// list answers the list request with the configured statements.
func (f *floor) list(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var total int64
	if err := f.pool.QueryRow(ctx, f.cfg.CountSQL, f.cfg.CountArgs...).Scan(&total); err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	rows, err := f.pool.Query(ctx, f.cfg.PageSQL, f.cfg.PageArgs...)
	if err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	defer rows.Close()
	data := make([]quotation, 0, f.cfg.Limit)
	for rows.Next() {
		var q quotation
		var qdate, valid, created, updated time.Time
		if err := rows.Scan(&q.ID, &q.ExternalID, &q.QuotationNumber, &q.AccountID, &qdate, &valid, &q.Status,
			&q.TotalWeightKg, &q.TotalVolumeM3, &q.TotalPackages, &created, &updated, &q.OrganizationID, &q.BranchID); err != nil {
			fail(w, http.StatusInternalServerError, "server_error", err)
			return
		}
		q.QuotationDate = qdate.Format(time.DateOnly)
		q.ValidUntil = valid.Format(time.DateOnly)
		q.CreatedAt = created.UTC().Format(timestampLayout)
		q.UpdatedAt = updated.UTC().Format(timestampLayout)
		data = append(data, q)
	}
	if err := rows.Err(); err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	page := pagination{Limit: f.cfg.Limit, Offset: f.cfg.Offset, Total: total}
	if int64(len(data)) > f.cfg.Limit {
		data = data[:f.cfg.Limit]
		last := data[len(data)-1]
		mac := hmac.New(sha256.New, []byte(f.cfg.JWTSecret))
		mac.Write([]byte(last.QuotationDate + "\x00" + last.ID))
		next := base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, listResponse{Data: data, Pagination: page, Version: "v1"})
}

// account is one account, as the waybill server writes it.
type account struct {
	ID             string  `json:"id"`
	ExternalID     *string `json:"external_id"`
	CompanyName    string  `json:"company_name"`
	Email          *string `json:"email"`
	Phone          *string `json:"phone"`
	AccountType    string  `json:"account_type"`
	Status         string  `json:"status"`
	Comment        *string `json:"comment"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	OrganizationID string  `json:"organization_id"`
	BranchID       string  `json:"branch_id"`
}

// createAccount answers POST /v1/{branch}/accounts with the bare insert
// of the account: no token check, no outbox, no hooks.
func (f *floor) createAccount(w http.ResponseWriter, r *http.Request) {
	var in struct {
		CompanyName string `json:"company_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil || in.CompanyName == "" {
		fail(w, http.StatusBadRequest, "invalid_create", nil)
		return
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	var a account
	var created, updated time.Time
	err := f.pool.QueryRow(r.Context(), `INSERT INTO accounts (id, organization_id, branch_id, created_at, updated_at, company_name, account_type, status)
		VALUES ($1, $2, $3, $4, $4, $5, 'customer', 'active')
		RETURNING id, external_id, company_name, email, phone, account_type, status, comment, created_at, updated_at, organization_id, branch_id`,
		uuid.Must(uuid.NewV7()).String(), f.cfg.OrganizationID, r.PathValue("scopeId"), now, in.CompanyName).
		Scan(&a.ID, &a.ExternalID, &a.CompanyName, &a.Email, &a.Phone, &a.AccountType, &a.Status, &a.Comment, &created, &updated, &a.OrganizationID, &a.BranchID)
	if err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	a.CreatedAt, a.UpdatedAt = created.UTC().Format(timestampLayout), updated.UTC().Format(timestampLayout)
	w.Header().Set("Location", r.URL.Path+"/"+a.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"data": a, "version": "v1"})
}

// claims are the claims of a client-credentials token of the waybill
// server, in the same order.
type claims struct {
	Issuer         string   `json:"iss"`
	Subject        string   `json:"sub"`
	Audience       string   `json:"aud"`
	Role           string   `json:"role"`
	ExpiresAt      int64    `json:"exp"`
	IssuedAt       int64    `json:"iat"`
	ID             string   `json:"jti"`
	OrganizationID string   `json:"organization_id"`
	ClientID       string   `json:"oauth_client_id"`
	Scopes         []string `json:"oauth_scopes"`
	BranchIDs      []string `json:"oauth_branch_ids"`
	AppName        string   `json:"oauth_app_name"`
	Grant          string   `json:"oauth_grant_type"`
	RFCClientID    string   `json:"client_id"`
	Scope          string   `json:"scope"`
}

// The jwt.Claims methods; signing uses none of them.
func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return jwt.ClaimStrings{c.Audience}, nil }

type tokenResponse struct {
	AccessToken    string   `json:"access_token"`
	TokenType      string   `json:"token_type"`
	ExpiresIn      int      `json:"expires_in"`
	Scope          string   `json:"scope"`
	OrganizationID string   `json:"organization_id"`
	BranchIDs      []string `json:"branch_ids"`
}

// app is an app as the token endpoints read it.
type app struct {
	clientID, id, name, org, scopes, branches string
}

// authenticate reads the form of a token endpoint's request and
// authenticates its client (HTTP Basic): one SELECT of the app, the
// SHA-256 of the secret compared in constant time. It answers the error
// itself and returns false when the request fails.
func (f *floor) authenticate(w http.ResponseWriter, r *http.Request) (*app, bool) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	user, pass, ok := r.BasicAuth()
	if !ok {
		fail(w, http.StatusUnauthorized, "invalid_client", nil)
		return nil, false
	}
	clientID, err1 := url.QueryUnescape(user)
	secret, err2 := url.QueryUnescape(pass)
	if err1 != nil || err2 != nil {
		fail(w, http.StatusUnauthorized, "invalid_client", nil)
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		fail(w, http.StatusBadRequest, "invalid_request", nil)
		return nil, false
	}
	a := &app{clientID: clientID}
	var redirects string
	var hash []byte
	var created time.Time
	err := f.pool.QueryRow(r.Context(), appSQL, clientID).Scan(&a.id, &a.name, &a.org, &a.scopes, &a.branches, &redirects, &hash, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		fail(w, http.StatusUnauthorized, "invalid_client", nil)
		return nil, false
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return nil, false
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], hash) != 1 {
		fail(w, http.StatusUnauthorized, "invalid_client", nil)
		return nil, false
	}
	return a, true
}

// token is the client-credentials grant.
func (f *floor) token(w http.ResponseWriter, r *http.Request) {
	a, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		fail(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	clientID, id, name, org := a.clientID, a.id, a.name, a.org
	c := &claims{Issuer: f.cfg.Issuer, Subject: id, Audience: "authenticated", Role: "authenticated",
		ID: uuid.Must(uuid.NewV7()).String(), OrganizationID: org, ClientID: clientID, AppName: name, Grant: "client_credentials"}
	if err := json.Unmarshal([]byte(a.scopes), &c.Scopes); err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	if err := json.Unmarshal([]byte(a.branches), &c.BranchIDs); err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	if c.BranchIDs == nil {
		c.BranchIDs = []string{}
	}
	c.RFCClientID, c.Scope = c.ClientID, strings.Join(c.Scopes, " ")
	now := time.Now()
	c.IssuedAt, c.ExpiresAt = now.Unix(), now.Add(accessTokenTTL).Unix()
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = f.kid
	t.Header["typ"] = "at+jwt" // RFC 9068, as the waybill server types its access tokens
	signed, err := t.SignedString(f.secret)
	if err != nil {
		fail(w, http.StatusInternalServerError, "server_error", err)
		return
	}
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken: signed, TokenType: "bearer", ExpiresIn: int(accessTokenTTL / time.Second),
		Scope: strings.Join(c.Scopes, " "), OrganizationID: org, BranchIDs: c.BranchIDs,
	})
}

// introspection is the answer of the introspection endpoint (RFC 7662), as
// the waybill server writes it for an access token.
type introspection struct {
	Active         bool     `json:"active"`
	Scope          string   `json:"scope,omitempty"`
	ClientID       string   `json:"client_id,omitempty"`
	Subject        string   `json:"sub,omitempty"`
	TokenType      string   `json:"token_type,omitempty"`
	ExpiresAt      int64    `json:"exp,omitempty"`
	IssuedAt       int64    `json:"iat,omitempty"`
	Issuer         string   `json:"iss,omitempty"`
	Audience       string   `json:"aud,omitempty"`
	ID             string   `json:"jti,omitempty"`
	OrganizationID string   `json:"organization_id,omitempty"`
	BranchIDs      []string `json:"branch_ids,omitempty"`
}

// introspect is the introspection of an access token by its client: the
// client authenticated as for a token, the token's HS256 signature, issuer,
// audience and expiry checked, and the token of another client inactive.
func (f *floor) introspect(w http.ResponseWriter, r *http.Request) {
	a, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		fail(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return f.secret, nil },
		jwt.WithValidMethods([]string{"HS256"}))
	if err != nil || c.Issuer != f.cfg.Issuer || c.Audience != "authenticated" ||
		c.ExpiresAt <= time.Now().Unix() || c.ClientID != a.clientID {
		writeJSON(w, http.StatusOK, introspection{Active: false})
		return
	}
	writeJSON(w, http.StatusOK, introspection{
		Active: true, Scope: c.Scope, ClientID: c.ClientID, Subject: c.Subject, TokenType: "bearer",
		ExpiresAt: c.ExpiresAt, IssuedAt: c.IssuedAt, Issuer: c.Issuer, Audience: c.Audience, ID: c.ID,
		OrganizationID: c.OrganizationID, BranchIDs: c.BranchIDs,
	})
}

// statementCounter counts the statements sent to PostgreSQL, as a pgx
// tracer.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// writeJSON answers v as JSON, with its length, as the waybill server does.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		log.Print(err)
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// fail answers an error; err, when not nil, is logged.
func fail(w http.ResponseWriter, status int, code string, err error) {
	if err != nil {
		log.Print(err)
	}
	writeJSON(w, status, map[string]string{"error": code})
}
