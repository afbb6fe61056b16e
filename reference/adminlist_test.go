package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWithStderr runs the waybill command args in-process with the
// environment m and returns its stdout and stderr.
func runWithStderr(t *testing.T, m map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errs bytes.Buffer
	err = run(t.Context(), args, env(m), &out, &errs)
	return out.String(), errs.String(), err
}

// jsonLinesOf parses out as one JSON object a line.
func jsonLinesOf(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "line %q", l)
		lines = append(lines, m)
	}
	return lines
}

// The list commands print one JSON object a line, sorted by name; nothing
// secret is listed.
func TestAdminLists(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			acme := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
			bolt := createID(t, "admin", "org", "create", "--name", "Bolt", "--database-url", db)
			north := createID(t, "admin", "branch", "create", "--org", acme, "--name", "North", "--database-url", db)
			south := createID(t, "admin", "branch", "create", "--org", acme, "--name", "South", "--database-url", db)
			createID(t, "admin", "branch", "create", "--org", bolt, "--name", "Elsewhere", "--database-url", db)
			user := createID(t, "admin", "user", "create", "--email", "ann@acme.test", "--password", "correct horse", "--org", acme, "--admin", "--database-url", db)
			app := adminJSON(t, "admin", "app", "create", "--org", acme, "--name", "Sync", "--scopes", "svc:orders:read", "--all-branches", "--database-url", db)

			out, err := runCommand(t, nil, "admin", "org", "list", "--database-url", db)
			require.NoError(t, err)
			assert.Equal(t, []map[string]any{{"id": acme, "name": "Acme"}, {"id": bolt, "name": "Bolt"}}, jsonLinesOf(t, out))

			out, err = runCommand(t, nil, "admin", "branch", "list", "--org", acme, "--database-url", db)
			require.NoError(t, err)
			assert.Equal(t, []map[string]any{
				{"id": north, "organization_id": acme, "name": "North"},
				{"id": south, "organization_id": acme, "name": "South"},
			}, jsonLinesOf(t, out))

			out, err = runCommand(t, nil, "admin", "user", "list", "--org", acme, "--database-url", db)
			require.NoError(t, err)
			assert.Equal(t, []map[string]any{{"id": user, "email": "ann@acme.test", "organization_id": acme, "admin": true}}, jsonLinesOf(t, out))
			assert.NotContains(t, out, "argon2", "no password hash")

			out, err = runCommand(t, nil, "admin", "app", "list", "--org", acme, "--database-url", db)
			require.NoError(t, err)
			apps := jsonLinesOf(t, out)
			require.Len(t, apps, 1)
			assert.Equal(t, app["client_id"], apps[0]["client_id"])
			assert.ElementsMatch(t, []any{north, south}, apps[0]["branch_ids"], "--all-branches: every branch of the organization")
			assert.NotContains(t, out, app["client_secret"].(string), "the secret is never listed")

			out, err = runCommand(t, nil, "admin", "app", "list", "--org", bolt, "--database-url", db)
			require.NoError(t, err)
			assert.Empty(t, out, "an organization without apps lists nothing")

			_, err = runCommand(t, nil, "admin", "branch", "list", "--database-url", db)
			assert.ErrorContains(t, err, "--org")
		})
	}
}

// "waybill admin org -h" and "waybill admin org" help with the group's
// commands instead of calling "org -h" an unknown command.
func TestAdminGroupHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"admin", "org", "-h"}, {"admin", "app", "--help"}} {
		out, err := runCommand(t, nil, args...)
		require.NoError(t, err, "%v", args)
		assert.Contains(t, out, "waybill admin "+args[1]+" create", "%v", args)
		assert.Contains(t, out, "waybill admin "+args[1]+" list", "%v", args)
		assert.NotContains(t, out, "waybill admin user create", "only the group's commands: %v", args)
	}
	_, err := runCommand(t, nil, "admin", "org")
	assert.ErrorContains(t, err, "org create, org list")
}

// Per-record values never come from the environment: WAYBILL_NAME does not
// name every organization, WAYBILL_ADMIN does not make every user an admin.
// The database URL still does.
func TestAdminRecordFlagsTakeNoEnvironment(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/w.db"
	vars := map[string]string{"WAYBILL_DATABASE_URL": db, "WAYBILL_NAME": "Leaked", "WAYBILL_ADMIN": "true", "WAYBILL_ORG": "x"}
	_, err := runCommand(t, vars, "admin", "org", "create")
	assert.ErrorContains(t, err, "--name is required", "WAYBILL_NAME is not --name")
	out, err := runCommand(t, vars, "admin", "org", "create", "--name", "Acme")
	require.NoError(t, err)
	var org map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &org))
	_, err = runCommand(t, vars, "admin", "user", "create", "--email", "bo@acme.test", "--password", "correct horse", "--org", org["id"])
	require.NoError(t, err)
	out, err = runCommand(t, vars, "admin", "user", "list", "--org", org["id"])
	require.NoError(t, err)
	assert.Equal(t, false, jsonLinesOf(t, out)[0]["admin"], "WAYBILL_ADMIN is not --admin")

	help, err := runCommand(t, nil, "admin", "org", "create", "-h")
	require.NoError(t, err)
	assert.Contains(t, help, "WAYBILL_DATABASE_URL")
	assert.NotContains(t, help, "WAYBILL_NAME", "the help names no variable that is not read")
}

// app create warns on stderr about an app that reaches no branch and about
// scopes the server does not know, splits scopes on commas, and refuses
// --branches with --all-branches.
func TestAdminAppCreateWarnings(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/w.db"
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", db)

	out, stderr, err := runWithStderr(t, nil, "admin", "app", "create", "--org", org, "--name", "Sync",
		"--scopes", "svc:orders:read,svc:quotations:read svc:custom:frobnicate", "--database-url", db)
	require.NoError(t, err)
	var app map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &app))
	assert.ElementsMatch(t, []any{"svc:orders:read", "svc:quotations:read", "svc:custom:frobnicate"}, app["scopes"], "commas separate scopes")
	assert.Contains(t, stderr, "warning: the app may use no branch")
	assert.Contains(t, stderr, `warning: scope "svc:custom:frobnicate" is not one of this server's`)
	assert.NotContains(t, stderr, `"svc:orders:read"`)

	_, stderr, err = runWithStderr(t, nil, "admin", "app", "create", "--org", org, "--name", "Sync 2",
		"--scopes", "svc:orders:read", "--branches", branch, "--database-url", db)
	require.NoError(t, err)
	assert.Empty(t, stderr, "nothing to warn about")

	_, _, err = runWithStderr(t, nil, "admin", "app", "create", "--org", org, "--name", "Sync 3",
		"--scopes", "svc:orders:read", "--branches", branch, "--all-branches", "--database-url", db)
	assert.ErrorContains(t, err, "not both")

	// An error of the token service reads as a sentence, not as an API code.
	_, _, err = runWithStderr(t, nil, "admin", "app", "create", "--org", org, "--name", "Sync 4",
		"--scopes", "svc:orders:read", "--branches", "01a20a63-0269-72bf-a77e-c15dd0f3a600", "--database-url", db)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "invalid_request")
	assert.Contains(t, err.Error(), "admin app create: branch \"01a20a63-0269-72bf-a77e-c15dd0f3a600\" is not a branch of the organization")
}

// A token of an app registered with no branches is told so at a branch.
func TestNoBranchAppIsToldWhy(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/w.db"
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", db)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--scopes", "svc:orders:read", "--database-url", db)
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
	defer func() { require.NoError(t, stop()) }()
	token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/"+branch+"/orders", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res := rlDo(t, req)
	require.Equal(t, http.StatusForbidden, res.status)
	assert.Equal(t, "insufficient_scope", res.body["error"])
	assert.Contains(t, res.body["error_description"], "registered with no branches")
}

// set-password replaces a user's password, found by id or by email.
func TestAdminSetPassword(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/w.db"
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	user := createID(t, "admin", "user", "create", "--email", "ann@acme.test", "--password", "correct horse", "--org", org, "--database-url", db)
	assert.Equal(t, user, createID(t, "admin", "user", "set-password", "--email", "Ann@Acme.test", "--password", "battery staple", "--database-url", db))

	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
	signIn := func(password string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/auth/v1/token?grant_type=password",
			strings.NewReader(`{"email":"ann@acme.test","password":"`+password+`"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		return rlDo(t, req).status
	}
	assert.Equal(t, http.StatusOK, signIn("battery staple"))
	assert.NotEqual(t, http.StatusOK, signIn("correct horse"), "the old password no longer works")
	require.NoError(t, stop())

	assert.Equal(t, user, createID(t, "admin", "user", "set-password", "--id", user, "--password", "third password", "--database-url", db))
	for _, bad := range [][]string{
		{"--password", "long enough"},
		{"--id", user, "--email", "ann@acme.test", "--password", "long enough"},
		{"--id", user, "--password", "short"},
	} {
		_, err := runCommand(t, nil, append([]string{"admin", "user", "set-password", "--database-url", db}, bad...)...)
		assert.Error(t, err, "%v", bad)
	}
	_, err := runCommand(t, nil, "admin", "user", "set-password", "--email", "nobody@acme.test", "--password", "long enough", "--database-url", db)
	assert.ErrorContains(t, err, "no user")
}
