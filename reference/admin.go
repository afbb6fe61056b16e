package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/password"
	"github.com/waybillhq/waybill/query"
)

// minPasswordLen is the least number of characters of a user's password.
const minPasswordLen = 8

// adminCmd is one command under "waybill admin": its flags and its work.
// runAdmin parses the flags, calls check, opens and migrates the database,
// calls exec and prints what exec returns as one JSON object.
type adminCmd interface {
	// flags declares the command's flags on fs, bound to the command's
	// fields. --database-url is declared by runAdmin.
	flags(fs *flag.FlagSet)
	// check validates the flags before any database is opened.
	check() error
	// exec does the work on a migrated database of the dialect and
	// returns the object to print.
	exec(ctx context.Context, db *sql.DB, dialect query.Dialect) (any, error)
}

// adminCommand is an entry of the table of admin commands.
type adminCommand struct {
	// words are the words after "admin": "org create".
	words string
	// synopsis lists the command's flags for the help.
	synopsis string
	// newCmd returns the command with its flags unset.
	newCmd func() adminCmd
}

// adminCommands is the table of admin commands. A new command is a type
// that implements adminCmd and one line here.
var adminCommands = []adminCommand{
	{"org create", "--name NAME", func() adminCmd { return &orgCreate{} }},
	{"branch create", "--org ORG --name NAME", func() adminCmd { return &branchCreate{} }},
	{"user create", "--email E --password P --org ORG [--org ...] [--admin]", func() adminCmd { return &userCreate{} }},
	{"user remove", "--id USER --org ORG", func() adminCmd { return &userRemove{} }},
	{"user delete", "--id USER", func() adminCmd { return &userDelete{} }},
	{"app create", `--org ORG --name NAME --scopes "s1 s2" [--branches B1,B2 | --all-branches | --public] [--redirect-uri URI ...]`, func() adminCmd { return &appCreate{} }},
	{"app rotate-secret", "--client-id ID [--revoke-tokens]", func() adminCmd { return &appRotateSecret{} }},
	{"keys reencrypt", "--secrets-key KEY [--previous-secrets-key KEY]", func() adminCmd { return &keysReencrypt{} }},
	{"purge", "[--refresh-max-age D] [--event-retention D] [--audit-retention D]", func() adminCmd { return &purgeCmd{} }},
	{"keys rotate", "[--jwt-alg ALG] [--secrets-key KEY] [--previous-secrets-key KEY]", func() adminCmd { return &keysRotate{} }},
	{"org list", "", func() adminCmd { return &orgList{} }},
	{"branch list", "--org ORG", func() adminCmd { return &branchList{} }},
	{"user list", "--org ORG", func() adminCmd { return &userList{} }},
	{"user set-password", "(--id USER | --email E) --password P", func() adminCmd { return &userSetPassword{} }},
	{"app list", "--org ORG", func() adminCmd { return &appList{} }},
	{"app connected", "--org ORG", func() adminCmd { return &appConnected{} }},
	{"app disconnect", "--org ORG --client-id ID", func() adminCmd { return &appDisconnect{} }},
	{"app set-quota", "--client-id ID (--rest-per-minute N | --default)", func() adminCmd { return &appSetQuota{} }},
	{"registration-token create", "[--expires 24h]", func() adminCmd { return &registrationTokenCreate{} }},
	{"audit", "--org ORG", func() adminCmd { return &auditList{} }},
}

// runAdmin is the admin command: "waybill admin GROUP ACTION [flags]", or
// "waybill admin ACTION [flags]" for a command of one word.
func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 1 && isHelp(args[0]) {
		printAdminUsage(stdout, "")
		return nil
	}
	if len(args) == 2 && isHelp(args[1]) && adminGroup(args[0]) {
		printAdminUsage(stdout, args[0])
		return nil
	}
	n := 2 // the words of a command: two, or one for a command of one word
	if len(args) > 0 && slices.ContainsFunc(adminCommands, func(c adminCommand) bool { return c.words == args[0] }) {
		n = 1
	}
	if len(args) < n {
		if len(args) == 1 && adminGroup(args[0]) {
			return fmt.Errorf("admin %s: want one of: %s (see \"waybill admin %s -h\")", args[0], adminCommandList(args[0]), args[0])
		}
		return fmt.Errorf("admin: want a command: %s (see \"waybill admin -h\")", adminCommandList(""))
	}
	words := strings.Join(args[:n], " ")
	i := slices.IndexFunc(adminCommands, func(c adminCommand) bool { return c.words == words })
	if i < 0 {
		return fmt.Errorf("admin: unknown command %q; commands: %s", words, adminCommandList(""))
	}

	cmd := adminCommands[i].newCmd()
	fs := flag.NewFlagSet("admin "+words, flag.ContinueOnError)
	var databaseURL string
	databaseURLFlag(fs, &databaseURL)
	cmd.flags(fs)
	// Only the settings of the installation come from the environment,
	// never the values of one record: WAYBILL_NAME must not name every
	// organization, branch and app alike.
	if err := parseFlags(fs, args[n:], getenv, stdout, adminEnvFlags...); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := cmd.check(); err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if w, ok := cmd.(warner); ok {
		for _, warning := range w.warnings() {
			fmt.Fprintf(stderr, "waybill %s: warning: %s\n", fs.Name(), warning)
		}
	}

	db, dialect, _, err := openAndMigrate(ctx, databaseURL, defaultDBMaxConns)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	defer func() { _ = db.Close() }()
	out, err := cmd.exec(audit.NewContext(ctx, cliActor), db, dialect)
	if e, ok := apierrors.As(err); ok {
		// A person reads this: the sentence, not the API's code.
		return fmt.Errorf("%s: %s", fs.Name(), e.Description)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if lines, ok := out.(jsonLines); ok {
		for _, line := range lines {
			if err := printJSON(stdout, line); err != nil {
				return err
			}
		}
		return nil
	}
	return printJSON(stdout, out)
}

// adminEnvFlags are the flags of admin commands that take their WAYBILL_*
// variable when not given: settings of the installation, not values of a
// record.
var adminEnvFlags = []string{"database-url", "secrets-key", "previous-secrets-key", "refresh-max-age", "jwt-alg"}

// warner is an admin command that may warn, after check, about flags that
// are valid but probably not what was meant. runAdmin prints each warning
// on stderr and goes on.
type warner interface {
	warnings() []string
}

// jsonLines is the output of a list command: one JSON object a line.
type jsonLines []any

// adminGroup reports whether word is the first word of admin commands of
// two words ("org", "app", ...).
func adminGroup(word string) bool {
	return slices.ContainsFunc(adminCommands, func(c adminCommand) bool {
		return strings.HasPrefix(c.words, word+" ")
	})
}

// runMigrate is the migrate command: it applies the migrations that the
// database has not seen yet and prints {"applied": [versions]}.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var databaseURL string
	databaseURLFlag(fs, &databaseURL)
	if err := parseFlags(fs, args, getenv, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	db, _, applied, err := openAndMigrate(ctx, databaseURL, defaultDBMaxConns)
	if err != nil {
		return err // "open database ..." or "migrate: ..." already
	}
	defer func() { _ = db.Close() }()
	if applied == nil {
		applied = []int{} // {"applied":[]}, not null
	}
	return printJSON(stdout, struct {
		Applied []int `json:"applied"`
	}{applied})
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// adminCommandList returns the admin commands of group ("org", say; all
// when empty), comma-separated.
func adminCommandList(group string) string {
	var words []string
	for _, c := range adminCommands {
		if group == "" || strings.HasPrefix(c.words, group+" ") {
			words = append(words, c.words)
		}
	}
	return strings.Join(words, ", ")
}

// printAdminUsage writes the admin commands of group (all when empty) and
// their synopses to w.
func printAdminUsage(w io.Writer, group string) {
	fmt.Fprintln(w, "Usage: waybill admin <command> [flags]\n\nCommands:")
	for _, c := range adminCommands {
		if group == "" || strings.HasPrefix(c.words, group+" ") {
			fmt.Fprintln(w, "  "+strings.TrimSpace("waybill admin "+c.words+" "+c.synopsis))
		}
	}
	fmt.Fprintln(w, "\nEach takes --database-url (default "+defaultDatabaseURL+", env WAYBILL_DATABASE_URL) and prints")
	fmt.Fprintln(w, "one JSON object; the list commands print one a line. \"waybill admin <command> -h\" lists its flags.")
}

// printJSON writes v to w as one line of JSON.
func printJSON(w io.Writer, v any) error {
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return fmt.Errorf("print result: %w", err)
	}
	return nil
}

// created is the output of the create commands.
type created struct {
	ID string `json:"id"`
}

// orgCreate is "waybill admin org create --name NAME".
type orgCreate struct {
	name string
}

// flags declares --name.
func (c *orgCreate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", "", "`name` of the organization (required)")
}

// check trims the name and requires it.
func (c *orgCreate) check() error {
	c.name = strings.TrimSpace(c.name)
	if c.name == "" {
		return errors.New("--name is required")
	}
	return nil
}

// exec inserts the organization and its master data in one transaction.
func (c *orgCreate) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	id := newID()
	err := inTx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO organizations (id, name) VALUES ($1, $2)", id, c.name); err != nil {
			return fmt.Errorf("insert organization: %w", err)
		}
		return seedMasterData(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	return created{ID: id}, nil
}

// branchCreate is "waybill admin branch create --org ORG --name NAME".
type branchCreate struct {
	org, name string
}

// flags declares --org and --name.
func (c *branchCreate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization that owns the branch (required)")
	fs.StringVar(&c.name, "name", "", "`name` of the branch (required)")
}

// check trims the name and requires it, and requires --org to be a UUID.
func (c *branchCreate) check() error {
	c.name = strings.TrimSpace(c.name)
	if c.name == "" {
		return errors.New("--name is required")
	}
	org, err := parseOrgID(c.org)
	c.org = org
	return err
}

// exec inserts the branch after checking that its organization exists.
func (c *branchCreate) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	id := newID()
	_, err := db.ExecContext(ctx, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, $3)", id, c.org, c.name)
	if err != nil {
		return nil, fmt.Errorf("insert branch: %w", err)
	}
	return created{ID: id}, nil
}

// userCreate is "waybill admin user create --email E --password P --org ORG
// [--org ...] [--admin]".
type userCreate struct {
	email, password string
	orgs            stringList
	admin           bool
}

// flags declares --email, --password, the repeatable --org and --admin.
func (c *userCreate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.email, "email", "", "`email` of the user, stored in lower case (required)")
	fs.StringVar(&c.password, "password", "", "`password` of the user, at least 8 characters (required)")
	fs.Var(&c.orgs, "org", "`id` of an organization the user joins (required; repeat for several)")
	fs.BoolVar(&c.admin, "admin", false, "make the user an admin of every --org")
}

// check normalizes the email and requires it to be an address, requires a
// password of minPasswordLen characters, and at least one --org, each a
// UUID; repeated organizations count once.
func (c *userCreate) check() error {
	c.email = normalizeEmail(c.email)
	switch {
	case c.email == "":
		return errors.New("--email is required")
	case !validEmail(c.email):
		return fmt.Errorf("--email %q is not an email address", c.email)
	case c.password == "":
		return errors.New("--password is required")
	case utf8.RuneCountInString(c.password) < minPasswordLen:
		return fmt.Errorf("--password must have at least %d characters", minPasswordLen)
	case len(c.orgs) == 0:
		return errors.New("--org is required")
	}
	var orgs stringList
	for _, o := range c.orgs {
		id, err := parseOrgID(o)
		if err != nil {
			return err
		}
		if !slices.Contains(orgs, id) {
			orgs = append(orgs, id)
		}
	}
	c.orgs = orgs
	return nil
}

// exec inserts the user and their memberships in one transaction, after
// checking that the email is free and every organization exists.
func (c *userCreate) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	// Friendly checks first, before the costly hash; the constraints of the
	// tables still decide when another process races this one.
	if err := requireEmailFree(ctx, db, c.email); err != nil {
		return nil, err
	}
	for _, org := range c.orgs {
		if err := requireOrganization(ctx, db, org); err != nil {
			return nil, err
		}
	}
	hash, err := password.Hash(c.password)
	if err != nil {
		return nil, err
	}
	id := newID()
	err = inTx(ctx, db, func(tx *sql.Tx) error {
		if err := insertUser(ctx, tx, id, c.email, hash, c.orgs, c.admin); err != nil {
			return err
		}
		for _, org := range c.orgs {
			if err := appendAudit(ctx, tx, d, org, audit.MemberAdded, userTarget(id), map[string]any{"email": c.email, "admin": c.admin}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return created{ID: id}, nil
}

// insertUser inserts a user and their memberships of orgs in tx.
func insertUser(ctx context.Context, tx *sql.Tx, id, email, hash string, orgs []string, admin bool) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)", id, email, hash)
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	for _, org := range orgs {
		_, err := tx.ExecContext(ctx, "INSERT INTO memberships (user_id, organization_id, admin) VALUES ($1, $2, $3)", id, org, admin)
		if err != nil {
			return fmt.Errorf("insert membership of organization %s: %w", org, err)
		}
	}
	return nil
}

// inTx runs f in a transaction of db and commits when f succeeds.
func inTx(ctx context.Context, db *sql.DB, f func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// requireOrganization returns an error unless the organization with id
// exists.
func requireOrganization(ctx context.Context, db *sql.DB, id string) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM organizations WHERE id = $1", id).Scan(&n); err != nil {
		return fmt.Errorf("look up organization %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("organization %s not found", id)
	}
	return nil
}

// requireEmailFree returns an error when a user has email already.
func requireEmailFree(ctx context.Context, db *sql.DB, email string) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM users WHERE email = $1", email).Scan(&n); err != nil {
		return fmt.Errorf("look up user %s: %w", email, err)
	}
	if n > 0 {
		return fmt.Errorf("a user with email %s exists already", email)
	}
	return nil
}

// parseOrgID returns the canonical form of the organization id given to
// --org.
func parseOrgID(s string) (string, error) {
	if s == "" {
		return "", errors.New("--org is required")
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--org %q is not an organization id (a UUID)", s)
	}
	return id.String(), nil
}

// validEmail reports whether s is a bare email address (no display name,
// no angle brackets).
func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// newID returns a new record id: a UUID version 7, whose time-ordered
// prefix keeps inserts local in the primary key's index.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// stringList is a flag.Value that collects every value of a repeated flag.
type stringList []string

// String returns the values, comma-separated.
func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Set appends v.
func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
