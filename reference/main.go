// Command waybill is Waybill's reference server: it wires the library
// packages into the complete API of a transport management system, and it
// carries the admin commands that set that server up.
//
// Usage:
//
//	waybill [serve flags]    same as "waybill serve --demo [serve flags]"
//	waybill serve [flags]    run the HTTP server
//	waybill migrate [flags]  migrate the database; prints {"applied":[versions]}
//	waybill admin org create    --name NAME                      → {"id"}
//	waybill admin branch create --org ORG --name NAME            → {"id"}
//	waybill admin user create   --email E --password P --org ORG [--org ...] [--admin] → {"id"}
//	waybill admin user remove   --id USER --org ORG   → {"id", "organization_id", "revoked_families"}
//	waybill admin user delete   --id USER             → {"id", "organization_ids", "revoked_families"}
//	waybill admin purge [--refresh-max-age D] [--event-retention D] [--audit-retention D] → {"codes", "refresh_tokens", "families", "grants", ...}
//	waybill admin app create    --org ORG --name NAME --scopes "s1 s2" [--branches B1,B2 | --all-branches] [--redirect-uri URI ...] → {"client_id", "client_secret", ...}
//	waybill admin app rotate-secret --client-id ID [--revoke-tokens] → {"client_id", "client_secret", "tokens_revoked", ...}
//	waybill admin keys reencrypt --secrets-key KEY [--previous-secrets-key KEY] → {"reencrypted", "secrets_key_id"}
//	waybill help             print this help
//
// Every flag has a WAYBILL_* environment equivalent, used when the flag is
// not given on the command line (--database-url: WAYBILL_DATABASE_URL).
//
// Flags of serve:
//
//	--addr 127.0.0.1:8080    address to listen on (WAYBILL_ADDR); port 0 picks a free port
//	--database-url URL       the database (WAYBILL_DATABASE_URL), default sqlite://waybill.db
//	--demo                   seed demo data (WAYBILL_DEMO)
//	--rate-rest N            requests per minute of each organization to the REST API (default 1000)
//	--rate-edge N            requests per minute of each app to /functions/v1/* (default 100)
//	--rate-token N           requests per minute of each client_id to the token endpoints (default 30)
//	--redis-url URL          keep the rate limits in Redis, shared by the replicas (default: in process):
//	                         redis://host:port/db, redis+cluster://host:port,host:port (a Redis Cluster)
//	                         or redis+sentinel://host:26379,host:26379/master (Redis Sentinel)
//	--redis-prefix PREFIX    prefix of the rate limits' Redis keys (default waybill:rl:)
//	--db-max-conns N         most PostgreSQL connections the server holds, kept open (default 16)
//	--db-timeout D           longest a request waits for the database before 503 (default 2s)
//	--secrets-key KEY        encrypts the signing key kept in the database (32 random bytes in base64)
//	--previous-secrets-key KEY  the secrets key before, still decrypting during a rotation
//	--jwt-alg ALG            HS256 (default), ES256 or EdDSA; the last two publish /.well-known/jwks.json
//	--jwt-key-file FILE      PEM private key (P-256 or Ed25519) that signs instead of the key in the database
//	--jwt-previous-key-file FILE  the key file before, still published and verifying during a rotation
//	--refresh-max-age D      longest a user's authorization of an app lasts (default 2160h, 90 days)
//	--purge-interval D       how often expired tokens are deleted (default 1h; 0 disables)
//	--event-retention D      how long the change feed keeps events (default 168h, 7 days)
//	--audit-retention D      how long the history of records keeps its entries (default 9600h, 400 days)
//	--registration MODE      who may register OAuth clients (RFC 7591): off (default), token or open
//	--client-metadata-documents  accept clients whose client_id is the https URL of their metadata document
//	--webhook-max-attempts N attempts of a webhook delivery before it fails for good (default 10)
//	--webhook-backoff D      delay before a delivery's first retry, each next 4 times longer, at most 10h (default 5s)
//
// user remove ends a membership and user delete deletes a user with every
// membership; both revoke at once every refresh token of the user in the
// organizations concerned, and the access tokens issued from them. A
// refresh, or a code exchange, for a user who is no longer a member of the
// token's organization fails with invalid_grant and revokes those tokens
// too. An authorization lasts --refresh-max-age from the code exchange,
// however often it is refreshed (each refresh token lives 30 days); then
// the user must authorize the app again.
//
// serve deletes the token service's expired state every --purge-interval,
// the first time a minute after it starts: codes and refresh tokens a week
// after they expire, refresh token families a week after they are revoked
// or reach --refresh-max-age, with their tokens, and the codes and consents
// that began them. Within that week a replayed token is still recognized,
// and refused, as revoked or reused; after it, as unknown. "waybill admin
// purge" does the same once, for a scheduler, and prints what it deleted.
// The same purge deletes the API's expired idempotency keys, the events and
// ended webhook deliveries older than --event-retention, and the entries of
// the records' history (GET /v1/{scopeId}/{resource}/{id}/history) older
// than --audit-retention, each retention independent of the other.
// The consent form is limited by --rate-token per signed-in user.
//
// A request that cannot get the database within --db-timeout (no free
// connection, the database unreachable or too slow) is answered 503
// temporarily_unavailable with Retry-After; a request whose client left is
// logged at info level with status 499.
//
// A rate of 0 disables that limit. When Redis does not answer, requests pass
// unlimited; each failure is logged (at most one line per 10 s) and counted.
// "waybill serve -h" lists every flag.
//
// Database URLs are postgres://... or postgresql://... (any pgx URL) or
// sqlite://PATH, PATH relative to the working directory or absolute when it
// starts with / (sqlite:///var/lib/waybill.db). migrate, admin and serve take
// --database-url, and each migrates the database before anything else.
//
// Without --jwt-secret, serve keeps its signing key in the database. With
// --secrets-key (WAYBILL_SECRETS_KEY; make one with openssl rand -base64 32)
// that key is stored encrypted (AES-256-GCM, bound to its row), and a key
// stored in plain text before is encrypted on the first start with it;
// without it, serve logs a warning. To rotate the secrets key, start every
// replica with the new key as --secrets-key and the old one as
// --previous-secrets-key, run "waybill admin keys reencrypt" with the same
// two, then drop --previous-secrets-key. A wrong or missing secrets key
// stops serve at start, naming the secrets key the database needs.
//
// With --jwt-alg ES256 or EdDSA (WAYBILL_JWT_ALG) serve signs with a
// private key generated once and kept in the database beside the HS256
// one, sealed the same way, and publishes its public key at
// /.well-known/jwks.json (the jwks_uri of the metadata), so that other
// services verify tokens without being able to sign them (bearer.RemoteKeys).
// Changing --jwt-alg ends the access tokens signed before (an hour at most);
// refresh tokens are not signed and keep working. To bring the key instead,
// give --jwt-key-file FILE (WAYBILL_JWT_KEY_FILE), a PEM private key on
// P-256 (ES256) or Ed25519 (EdDSA), as "openssl genpkey -algorithm ed25519"
// writes it; its kid is its RFC 7638 thumbprint. Rotate it by starting
// every replica with the new file as --jwt-key-file and the old one as
// --jwt-previous-key-file, and dropping the old one an hour later.
//
// POST /auth/v1/oauth/revoke revokes a refresh token or an
// authorization-code access token with its whole authorization; a
// client-credentials access token cannot be revoked (400
// unsupported_token_type) and lives out its hour. "admin app rotate-secret
// --revoke-tokens" revokes every authorization of the app with its secret.
//
// serve logs JSON lines to stderr, prints "waybill listening on http://ADDR"
// to stdout once it listens, and shuts down gracefully on SIGTERM or SIGINT.
// Besides the API and the token service it answers GET /healthz (liveness),
// GET /readyz (200 while the database answers, else 503) and GET /metrics
// (Prometheus: requests by route, method and code, their durations, rate
// limit refusals and errors, Go and process metrics).
// The admin commands print one JSON object on stdout; on error they print a
// message on stderr and exit 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// main is thin: it sets up signals and the default logger, then hands over to
// run, which the tests call in-process.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default behaviour so that a
		// second one ends the process without waiting for the shutdown.
		<-ctx.Done()
		stop()
	}()

	// Every part of the server is handed its logger; this one is for what
	// logs on a process-wide logger of its own.
	logger := newLogger(os.Stderr)
	// go-redis logs each failed dial on its own process-wide logger, in
	// plain text: a line per request while Redis is down. Send those lines
	// to ours, at debug level; the rate limits log the outage themselves.
	redis.SetLogger(redisLogger{logger})

	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "waybill:", err)
		os.Exit(1)
	}
}

// run executes the command named by args[0] with the rest of args. getenv
// supplies the WAYBILL_* environment, stdout receives the command's output
// and stderr its logs. It returns when the command is done or, for serve,
// after ctx is done and the server has shut down.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isServeFlag(args[0]) {
		// "waybill" and "waybill --addr HOST:PORT ..." are "waybill serve --demo ...".
		args = append([]string{"serve", "--demo"}, args...)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout)
	case "admin":
		return runAdmin(ctx, rest, getenv, stdout, stderr)
	case "openapi":
		return runOpenAPI(rest, getenv, stdout)
	case "help", "-h", "-help", "--help":
		printUsage(stdout)
		return nil
	default:
		return fmt.Errorf("unknown command %q; commands: %s (see \"waybill help\")", cmd, strings.Join(commands, ", "))
	}
}

// isServeFlag reports whether arg, the first argument, is a flag rather than a command
// (and not a request for help): flags alone are flags of "serve --demo".
func isServeFlag(arg string) bool {
	return strings.HasPrefix(arg, "-") && !slices.Contains([]string{"-h", "-help", "--help"}, arg)
}

// commands lists the commands that run knows.
var commands = []string{"serve", "migrate", "admin", "openapi", "help"}

// usage is the text of "waybill help".
const usage = `Usage: waybill <command> [flags]

Waybill's reference server: a multi-tenant, OAuth 2.1-protected REST API of a
transport management system.

Commands:
  serve    run the HTTP server (flags: waybill serve -h)
  migrate  migrate the database and print {"applied":[versions]}
  admin    create organizations, branches, users and apps; remove users from
           an organization or delete them, revoking their tokens (waybill admin -h)
  openapi  print the OpenAPI 3.1 document of the API (also served at /v1/openapi.json)
  help     print this help

With no command, waybill runs "waybill serve --demo", with the flags given
(waybill --addr 127.0.0.1:9090 is waybill serve --demo --addr 127.0.0.1:9090).
Every flag has a WAYBILL_* environment equivalent (--addr: WAYBILL_ADDR,
--database-url: WAYBILL_DATABASE_URL), used when the flag is not given.
Database URLs: postgres://... (any pgx URL) or sqlite://PATH, relative to
the working directory or absolute with a leading / (sqlite:///var/lib/w.db);
the default is sqlite://waybill.db. Every command that opens a database
migrates it first.

serve limits requests per minute (--rate-rest, --rate-edge, --rate-token; 0
disables one), in process or, with --redis-url, across the replicas sharing
that Redis, and serves Prometheus metrics at GET /metrics. --redis-url names
one server (redis://[user:password@]host:port/db, rediss:// for TLS), a
Redis Cluster by some of its nodes (redis+cluster://host:port,host:port,
rediss+cluster:// for TLS) or the master that Redis Sentinels watch
(redis+sentinel://[user:password@]host:26379,host:26379/master[?db=N], the
password being the servers', sentinel_password=... the Sentinels'). While
Redis does not answer, requests pass unlimited. It holds at most
--db-max-conns PostgreSQL connections (default 16) and answers 503
temporarily_unavailable to a request that cannot get the database within
--db-timeout (default 2s). A user's authorization of an app lasts
--refresh-max-age (default 2160h, 90 days) from the code exchange, however
often its tokens are refreshed.

Every --purge-interval (default 1h; 0 disables it) serve deletes what ended
a week ago: expired codes and refresh tokens, revoked or ended
authorizations and their consents; "waybill admin purge" does it once.

serve keeps its signing key in the database encrypted with --secrets-key
(WAYBILL_SECRETS_KEY: 32 random bytes in base64, openssl rand -base64 32);
without it, in plain text, with a warning. "waybill admin keys reencrypt"
finishes a rotation of the secrets key. With --jwt-alg ES256 or EdDSA
(default HS256) tokens are signed with a private key and its public key is
published at /.well-known/jwks.json.
`

// printUsage writes the help text to w.
func printUsage(w io.Writer) {
	_, _ = io.WriteString(w, usage)
}

// newLogger returns the JSON-lines logger that every command writes to w.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, nil))
}

// parseFlags parses args into fs and then, for every flag that args did not
// set, takes the value of its environment variable (see envName) from getenv
// when that is not empty: the command line wins over the environment. With
// envFlags, only the flags named there take their variable. A request for
// help returns flag.ErrHelp after printing fs's flags to help. Positional
// arguments are an error.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, help io.Writer, envFlags ...string) error {
	hasEnv := func(name string) bool { return len(envFlags) == 0 || slices.Contains(envFlags, name) }
	fs.SetOutput(io.Discard) // errors are returned, not printed twice
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printFlags(fs, help, hasEnv)
			return err
		}
		return fmt.Errorf("%s: %w (see \"waybill %s -h\")", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || !hasEnv(f.Name) {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("%s: invalid value %q for %s: %w", fs.Name(), v, name, serr)
		}
	})
	return err
}

// envName returns the environment variable of a flag: WAYBILL_ and the flag's
// name in upper case with dashes as underscores (database-url:
// WAYBILL_DATABASE_URL).
func envName(flagName string) string {
	return "WAYBILL_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// printFlags writes the usage of fs's command and its flags to w, each with
// its environment variable when hasEnv says it takes one.
func printFlags(fs *flag.FlagSet, w io.Writer, hasEnv func(flagName string) bool) {
	fmt.Fprintf(w, "Usage: waybill %s [flags]\n\nFlags:\n", fs.Name())
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		var notes []string
		if hasEnv(f.Name) {
			notes = append(notes, "env "+envName(f.Name))
		}
		if f.DefValue != "" && f.DefValue != "false" {
			notes = append(notes, "default "+f.DefValue)
		}
		fmt.Fprintf(w, "\n    \t%s", text)
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	})
}
