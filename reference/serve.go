package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// Timeouts of the HTTP server. Request bodies are at most 1 MiB (10 MiB
// for a batch), so a generous read timeout still bounds slow clients. An
// export streams longer than writeTimeout: each of its writes sets its
// own deadline (resource.ExportWriteTimeout), and the registry's
// ExportTimeout bounds it whole.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	// shutdownTimeout bounds how long in-flight requests may take to finish
	// once a shutdown starts; connections still open after it are closed.
	shutdownTimeout = 10 * time.Second
)

// serveConfig is the configuration of the serve command. Its zero value is
// not usable: parseServeFlags fills in the defaults.
type serveConfig struct {
	// Addr is the TCP address to listen on; port 0 picks a free port.
	Addr string
	// DatabaseURL names the database (see openDB).
	DatabaseURL string
	// Demo seeds demo data once and prints the app's credentials.
	Demo bool
	// Issuer is the issuer URL of the tokens and the base of the OAuth
	// endpoints; empty means http:// and the address listened on.
	Issuer string
	// JWTSecret is the raw HMAC key of the tokens (at least 32 bytes);
	// empty means a key generated once and kept in the database.
	JWTSecret string
	// JWTPreviousSecret still verifies the tokens of the secret before
	// JWTSecret, during a rotation.
	JWTPreviousSecret string
	// JWTAlg is the signing algorithm: HS256 (the default, also when
	// empty), ES256 or EdDSA, whose public keys are published (see
	// signingKeys).
	JWTAlg string
	// JWTKeyFile is a PEM file with the private key that signs tokens (a
	// P-256 key for ES256, an Ed25519 key for EdDSA) instead of the key
	// kept in the database; see signingKeys.
	JWTKeyFile string
	// JWTPreviousKeyFile still verifies the tokens of the key file before
	// JWTKeyFile, during a rotation.
	JWTPreviousKeyFile string
	// SecretsKey encrypts the signing key kept in the database (see
	// newSealer); empty keeps it in plain text, with a warning.
	SecretsKey string
	// PreviousSecretsKey still decrypts what the secrets key before
	// SecretsKey encrypted, during a rotation of it.
	PreviousSecretsKey string
	// DBMaxConns bounds the PostgreSQL connections of the server (see
	// openDB); SQLite always has one.
	DBMaxConns int
	// DBTimeout bounds how long a request may wait for the database (see
	// withDeadline).
	DBTimeout time.Duration
	// RefreshMaxAge is the absolute lifetime of a user's authorization of
	// an app: its refresh tokens rotate until this long after the code
	// exchange, then the user must authorize the app again.
	RefreshMaxAge time.Duration
	// Limits configures the rate limits (--rate-*, --redis-url).
	Limits limitsConfig
	// PurgeInterval is how often the expired state of the token service is
	// purged (see startPurges); 0 disables the purge.
	PurgeInterval time.Duration
	// EventRetention is how long the change feed keeps events.
	EventRetention time.Duration
	// AuditRetention is how long the history of records is kept.
	AuditRetention time.Duration
	// WebhookAllowPrivate lets webhook endpoints be at addresses that are
	// not globally reachable (loopback, private, link-local and the other
	// special-purpose ranges), which are otherwise refused.
	WebhookAllowPrivate bool
	// WebhookTimeout bounds one attempt of a webhook delivery.
	WebhookTimeout time.Duration
	// WebhookMaxAttempts is how many attempts a webhook delivery gets
	// before it fails for good (and its endpoint may be disabled).
	WebhookMaxAttempts int
	// WebhookBackoff is the delay before the first retry of a webhook
	// delivery; each next one is 4 times longer, capped at 10 hours.
	WebhookBackoff time.Duration
	// Registration says who may register clients through Dynamic Client
	// Registration: "off" (the default), "token" (holders of an initial
	// access token from "waybill admin registration-token create") or
	// "open" (anyone).
	Registration string
	// ClientMetadataDocuments accepts clients whose client_id is the https
	// URL of their client metadata document (see
	// oauth.ClientMetadataDocuments); WebhookAllowPrivate lets those
	// documents be at addresses that are not public too.
	ClientMetadataDocuments bool
}

// parseServeFlags parses the serve command's flags from args and their
// WAYBILL_* equivalents from getenv; the command line wins. On -h it prints
// the flags to help and returns flag.ErrHelp.
func parseServeFlags(args []string, getenv func(string) string, help io.Writer) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "`address` to listen on; port 0 picks a free port")
	databaseURLFlag(fs, &cfg.DatabaseURL)
	fs.BoolVar(&cfg.Demo, "demo", false, "seed, once, an organization with two branches, a user, an app and a few hundred records, and print how to use them")
	fs.StringVar(&cfg.Issuer, "issuer", "", "issuer `URL` of the tokens and base of the OAuth endpoints (default http://ADDR)")
	fs.StringVar(&cfg.JWTSecret, "jwt-secret", "", "raw HMAC `key` that signs tokens, at least 32 bytes (default: a key generated once and kept in the database)")
	fs.StringVar(&cfg.JWTPreviousSecret, "jwt-previous-secret", "", "the `key` before --jwt-secret, still accepted for tokens it signed, during a rotation")
	fs.StringVar(&cfg.JWTAlg, "jwt-alg", "", "`algorithm` that signs tokens: HS256 (a shared secret; the default), ES256 or EdDSA (a private key kept in the database, its public key published at /.well-known/jwks.json)")
	fs.StringVar(&cfg.JWTKeyFile, "jwt-key-file", "", "PEM `file` with the private key that signs tokens, a P-256 key (ES256) or an Ed25519 key (EdDSA), as \"openssl genpkey -algorithm ed25519\" writes it (default: a key generated once and kept in the database); sets --jwt-alg")
	fs.StringVar(&cfg.JWTPreviousKeyFile, "jwt-previous-key-file", "", "PEM `file` with the key before --jwt-key-file, whose public key is still published and whose tokens still verify, during a rotation")
	fs.StringVar(&cfg.SecretsKey, "secrets-key", "", "`key` that encrypts the signing key kept in the database (AES-256-GCM): 32 random bytes in base64, as openssl rand -base64 32 prints; prefer the environment to the command line")
	fs.StringVar(&cfg.PreviousSecretsKey, "previous-secrets-key", "", "the secrets `key` before --secrets-key, still accepted to decrypt, until \"waybill admin keys reencrypt\" has run")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", defaultDBMaxConns, "most PostgreSQL `connections` the server holds, kept open while used; replicas × this must stay below PostgreSQL's max_connections (behind PgBouncer: its max_client_conn)")
	fs.DurationVar(&cfg.DBTimeout, "db-timeout", defaultDBTimeout, "longest a request waits for the database (a free connection, connecting, its statements) before it is answered 503 temporarily_unavailable")
	fs.DurationVar(&cfg.RefreshMaxAge, "refresh-max-age", oauth.DefaultRefreshMaxAge, "longest a user's authorization of an app lasts, counted from the code exchange and not extended by refreshing; then the user must authorize the app again (each refresh token still lives 30 days)")
	limitsFlags(fs, &cfg.Limits)
	fs.DurationVar(&cfg.PurgeInterval, "purge-interval", defaultPurgeInterval, "how often expired codes, refresh tokens, revoked or ended authorizations and old consents are deleted from the database (the first time a minute after the start); 0 disables it, for \"waybill admin purge\" run by a scheduler instead")
	fs.DurationVar(&cfg.EventRetention, "event-retention", defaultEventRetention, "how long the change feed (/v1/{scopeId}/events) keeps events; older ones go at the next purge, and a cursor from before them is answered 410 cursor_expired")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", defaultAuditRetention, "how long the history of records (/v1/{scopeId}/{resource}/{id}/history) keeps its entries, whatever --event-retention is; older ones go at the next purge")
	fs.BoolVar(&cfg.WebhookAllowPrivate, "webhook-allow-private", false, "let webhook endpoints be at addresses that are not globally reachable: loopback, private, link-local and the other special-purpose ranges (refused otherwise, so that no organization reaches this server's network); for tests and private deployments")
	fs.StringVar(&cfg.Registration, "registration", "off", "who may register OAuth clients at POST /auth/v1/oauth/register (Dynamic Client Registration, RFC 7591), `mode`: off (nobody; the endpoint answers 404), token (holders of an initial access token from \"waybill admin registration-token create\") or open (anyone, rate limited per address); registered clients get the authorization-code grant alone")
	fs.DurationVar(&cfg.WebhookTimeout, "webhook-timeout", defaultWebhookTimeout, "longest one attempt of a webhook delivery may take (connecting, sending, the receiver's answer) before it counts as failed; a replica that dies mid-delivery leaves it to the others after six times this")
	fs.IntVar(&cfg.WebhookMaxAttempts, "webhook-max-attempts", defaultWebhookMaxAttempts, "how many `attempts` a webhook delivery gets before it fails for good; an endpoint whose delivery fails them all while nothing else reaches it is disabled")
	fs.DurationVar(&cfg.WebhookBackoff, "webhook-backoff", defaultWebhookBackoff, "delay before the first retry of a failed webhook delivery; each next one is 4 times longer (with ±20% jitter), capped at 10h: the default spans about a day with 10 attempts")
	fs.BoolVar(&cfg.ClientMetadataDocuments, "client-metadata-documents", false, "accept, as a public client, a client_id that is the https URL of its client metadata document (OAuth Client ID Metadata Document): the document is fetched at that URL (at most 5 KiB within 5 seconds, no redirects, not from addresses that are not globally reachable unless --webhook-allow-private) and cached as its Cache-Control says, from 5 minutes to 24 hours; the consent page names the client with the host of its URL")
	if err := parseFlags(fs, args, getenv, help); err != nil {
		return serveConfig{}, err
	}
	if _, err := oauth.ParseRegistrationMode(cfg.Registration); err != nil {
		return serveConfig{}, fmt.Errorf("serve: --registration must be off, token or open, not %q", cfg.Registration)
	}
	if cfg.WebhookTimeout <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --webhook-timeout must be positive, not %v", cfg.WebhookTimeout)
	}
	if cfg.WebhookMaxAttempts < 1 {
		return serveConfig{}, fmt.Errorf("serve: --webhook-max-attempts must be at least 1, not %d", cfg.WebhookMaxAttempts)
	}
	if cfg.WebhookBackoff <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --webhook-backoff must be positive, not %v", cfg.WebhookBackoff)
	}
	if cfg.EventRetention <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --event-retention must be positive, not %v", cfg.EventRetention)
	}
	if cfg.AuditRetention <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --audit-retention must be positive, not %v", cfg.AuditRetention)
	}
	if _, err := newSealer(cfg.SecretsKey, cfg.PreviousSecretsKey); err != nil {
		return serveConfig{}, fmt.Errorf("serve: %w", err)
	}
	if cfg.DBMaxConns < 1 {
		return serveConfig{}, fmt.Errorf("serve: --db-max-conns must be at least 1, not %d", cfg.DBMaxConns)
	}
	if cfg.DBTimeout <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --db-timeout must be positive, not %v", cfg.DBTimeout)
	}
	if cfg.RefreshMaxAge <= 0 {
		return serveConfig{}, fmt.Errorf("serve: --refresh-max-age must be positive, not %v", cfg.RefreshMaxAge)
	}
	if err := checkPurgeInterval(cfg.PurgeInterval); err != nil {
		return serveConfig{}, fmt.Errorf("serve: %w", err)
	}
	if err := checkIssuer(cfg.Issuer); err != nil {
		return serveConfig{}, fmt.Errorf("serve: %w", err)
	}
	for _, secret := range []struct{ flag, value string }{{"--jwt-secret", cfg.JWTSecret}, {"--jwt-previous-secret", cfg.JWTPreviousSecret}} {
		if secret.value != "" && len(secret.value) < bearer.MinKeyLength {
			return serveConfig{}, fmt.Errorf("serve: %s must be at least %d bytes, not %d", secret.flag, bearer.MinKeyLength, len(secret.value))
		}
	}
	if cfg.JWTPreviousSecret != "" && cfg.JWTSecret == "" {
		return serveConfig{}, errors.New("serve: --jwt-previous-secret needs --jwt-secret, the secret that follows it")
	}
	if cfg.JWTPreviousKeyFile != "" && cfg.JWTKeyFile == "" {
		return serveConfig{}, errors.New("serve: --jwt-previous-key-file needs --jwt-key-file, the key that follows it")
	}
	if cfg.JWTKeyFile != "" && cfg.JWTSecret != "" {
		return serveConfig{}, errors.New("serve: give --jwt-secret (HS256) or --jwt-key-file (ES256 or EdDSA), not both")
	}
	switch cfg.JWTAlg {
	case "", bearer.HS256:
		if cfg.JWTAlg != "" && cfg.JWTKeyFile != "" {
			return serveConfig{}, errors.New("serve: --jwt-key-file holds an ES256 or EdDSA key; --jwt-alg HS256 signs with a shared secret")
		}
	case bearer.ES256, bearer.EdDSA:
		if cfg.JWTSecret != "" {
			return serveConfig{}, fmt.Errorf("serve: --jwt-secret is an HS256 key; with --jwt-alg %s give --jwt-key-file, or neither and the key is generated and kept in the database", cfg.JWTAlg)
		}
	default:
		return serveConfig{}, fmt.Errorf("serve: --jwt-alg must be HS256, ES256 or EdDSA, not %q", cfg.JWTAlg)
	}
	return cfg, nil
}

// checkIssuer checks an --issuer before anything else starts: empty (the
// address listened on), or an absolute http or https URL with a host and
// without a trailing slash, query or fragment. It is the iss of every token
// and the base of the OAuth endpoints, compared as a string by the clients
// that verify it (RFC 8414 section 3.3).
func checkIssuer(issuer string) error {
	if issuer == "" {
		return nil
	}
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return fmt.Errorf("--issuer %q is not a URL: %w", issuer, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("--issuer %q must be an absolute http:// or https:// URL, such as https://tms.example.com", issuer)
	case u.Host == "":
		return fmt.Errorf("--issuer %q names no host", issuer)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(issuer, "?") || strings.HasSuffix(issuer, "#"):
		return fmt.Errorf("--issuer %q may have no query or fragment", issuer)
	case strings.HasSuffix(issuer, "/"):
		return fmt.Errorf("--issuer %q must not end with /: tokens carry it as it is, and clients compare it as a string (use %q)", issuer, strings.TrimRight(issuer, "/"))
	}
	return nil
}

// runServe is the serve command: it parses its flags and serves until ctx is
// done.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return serve(ctx, cfg, newLogger(stderr), stdout)
}

// serve listens on cfg.Addr, opens and migrates the database, prints the
// address it listens on to stdout and answers requests until ctx is done. It
// then shuts the server down gracefully, waiting up to shutdownTimeout for
// requests in flight, closes the database and returns nil after a clean
// shutdown.
func serve(ctx context.Context, cfg serveConfig, logger *slog.Logger, stdout io.Writer) error {
	// Listen before anything else, so that the address printed below is the
	// one the kernel gave (port 0 picks a free port) and connections that
	// arrive from now on wait in the backlog.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w; choose another address with --addr HOST:PORT or WAYBILL_ADDR (port 0 picks a free port)", err)
	}

	db, dialect, applied, err := openAndMigrate(ctx, cfg.DatabaseURL, cfg.DBMaxConns)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			logger.Error("close database", "error", err.Error())
		}
	}()
	logger.Info("database ready", "dialect", dialect.String(), "url", redactURL(cfg.DatabaseURL), "migrations_applied", len(applied),
		"max_conns", db.Stats().MaxOpenConnections, "timeout", cfg.DBTimeout.String())

	sealer, err := newSealer(cfg.SecretsKey, cfg.PreviousSecretsKey)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	store := newOAuthStore(db, dialect).WithSealer(sealer)
	keys, err := signingKeys(ctx, store, signingConfig{
		alg: cfg.JWTAlg, secret: cfg.JWTSecret, previousSecret: cfg.JWTPreviousSecret,
		keyFile: cfg.JWTKeyFile, previousKeyFile: cfg.JWTPreviousKeyFile,
	}, logger)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	if sealer == nil && cfg.JWTSecret == "" && cfg.JWTKeyFile == "" {
		logger.Warn("the signing key is kept in the database unencrypted: anyone who reads the database or a backup of it can sign tokens for every organization; set --secrets-key (WAYBILL_SECRETS_KEY) to encrypt it")
	}
	url := "http://" + ln.Addr().String()
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = url
	}
	tokens := newOAuthServer(db, store, keys, issuer, logger)
	tokens.RefreshMaxAge = cfg.RefreshMaxAge
	tokens.Registration, _ = oauth.ParseRegistrationMode(cfg.Registration) // checked by parseServeFlags
	if cfg.ClientMetadataDocuments {
		tokens.ClientMetadataDocuments = newClientMetadataDocuments(cfg.WebhookAllowPrivate)
	}
	cutoffs, err := newCutOffs(ctx, store, db, dialect, logger)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: load the cut-offs of disconnected apps: %w", err)
	}
	tokens.CutOffs = cutoffs
	verifier := &bearer.Verifier{Keys: keys, Issuer: issuer, Families: store, CutOffs: cutoffs, Resource: apiResource(issuer)}
	api, err := newAPI(db, dialect, verifier, logger)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	metrics := newMetrics()
	metrics.watchDB(db, dialect.String())
	limits, err := newRateLimits(ctx, cfg.Limits, metrics, logger)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	defer func() {
		if err := limits.Close(); err != nil {
			logger.Error("close rate limiter", "error", err.Error())
		}
	}()
	rest := limits.REST()
	api.Middleware, api.ChargeExtra = rest.Wrap, rest.ChargeMore
	dispatcher := newDispatcher(api, sealer, cfg.WebhookAllowPrivate, cfg.WebhookTimeout,
		retrySchedule{maxAttempts: cfg.WebhookMaxAttempts, firstDelay: cfg.WebhookBackoff}, metrics, logger)

	srv := &http.Server{
		Handler: newHandlerWith(db, tokens, api, handlerOptions{Limits: limits, Metrics: metrics, Logger: logger, DBTimeout: cfg.DBTimeout,
			Sealer: sealer, WebhookAllowPrivate: cfg.WebhookAllowPrivate, WebhookWake: dispatcher.Wake, EventRetention: cfg.EventRetention}),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}

	if _, err := fmt.Fprintf(stdout, "waybill listening on %s\n", url); err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: print address: %w", err)
	}
	logger.Info("listening", "addr", ln.Addr().String(), "url", url, "issuer", issuer)
	if cfg.Demo {
		// Seeded before serving: requests wait in the listen backlog.
		if err := seedDemo(ctx, db, dialect, tokens, stdout, issuer); err != nil {
			_ = ln.Close()
			return fmt.Errorf("serve: demo: %w", err)
		}
	}

	// Started before the server serves, since it hooks the API's writes;
	// stopped after the server has drained and before the database is
	// closed (deferred after its Close).
	defer startCutOffs(ctx, cutoffs, logger)()
	defer startDispatcher(ctx, dispatcher, api, metrics, logger)()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer startPurges(ctx, tokens, apiPurge{api, cfg.EventRetention, cfg.AuditRetention}, cfg.PurgeInterval, logger)()
	if dialect == query.SQLite {
		// The planner's statistics, kept current as the data grows.
		defer startSQLiteOptimize(ctx, db, sqliteOptimizeInterval, logger)()
	}

	select {
	case err := <-served:
		// Serve only returns early on a failure of the listener.
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", "reason", context.Cause(ctx).Error(), "timeout", shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
