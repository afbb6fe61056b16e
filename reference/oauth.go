package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/netguard"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook"
)

// newOAuthStore returns the token service's store on the reference
// database; its tables live beside the reference server's own. On
// PostgreSQL it reads apps, on every client authentication, through pgx's
// pool under db, without database/sql.
func newOAuthStore(db *sql.DB, d query.Dialect) *sqlstore.Store {
	s := sqlstore.New(db, d)
	if p := pgDatabaseOf(db); p != nil {
		s.ReadAppsWith(func(ctx context.Context, text string, args ...any) sqlstore.Row {
			return p.pool.QueryRow(ctx, text, args...)
		})
	}
	return s
}

// signingConfig is where the keys that sign and verify tokens come from
// (serve's --jwt-* flags).
type signingConfig struct {
	// alg is --jwt-alg: HS256, ES256 or EdDSA; "" is HS256, or the key
	// file's algorithm.
	alg string
	// secret and previousSecret are --jwt-secret and --jwt-previous-secret.
	secret, previousSecret string
	// keyFile and previousKeyFile are --jwt-key-file and
	// --jwt-previous-key-file.
	keyFile, previousKeyFile string
}

// signingKeys returns the keys that sign and verify tokens, from one of
// three places:
//
//   - --jwt-secret (HS256 only): the raw secret is the key, and
//     --jwt-previous-secret, while set, still verifies the tokens the
//     secret before it signed; its kid is derived from the secret, so every
//     replica names it alike.
//   - --jwt-key-file (ES256 or EdDSA, by the key): a PEM private key, and
//     --jwt-previous-key-file, while set, still verifies and is still
//     published; the kid is the key's RFC 7638 thumbprint, so every replica
//     given the file names it alike. Both keys must be of one algorithm.
//     A file that others than its owner may read is logged as a warning.
//   - neither: the key of alg is generated once and kept in the database
//     (sealed with --secrets-key), so replicas that share the database
//     share the key. During a rotation of that key ("waybill admin keys
//     rotate") the staged next key and the previous key verify beside it.
//
// An ES256 or EdDSA key is published at /.well-known/jwks.json. Each
// algorithm has its own key in the database, and only the configured key
// signs and verifies: moving from one algorithm or key source to another
// ends the access tokens signed before (an hour at most; clients get a 401
// and refresh, since refresh tokens are not signed) and the list cursors
// handed out before.
func signingKeys(ctx context.Context, store *sqlstore.Store, c signingConfig, logger *slog.Logger) (*bearer.KeySet, error) {
	switch {
	case c.keyFile != "":
		return keyFiles(c, logger)
	case c.secret != "":
		return secretKeys(c)
	case c.previousSecret != "":
		return nil, errors.New("--jwt-previous-secret needs --jwt-secret")
	}
	alg := c.alg
	if alg == "" {
		alg = bearer.HS256
	}
	key, others, err := store.SigningKeysFor(ctx, alg)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", explainSealing(err))
	}
	return bearer.NewKeySet(key, others...)
}

// secretKeys returns the HS256 keys of --jwt-secret and
// --jwt-previous-secret.
func secretKeys(c signingConfig) (*bearer.KeySet, error) {
	if c.alg != "" && c.alg != bearer.HS256 {
		return nil, fmt.Errorf("--jwt-secret is an HS256 key; with --jwt-alg %s give --jwt-key-file, or neither and the key is generated and kept in the database", c.alg)
	}
	keys := []bearer.Key{bearer.SecretKey([]byte(c.secret))}
	if c.previousSecret != "" {
		keys = append(keys, bearer.SecretKey([]byte(c.previousSecret)))
	}
	for _, k := range keys {
		if len(k.Secret) < bearer.MinKeyLength {
			return nil, fmt.Errorf("a JWT secret must be at least %d bytes", bearer.MinKeyLength)
		}
	}
	return bearer.NewKeySet(keys[0], keys[1:]...)
}

// keyFiles returns the keys of --jwt-key-file and --jwt-previous-key-file.
func keyFiles(c signingConfig, logger *slog.Logger) (*bearer.KeySet, error) {
	if c.secret != "" {
		return nil, errors.New("give --jwt-secret (HS256) or --jwt-key-file (ES256 or EdDSA), not both")
	}
	current, err := readKeyFile("--jwt-key-file", c.keyFile, logger)
	if err != nil {
		return nil, err
	}
	if c.alg != "" && c.alg != current.Alg() {
		return nil, fmt.Errorf("--jwt-key-file holds an %s key, and --jwt-alg is %s", current.Alg(), c.alg)
	}
	var previous []bearer.Key
	if c.previousKeyFile != "" {
		k, err := readKeyFile("--jwt-previous-key-file", c.previousKeyFile, logger)
		if err != nil {
			return nil, err
		}
		if k.Alg() != current.Alg() {
			return nil, fmt.Errorf("--jwt-previous-key-file holds an %s key and --jwt-key-file an %s key; both must be of one algorithm", k.Alg(), current.Alg())
		}
		if k.ID != current.ID {
			previous = append(previous, k)
		}
	}
	return bearer.NewKeySet(current, previous...)
}

// readKeyFile reads and parses the PEM private key of flag at path. Its
// content never reaches an error or a log.
func readKeyFile(flag, path string, logger *slog.Logger) (bearer.Key, error) {
	info, err := os.Stat(path)
	if err != nil {
		return bearer.Key{}, fmt.Errorf("%s: %w", flag, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		logger.Warn("the signing key file may be read by others than its owner; make it readable by the server alone (chmod 600)",
			"flag", flag, "path", path, "mode", info.Mode().Perm().String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return bearer.Key{}, fmt.Errorf("%s: %w", flag, err)
	}
	key, err := bearer.ParsePrivateKeyPEM(data)
	if err != nil {
		return bearer.Key{}, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return key, nil
}

// newSealer returns the sealer of --secrets-key and --previous-secrets-key,
// which encrypts the signing key kept in the database; nil when neither is
// set. A secrets key is 32 random bytes in base64 (oauth.ParseSecretsKey).
func newSealer(current, previous string) (*oauth.Sealer, error) {
	if current == "" {
		if previous != "" {
			return nil, errors.New("--previous-secrets-key needs --secrets-key")
		}
		return nil, nil
	}
	key, err := oauth.ParseSecretsKey(current)
	if err != nil {
		return nil, fmt.Errorf("--secrets-key: %w", err)
	}
	var keys []oauth.SecretsKey
	if previous != "" {
		prev, err := oauth.ParseSecretsKey(previous)
		if err != nil {
			return nil, fmt.Errorf("--previous-secrets-key: %w", err)
		}
		keys = append(keys, prev)
	}
	sealer, err := oauth.NewSealer(key, keys...)
	if err != nil {
		return nil, fmt.Errorf("--secrets-key and --previous-secrets-key: %w", err)
	}
	return sealer, nil
}

// explainSealing says what to do about a signing key in the database that
// does not decrypt.
func explainSealing(err error) error {
	switch {
	case errors.Is(err, oauth.ErrUnknownSecretsKey):
		return fmt.Errorf("the signing key in the database is encrypted with another secrets key than --secrets-key and --previous-secrets-key (WAYBILL_SECRETS_KEY, WAYBILL_PREVIOUS_SECRETS_KEY); give the one it was encrypted with: %w", err)
	case errors.Is(err, oauth.ErrUnsealFailed):
		return fmt.Errorf("the signing key in the database does not decrypt: its row was altered: %w", err)
	}
	return err
}

// newOAuthServer returns the token service of the reference server, which
// logs to logger.
func newOAuthServer(db *sql.DB, store *sqlstore.Store, keys *bearer.KeySet, issuer string, logger *slog.Logger) *oauth.Server {
	d := newDirectory(db)
	d.logger = logger
	var resources []string
	if issuer != "" {
		resources = []string{apiResource(issuer)}
	}
	return &oauth.Server{
		Resources:       resources,
		Issuer:          issuer,
		Keys:            keys,
		Store:           store,
		Directory:       d,
		SecureCookies:   strings.HasPrefix(issuer, "https://"),
		ScopesSupported: knownScopes(),
		Audit:           true,
		Logger:          logger,
		Realm:           realm,
	}
}

// clientMetadataTestHook, when set, adjusts the resolver of client
// metadata documents that serve builds: tests set it, once and before any
// server with --client-metadata-documents starts, to trust the certificate
// of their httptest TLS server and to shorten the fetch timeout. It is for
// tests only; nothing else sets it, and no flag reaches it.
var clientMetadataTestHook func(*oauth.ClientMetadataDocuments)

// newClientMetadataDocuments returns the resolver of client metadata
// documents of --client-metadata-documents, with the SSRF guard of the
// webhooks: no address that is not public unless allowPrivate
// (--webhook-allow-private).
func newClientMetadataDocuments(allowPrivate bool) *oauth.ClientMetadataDocuments {
	d := &oauth.ClientMetadataDocuments{Guard: netguard.Guard{AllowPrivate: allowPrivate}}
	if clientMetadataTestHook != nil {
		clientMetadataTestHook(d)
	}
	return d
}

// adminOAuthServer returns the token service of an admin command: no keys
// and no issuer, for the operations that sign nothing. Its log lines, if
// any, go to the process's standard error as JSON lines, as serve's do.
func adminOAuthServer(db *sql.DB, d query.Dialect) *oauth.Server {
	return newOAuthServer(db, newOAuthStore(db, d), nil, "", newLogger(os.Stderr))
}

// appCreate is "waybill admin app create --org ORG --name NAME --scopes
// "s1 s2" [--branches B1,B2 | --all-branches | --public] [--redirect-uri
// URI ...]".
type appCreate struct {
	org, name, scopes, branches string
	allBranches, public         bool
	redirectURIs                stringList
}

// flags declares the app's flags.
func (c *appCreate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization that owns the app (required)")
	fs.StringVar(&c.name, "name", "", "`name` of the app, shown on the consent page (required)")
	fs.StringVar(&c.scopes, "scopes", "", "`scopes` the app may be granted, separated by spaces or commas (required)")
	fs.StringVar(&c.branches, "branches", "", "comma-separated branch `ids` its client-credentials tokens may use (none when empty)")
	fs.BoolVar(&c.allBranches, "all-branches", false, "let its client-credentials tokens use every branch the organization has now (instead of --branches)")
	fs.BoolVar(&c.public, "public", false, "register a public client (token_endpoint_auth_method none): no secret, the authorization-code grant with PKCE and refresh only, for a desktop or mobile app or an agent; needs --redirect-uri, takes no branches")
	fs.Var(&c.redirectURIs, "redirect-uri", "exact redirect `URI` of its authorization-code flow: https, http on 127.0.0.1, [::1] or localhost, or a private-use scheme such as com.example.app:/callback; no fragment (repeatable)")
}

// check requires --org, --name and --scopes, and redirect URIs that
// oauth.CheckRedirectURI accepts.
func (c *appCreate) check() error {
	org, err := parseOrgID(c.org)
	if err != nil {
		return err
	}
	c.org = org
	c.scopes = strings.ReplaceAll(c.scopes, ",", " ")
	switch {
	case strings.TrimSpace(c.name) == "":
		return errors.New("--name is required")
	case len(oauth.ParseScope(c.scopes)) == 0:
		return errors.New("--scopes is required")
	case c.allBranches && strings.TrimSpace(c.branches) != "":
		return errors.New("give --branches or --all-branches, not both")
	case c.public && (c.allBranches || strings.TrimSpace(c.branches) != ""):
		return errors.New("a --public app has no branches: it may not use the client-credentials grant")
	case c.public && len(c.redirectURIs) == 0:
		return errors.New("a --public app needs --redirect-uri: it may use only the authorization-code grant")
	}
	for _, u := range c.redirectURIs {
		if err := oauth.CheckRedirectURI(u); err != nil {
			return fmt.Errorf("--redirect-uri: %w", err)
		}
	}
	return nil
}

// warnings warns about an app whose client-credentials tokens reach no
// branch, and about scopes that no resource of this server takes (a
// service of the host's own may, so they are kept).
func (c *appCreate) warnings() []string {
	var out []string
	if !c.public && !c.allBranches && strings.TrimSpace(c.branches) == "" {
		out = append(out, "the app may use no branch: its client-credentials tokens reach no branch's data "+
			"(accounts, orders, quotations, ...) and may not write organization-wide data; give --branches B1,B2 or --all-branches")
	}
	known := knownScopes()
	for _, sc := range oauth.ParseScope(c.scopes) {
		if !slices.Contains(known, sc) {
			out = append(out, fmt.Sprintf("scope %q is not one of this server's (svc:<resource>:read or :write); it is kept for services of your own", sc))
		}
	}
	return out
}

// knownScopes returns the scopes of the reference server's resources, of
// its change feed and of its webhook endpoints.
func knownScopes() []string {
	out := []string{events.ReadScope, webhook.ScopeRead, webhook.ScopeWrite}
	for _, r := range resources() {
		out = append(out, r.ReadScope())
		if !r.ReadOnly {
			out = append(out, r.WriteScope())
		}
	}
	return out
}

// exec registers the app and prints its client secret, this once (a
// public app has none).
func (c *appCreate) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	branches := []string{}
	for b := range strings.SplitSeq(c.branches, ",") {
		if b = strings.TrimSpace(b); b != "" {
			branches = append(branches, strings.ToLower(b))
		}
	}
	if c.allBranches {
		lines, err := queryLines(ctx, db, "SELECT id FROM branches WHERE organization_id = $1 ORDER BY id", []any{c.org},
			func(rows *sql.Rows) (any, error) {
				var id string
				return id, rows.Scan(&id)
			})
		if err != nil {
			return nil, fmt.Errorf("list branches: %w", err)
		}
		for _, id := range lines {
			branches = append(branches, id.(string))
		}
	}
	srv := adminOAuthServer(db, d)
	app, secret, err := srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: c.org, Name: c.name, Scopes: oauth.ParseScope(c.scopes),
		BranchIDs: branches, RedirectURIs: c.redirectURIs, Public: c.public,
	})
	if err != nil {
		return nil, err
	}
	return oauth.NewAppResponse(app, secret), nil
}

// appRotateSecret is "waybill admin app rotate-secret --client-id ID
// [--revoke-tokens]".
type appRotateSecret struct {
	clientID     string
	revokeTokens bool
}

// flags declares --client-id and --revoke-tokens.
func (c *appRotateSecret) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.clientID, "client-id", "", "client `id` of the app (required)")
	fs.BoolVar(&c.revokeTokens, "revoke-tokens", false, "also revoke every refresh token of the app and the access tokens issued from them; its client-credentials access tokens cannot be revoked and stay valid until they expire (an hour at most)")
}

// check requires --client-id.
func (c *appRotateSecret) check() error {
	if c.clientID = strings.TrimSpace(c.clientID); c.clientID == "" {
		return errors.New("--client-id is required")
	}
	return nil
}

// exec gives the app a new secret; the old one stops working at once. With
// --revoke-tokens it revokes the app's tokens too. It prints the
// oauth.SecretRotation.
func (c *appRotateSecret) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	srv := adminOAuthServer(db, d)
	rotation, err := srv.RotateAppSecret(ctx, c.clientID, c.revokeTokens)
	if err != nil {
		return nil, err
	}
	return rotation, nil
}

// keysReencrypt is "waybill admin keys reencrypt --secrets-key KEY
// [--previous-secrets-key KEY]": the last step of a rotation of the secrets
// key.
type keysReencrypt struct {
	secretsKey, previous string
	sealer               *oauth.Sealer
}

// flags declares --secrets-key and --previous-secrets-key, as serve has
// them.
func (c *keysReencrypt) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.secretsKey, "secrets-key", "", "the secrets `key` to encrypt with, serve's new --secrets-key (required)")
	fs.StringVar(&c.previous, "previous-secrets-key", "", "the secrets `key` the signing key is encrypted with now, when it is not --secrets-key")
}

// check requires --secrets-key and parses both keys.
func (c *keysReencrypt) check() error {
	if c.secretsKey == "" {
		return errors.New("--secrets-key is required")
	}
	sealer, err := newSealer(c.secretsKey, c.previous)
	c.sealer = sealer
	return err
}

// reencrypted is the output of keys reencrypt.
type reencrypted struct {
	// Reencrypted counts the keys encrypted anew (0: all were already).
	Reencrypted int `json:"reencrypted"`
	// SecretsKeyID names the secrets key that now encrypts every key.
	SecretsKeyID string `json:"secrets_key_id"`
}

// exec encrypts every stored key that the current secrets key does not
// encrypt yet (under the previous one, or in plain text) with the current
// one.
func (c *keysReencrypt) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	n, err := newOAuthStore(db, d).WithSealer(c.sealer).ReencryptKeys(ctx)
	if err != nil {
		return nil, explainSealing(err)
	}
	return reencrypted{Reencrypted: n, SecretsKeyID: c.sealer.KeyID()}, nil
}

// keysRotate is "waybill admin keys rotate [--jwt-alg ALG] [--secrets-key
// KEY] [--previous-secrets-key KEY]": one step of the rotation of the
// signing key kept in the database (see sqlstore.Store.RotateSigningKey).
// The first run stages a new key: once every replica has restarted, each
// verifies and publishes it. The second run promotes it: once every
// replica has restarted again, it signs, and the key before still verifies
// until the next rotation. Rotate again only an hour (the access token
// lifetime) after the last replica restarted.
type keysRotate struct {
	alg, secretsKey, previous string
	sealer                    *oauth.Sealer
}

// flags declares --jwt-alg, --secrets-key and --previous-secrets-key, as
// serve has them.
func (c *keysRotate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.alg, "jwt-alg", "", "`algorithm` of the key to rotate, serve's --jwt-alg: HS256 (the default), ES256 or EdDSA")
	fs.StringVar(&c.secretsKey, "secrets-key", "", "the secrets `key` that encrypts the signing keys, serve's --secrets-key")
	fs.StringVar(&c.previous, "previous-secrets-key", "", "serve's --previous-secrets-key, during a rotation of the secrets key")
}

// check takes a known algorithm and parses the secrets keys.
func (c *keysRotate) check() error {
	switch c.alg {
	case "":
		c.alg = bearer.HS256
	case bearer.HS256, bearer.ES256, bearer.EdDSA:
	default:
		return fmt.Errorf("--jwt-alg must be HS256, ES256 or EdDSA, not %q", c.alg)
	}
	sealer, err := newSealer(c.secretsKey, c.previous)
	c.sealer = sealer
	return err
}

// exec takes the next step of the rotation and prints the
// sqlstore.KeyRotation.
func (c *keysRotate) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	rotation, err := newOAuthStore(db, d).WithSealer(c.sealer).RotateSigningKey(ctx, c.alg)
	if err != nil {
		return nil, explainSealing(err)
	}
	return rotation, nil
}
