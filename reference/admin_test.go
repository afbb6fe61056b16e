package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
)

// runCommand runs the waybill command args in-process with the environment
// m and returns its stdout. A command that fails must print nothing on
// stdout.
func runCommand(t testing.TB, m map[string]string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, env(m), &stdout, &stderr)
	if err != nil {
		assert.Empty(t, stdout.String(), "stdout of a failed command")
	}
	return stdout.String(), err
}

// createID runs a create command that must succeed and returns the id it
// prints as its one JSON object.
func createID(t testing.TB, args ...string) string {
	t.Helper()
	out, err := runCommand(t, nil, args...)
	require.NoError(t, err, "waybill %s", strings.Join(args, " "))
	require.Equal(t, 1, strings.Count(out, "\n"), "one line of output: %q", out)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 1, "only an id: %s", out)
	id, ok := got["id"].(string)
	require.True(t, ok, "id is a string: %s", out)
	parsed, err := uuid.Parse(id)
	require.NoError(t, err)
	assert.Equal(t, parsed.String(), id, "canonical form")
	return id
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			out, err := runCommand(t, nil, "migrate", "--database-url", url)
			require.NoError(t, err)
			assert.JSONEq(t, `{"applied":[1,2,3,4,5,6,7]}`, out)

			out, err = runCommand(t, map[string]string{"WAYBILL_DATABASE_URL": url}, "migrate")
			require.NoError(t, err)
			assert.JSONEq(t, `{"applied":[]}`, out, "the second migrate is a no-op; the URL comes from the environment")
		})
	}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			cmd := func(args ...string) []string { return append(args, "--database-url", url) }

			// The first command migrates the database too.
			zeta := createID(t, cmd("admin", "org", "create", "--name", "Zeta Logistics")...)
			acme := createID(t, cmd("admin", "org", "create", "--name", "  Acme Freight ")...)
			// The database URL comes from the environment; a record's values
			// never do.
			vars := map[string]string{"WAYBILL_DATABASE_URL": url, "WAYBILL_NAME": "Leaked Name"}
			_, err := runCommand(t, vars, "admin", "org", "create")
			require.ErrorContains(t, err, "--name is required", "WAYBILL_NAME is no --name")
			out, err := runCommand(t, vars, "admin", "org", "create", "--name", "Empty Org")
			require.NoError(t, err, "the database URL from the environment")
			var empty created
			require.NoError(t, json.Unmarshal([]byte(out), &empty))

			north := createID(t, cmd("admin", "branch", "create", "--org", zeta, "--name", "North")...)
			south := createID(t, cmd("admin", "branch", "create", "--org", strings.ToUpper(zeta), "--name", "South")...)
			hq := createID(t, cmd("admin", "branch", "create", "--org", acme, "--name", "Main")...)

			dispatcher := createID(t, cmd("admin", "user", "create", "--email", " Dispatcher@Example.COM ", "--password", "s3cret-pass",
				"--org", zeta, "--org", acme, "--org", strings.ToUpper(acme), "--admin")...)
			driver := createID(t, cmd("admin", "user", "create", "--email", "driver@example.com", "--password", "another-pass", "--org", zeta)...)

			db, _, err := openDB(t.Context(), url, defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			var names []string
			rows, err := db.QueryContext(t.Context(), "SELECT name FROM organizations ORDER BY name")
			require.NoError(t, err)
			for rows.Next() {
				var n string
				require.NoError(t, rows.Scan(&n))
				names = append(names, n)
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, []string{"Acme Freight", "Empty Org", "Zeta Logistics"}, names, "names are trimmed")

			t.Run("errors", func(t *testing.T) {
				unknown := newID()
				tests := []struct {
					name    string
					args    []string
					wantErr string
				}{
					{"org without name", cmd("admin", "org", "create"), "admin org create: --name is required"},
					{"org with blank name", cmd("admin", "org", "create", "--name", "  "), "admin org create: --name is required"},
					{"branch without org", cmd("admin", "branch", "create", "--name", "X"), "admin branch create: --org is required"},
					{"branch without name", cmd("admin", "branch", "create", "--org", zeta), "admin branch create: --name is required"},
					{"branch of a non-uuid org", cmd("admin", "branch", "create", "--org", "acme", "--name", "X"), `admin branch create: --org "acme" is not an organization id (a UUID)`},
					{"branch of an unknown org", cmd("admin", "branch", "create", "--org", unknown, "--name", "X"), "admin branch create: organization " + unknown + " not found"},
					{"user without email", cmd("admin", "user", "create", "--password", "long-enough", "--org", zeta), "admin user create: --email is required"},
					{"user with a bad email", cmd("admin", "user", "create", "--email", "nope", "--password", "long-enough", "--org", zeta), `--email "nope" is not an email address`},
					{"user with a display name", cmd("admin", "user", "create", "--email", "Bob <bob@example.com>", "--password", "long-enough", "--org", zeta), "is not an email address"},
					{"user without password", cmd("admin", "user", "create", "--email", "new@example.com", "--org", zeta), "admin user create: --password is required"},
					{"user with a short password", cmd("admin", "user", "create", "--email", "new@example.com", "--password", "short", "--org", zeta), "--password must have at least 8 characters"},
					{"user without org", cmd("admin", "user", "create", "--email", "new@example.com", "--password", "long-enough"), "admin user create: --org is required"},
					{"user of a non-uuid org", cmd("admin", "user", "create", "--email", "new@example.com", "--password", "long-enough", "--org", "x"), `--org "x" is not an organization id`},
					{"user of an unknown org", cmd("admin", "user", "create", "--email", "new@example.com", "--password", "long-enough", "--org", zeta, "--org", unknown), "admin user create: organization " + unknown + " not found"},
					{"duplicate email", cmd("admin", "user", "create", "--email", "DISPATCHER@example.com", "--password", "long-enough", "--org", zeta), "admin user create: a user with email dispatcher@example.com exists already"},
					{"unknown admin command", cmd("admin", "org", "delete"), `admin: unknown command "org delete"; commands: org create, branch create, user create`},
					{"admin alone", []string{"admin"}, "admin: want a command: org create, branch create, user create"},
					{"admin with a group only", []string{"admin", "org"}, "admin org: want one of: org create, org list"},
					{"unknown flag", cmd("admin", "org", "create", "--name", "X", "--bogus"), "admin org create: flag provided but not defined: -bogus"},
					{"positional argument", []string{"admin", "org", "create", "--name", "X", "extra"}, `admin org create: unexpected argument "extra"`},
					{"bad database URL", []string{"admin", "org", "create", "--name", "X", "--database-url", "mysql://db/x"}, "admin org create: database URL must start with postgres://, postgresql:// or sqlite://"},
					{"migrate with a bad database URL", []string{"migrate", "--database-url", "sqlite://"}, "sqlite:// names no file"},
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						_, err := runCommand(t, nil, tt.args...)
						require.Error(t, err)
						assert.Contains(t, err.Error(), tt.wantErr)
					})
				}

				var n int
				require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM users").Scan(&n))
				assert.Equal(t, 2, n, "no failed command made a user")
				require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM branches").Scan(&n))
				assert.Equal(t, 3, n, "no failed command made a branch")
			})

			d := newDirectory(db)
			t.Run("Authenticate", func(t *testing.T) {
				u, err := d.Authenticate(t.Context(), "DISPATCHER@example.com ", "s3cret-pass")
				require.NoError(t, err)
				assert.Equal(t, oauth.User{ID: dispatcher, Email: "dispatcher@example.com"}, u)

				_, err = d.Authenticate(t.Context(), "dispatcher@example.com", "s3cret-pasS")
				assert.ErrorIs(t, err, errBadCredentials, "wrong password")
				_, err = d.Authenticate(t.Context(), "nobody@example.com", "s3cret-pass")
				assert.ErrorIs(t, err, errBadCredentials, "unknown email")
			})
			t.Run("Memberships", func(t *testing.T) {
				got, err := d.Memberships(t.Context(), dispatcher)
				require.NoError(t, err)
				assert.Equal(t, []oauth.Membership{
					{OrganizationID: acme, Name: "Acme Freight", Admin: true},
					{OrganizationID: zeta, Name: "Zeta Logistics", Admin: true},
				}, got, "ordered by name; a repeated --org counts once")

				got, err = d.Memberships(t.Context(), strings.ToUpper(driver))
				require.NoError(t, err)
				assert.Equal(t, []oauth.Membership{{OrganizationID: zeta, Name: "Zeta Logistics", Admin: false}}, got)

				for _, id := range []string{newID(), "not-a-uuid", ""} {
					got, err := d.Memberships(t.Context(), id)
					require.NoError(t, err)
					assert.Empty(t, got, id)
				}
			})
			t.Run("Branches", func(t *testing.T) {
				got, err := d.Branches(t.Context(), zeta)
				require.NoError(t, err)
				want := []string{north, south}
				slices.Sort(want)
				assert.Equal(t, want, got)

				got, err = d.Branches(t.Context(), acme)
				require.NoError(t, err)
				assert.Equal(t, []string{hq}, got)

				for _, id := range []string{empty.ID, newID(), "not-a-uuid"} {
					got, err := d.Branches(t.Context(), id)
					require.NoError(t, err)
					assert.NotNil(t, got)
					assert.Empty(t, got, id)
				}
			})
		})
	}
}

// TestAdminChecksFlagsFirst checks that a command with bad flags fails
// before it opens, and so creates, a database.
func TestAdminChecksFlagsFirst(t *testing.T) {
	t.Parallel()
	path := testdb.SQLitePath(t)
	_, err := runCommand(t, nil, "admin", "user", "create", "--email", "a@example.com", "--database-url", "sqlite://"+path)
	require.Error(t, err)
	assert.NoFileExists(t, path)
}

func TestAdminHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"admin", "-h"}, {"admin", "help"}} {
		out, err := runCommand(t, nil, args...)
		require.NoError(t, err)
		assert.Contains(t, out, "Usage: waybill admin <command> [flags]")
		assert.Contains(t, out, "waybill admin user create --email E --password P --org ORG [--org ...] [--admin]")
	}

	out, err := runCommand(t, nil, "admin", "user", "create", "-h")
	require.NoError(t, err)
	assert.Contains(t, out, "Usage: waybill admin user create [flags]")
	assert.Contains(t, out, "--database-url URL")
	assert.Contains(t, out, "env WAYBILL_DATABASE_URL, default sqlite://waybill.db")
	assert.Contains(t, out, "--org id")

	out, err = runCommand(t, nil, "migrate", "-h")
	require.NoError(t, err)
	assert.Contains(t, out, "Usage: waybill migrate [flags]")
}

// TestStringList checks the flag.Value behind the repeatable --org.
func TestStringList(t *testing.T) {
	t.Parallel()
	var l stringList
	assert.Empty(t, l.String())
	require.NoError(t, l.Set("a"))
	require.NoError(t, l.Set("b"))
	assert.Equal(t, stringList{"a", "b"}, l)
	assert.Equal(t, "a,b", l.String())
}

// TestAdminSynopsesNameEveryFlag checks that "waybill admin -h" names every flag of
// every command (--database-url, which all take, is said once below the list), so
// that a flag is never found only by asking each command for its own help.
func TestAdminSynopsesNameEveryFlag(t *testing.T) {
	t.Parallel()
	for _, c := range adminCommands {
		t.Run(c.words, func(t *testing.T) {
			fs := flag.NewFlagSet(c.words, flag.ContinueOnError)
			c.newCmd().flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				assert.Regexp(t, `(^|[\s\[(|])--`+regexp.QuoteMeta(f.Name)+`($|[\s\]),=])`, c.synopsis, "the synopsis of %q names --%s", c.words, f.Name)
			})
		})
	}
}
