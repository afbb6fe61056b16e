// Package resourcetest is the conformance suite of a declared resource: a
// service proves that a resource of its registry behaves as the API
// promises by calling [TestResource] from its own tests, as
// oauth/oauthtest does for token stores.
//
// The suite checks, over HTTP against the registry's routes, the JSON
// envelopes ({"data", "pagination", "version"}), the whitelists (an
// unknown or unlisted filter or sort field is 400 invalid_request, a field
// the resource does not take on create or update is 400 invalid_create or
// invalid_update), the tenant columns (organization_id and branch_id are
// never writable, filterable or sortable), tenant isolation on every
// method (another organization's and another branch's records are never
// listed, read, changed or deleted: 404, and the record is unchanged), 405
// with an Allow header for the methods a resource does not serve, the batch
// writes (a batch with a refused item writes nothing and names every
// refused item; the bounds; a batch update reaches no other tenant's
// record; an upsert item needs its external_id), the exports (NDJSON and
// CSV of every record of the tenant and of no other, pages refused), and
// the resource's paths and schema in the registry's OpenAPI document, and,
// when the registry keeps a History, the record's history route of a
// resource that is not read-only (its
// envelope, tenant isolation, bad parameters, its path in the document).
//
// The caller gives the registry, a key set that its verifier accepts, the
// tenants to work in, and a function that returns a record of a tenant;
// the suite signs its own authorization-code tokens with the key set.
package resourcetest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// Tenant names where a record lives: an organization, and a branch of it
// for branch-scoped resources ("" for organization-scoped ones).
type Tenant struct {
	OrganizationID string
	BranchID       string
}

// Config is what the suite needs from the service under test.
type Config struct {
	// Registry holds the resources under test. Its Verifier must accept
	// tokens signed with Keys by Issuer, and its Branches must know the
	// branches below.
	Registry *resource.Registry
	// Handler serves the registry's routes; nil means the registry
	// mounted on a new http.ServeMux.
	Handler http.Handler
	// Keys and Issuer sign the suite's tokens.
	Keys   *bearer.KeySet
	Issuer string
	// Organization owns Branch and SiblingBranch; OtherOrganization owns
	// OtherBranch. All five must exist.
	Organization, Branch, SiblingBranch string
	OtherOrganization, OtherBranch      string
	// Record returns the id of a record of the resource in the tenant,
	// creating one if need be (with SQL, or with a POST of the service's
	// own). The suite asks for records of Organization (with Branch for
	// branch and branch-or-null resources) and of OtherOrganization (with
	// OtherBranch).
	Record func(t testing.TB, r *resource.Resource, in Tenant) string
}

// check is one part of the suite.
type check struct {
	name string
	run  func(t testing.TB, s *suite)
}

// checks are the parts of the suite, in the order they run.
var checks = []check{
	{"envelopes", checkEnvelopes},
	{"whitelists", checkWhitelists},
	{"tenant columns", checkTenantColumns},
	{"isolation", checkIsolation},
	{"methods", checkMethods},
	{"batch", checkBatch},
	{"export", checkExport},
	{"openapi", checkOpenAPI},
	{"history", checkHistory},
}

// TestResource runs the conformance suite on the registered resource r,
// one subtest per part. The subtests run one after another; they create
// records only through Config.Record, and change or delete none: the batch
// writes they send are refused, or change nothing.
func TestResource(t *testing.T, c Config, r *resource.Resource) {
	t.Helper()
	s := newSuite(t, c, r)
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) { ch.run(t, s) })
	}
}

// suite is the state of one run.
type suite struct {
	Config
	r       *resource.Resource
	handler http.Handler
	prefix  string
}

func newSuite(t testing.TB, c Config, r *resource.Resource) *suite {
	t.Helper()
	require.NotNil(t, c.Registry, "resourcetest: Config.Registry is required")
	require.NotNil(t, c.Keys, "resourcetest: Config.Keys is required")
	require.NotNil(t, c.Record, "resourcetest: Config.Record is required")
	require.Same(t, r, c.Registry.Resource(r.Name), "resourcetest: resource %s is not registered", r.Name)
	s := &suite{Config: c, r: r, handler: c.Handler, prefix: "/v1"}
	if s.handler == nil {
		mux := http.NewServeMux()
		c.Registry.Mount(mux)
		s.handler = mux
	}
	if len(c.Registry.Prefixes) > 0 {
		s.prefix = c.Registry.Prefixes[0]
	}
	return s
}

// home and away are the tenant of the suite's own records and the tenants
// that must never see them: another organization, and for branch-scoped
// resources another branch of the same organization.
func (s *suite) home() Tenant {
	if s.r.ScopeType == tenancy.Organization {
		return Tenant{OrganizationID: s.Organization}
	}
	return Tenant{OrganizationID: s.Organization, BranchID: s.Branch}
}

func (s *suite) away() map[string]Tenant {
	if s.r.ScopeType == tenancy.Organization {
		return map[string]Tenant{"another organization": {OrganizationID: s.OtherOrganization}}
	}
	return map[string]Tenant{
		"another organization": {OrganizationID: s.OtherOrganization, BranchID: s.OtherBranch},
		"another branch":       {OrganizationID: s.Organization, BranchID: s.SiblingBranch},
	}
}

// scopeID is the {scopeId} of a tenant's paths.
func scopeID(in Tenant) string {
	if in.BranchID != "" {
		return in.BranchID
	}
	return in.OrganizationID
}

func (s *suite) collection(in Tenant) string { return s.prefix + "/" + scopeID(in) + "/" + s.r.Name }
func (s *suite) item(in Tenant, id string) string {
	return s.collection(in) + "/" + id
}

// token returns an authorization-code token of the tenant's organization
// with the resource's read and write scopes: it may use every branch.
func (s *suite) token(t testing.TB, in Tenant) string {
	t.Helper()
	now := time.Now()
	tok, err := s.Keys.Sign(&bearer.Claims{
		Issuer: s.Issuer, Subject: "resourcetest-user", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: rand.Text(),
		OrganizationID: in.OrganizationID, ClientID: "resourcetest",
		Scopes: []string{s.r.ReadScope(), s.r.WriteScope()},
	})
	require.NoError(t, err)
	return tok
}

// response is one answer of the handler.
type response struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

// errorCode returns the "error" member of an error body.
func (r response) errorCode() string {
	s, _ := r.body["error"].(string)
	return s
}

// do sends a request as the tenant; body, if not nil, is sent as JSON.
func (s *suite) do(t testing.TB, as Tenant, method, target string, body any) response {
	t.Helper()
	return s.doWith(t, as, method, target, body, nil)
}

// doWith is do with more request headers.
func (s *suite) doWith(t testing.TB, as Tenant, method, target string, body any, header map[string]string) response {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Header.Set("Authorization", "Bearer "+s.token(t, as))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	out := response{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if strings.TrimSpace(out.raw) != "" && method != http.MethodHead {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out.body), "%s %s: the body is not a JSON object: %s", method, target, out.raw)
	}
	return out
}

// record returns a record of the tenant, from Config.Record.
func (s *suite) record(t testing.TB, in Tenant) string {
	t.Helper()
	id := s.Record(t, s.r, in)
	require.NotEmpty(t, id, "Config.Record returned no id for %s of %+v", s.r.Name, in)
	return id
}

// byID is the list query that selects one record.
func byID(id string) string { return "?filter=" + url.QueryEscape("id:eq:"+id) }

// recordFields are the members every record of the resource carries.
func (s *suite) recordFields() []string {
	var names []string
	for _, f := range s.r.AllFields() {
		names = append(names, f.Name)
	}
	names = append(names, resource.OrganizationColumn)
	if s.r.ScopeType != tenancy.Organization {
		names = append(names, resource.BranchColumn)
	}
	slices.Sort(names)
	return names
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkRecord checks one record of a response against the declaration.
func (s *suite) checkRecord(t testing.TB, v any, id string, in Tenant) {
	t.Helper()
	rec, ok := v.(map[string]any)
	require.True(t, ok, "a record is a JSON object, not %T", v)
	assert.Equal(t, s.recordFields(), keys(rec), "the members of a record")
	assert.Equal(t, id, rec["id"])
	assert.Equal(t, in.OrganizationID, rec[resource.OrganizationColumn])
	if s.r.ScopeType != tenancy.Organization {
		assert.Equal(t, in.BranchID, rec[resource.BranchColumn])
	}
}

func checkEnvelopes(t testing.TB, s *suite) {
	in := s.home()
	id := s.record(t, in)

	list := s.do(t, in, http.MethodGet, s.collection(in)+byID(id), nil)
	require.Equal(t, http.StatusOK, list.code, list.raw)
	assert.Equal(t, []string{"data", "pagination", "version"}, keys(list.body), "the members of a list envelope")
	assert.Equal(t, resource.Version, list.body["version"])
	assert.Equal(t, "application/json", list.header.Get("Content-Type"))
	page, ok := list.body["pagination"].(map[string]any)
	require.True(t, ok, "pagination is an object: %s", list.raw)
	assert.Equal(t, []string{"limit", "next_cursor", "offset", "total"}, keys(page), "the members of pagination")
	assert.Nil(t, page["next_cursor"], "a page of one record is the last: %s", list.raw)
	assert.EqualValues(t, 1, page["total"], "a filter on the record's id finds it: %s", list.raw)
	assert.EqualValues(t, 0, page["offset"])
	data, ok := list.body["data"].([]any)
	require.True(t, ok, "data of a list is an array: %s", list.raw)
	require.Len(t, data, 1, list.raw)
	s.checkRecord(t, data[0], id, in)

	limited := s.do(t, in, http.MethodGet, s.collection(in)+"?limit=1&offset=0", nil)
	require.Equal(t, http.StatusOK, limited.code, limited.raw)
	assert.EqualValues(t, 1, limited.body["pagination"].(map[string]any)["limit"])

	get := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	require.Equal(t, http.StatusOK, get.code, get.raw)
	assert.Equal(t, []string{"data", "version"}, keys(get.body), "the members of an item envelope")
	assert.Equal(t, resource.Version, get.body["version"])
	s.checkRecord(t, get.body["data"], id, in)

	missing := s.do(t, in, http.MethodGet, s.item(in, "00000000-0000-4000-8000-000000000000"), nil)
	assert.Equal(t, http.StatusNotFound, missing.code, missing.raw)
	assert.Equal(t, "not_found", missing.errorCode())
	assert.Equal(t, []string{"error", "error_description"}, keys(missing.body), "the members of an error")
	notUUID := s.do(t, in, http.MethodGet, s.item(in, "not-a-uuid"), nil)
	assert.Equal(t, http.StatusNotFound, notUUID.code, notUUID.raw)
}

// assertRefused checks a refusal's status and error code.
func assertRefused(t testing.TB, res response, status int, code, what string) {
	t.Helper()
	assert.Equal(t, status, res.code, "%s: %s", what, res.raw)
	assert.Equal(t, code, res.errorCode(), "%s: %s", what, res.raw)
}

func checkWhitelists(t testing.TB, s *suite) {
	in := s.home()
	id := s.record(t, in)
	list := func(param, value string) response {
		return s.do(t, in, http.MethodGet, s.collection(in)+"?"+param+"="+url.QueryEscape(value), nil)
	}
	assertRefused(t, list("filter", "no_such_field:eq:x"), http.StatusBadRequest, "invalid_request", "a filter on an unknown field")
	assertRefused(t, list("sort", "no_such_field:asc"), http.StatusBadRequest, "invalid_request", "a sort on an unknown field")
	unknown := list("no_such_parameter", "1")
	assertRefused(t, unknown, http.StatusBadRequest, "invalid_request", "an unknown parameter")
	assert.Contains(t, unknown.raw, "sort, filter and fields", "an unknown parameter's error names every parameter a list takes")
	for _, f := range s.r.AllFields() {
		if !f.Filterable {
			assertRefused(t, list("filter", f.Name+":eq:x"), http.StatusBadRequest, "invalid_request", "a filter on "+f.Name+", which is not filterable")
		}
		if !f.Sortable {
			assertRefused(t, list("sort", f.Name+":asc"), http.StatusBadRequest, "invalid_request", "a sort on "+f.Name+", which is not sortable")
		} else {
			res := list("sort", f.Name+":desc")
			assert.Equal(t, http.StatusOK, res.code, "a sort on %s, which is sortable: %s", f.Name, res.raw)
		}
	}
	if s.r.ReadOnly {
		return
	}
	create := func(body map[string]any) response { return s.do(t, in, http.MethodPost, s.collection(in), body) }
	update := func(body map[string]any) response { return s.do(t, in, http.MethodPatch, s.item(in, id), body) }
	assertRefused(t, create(map[string]any{"no_such_field": "x"}), http.StatusBadRequest, "invalid_create", "a create with an unknown field")
	assertRefused(t, update(map[string]any{"no_such_field": "x"}), http.StatusBadRequest, "invalid_update", "an update with an unknown field")
	for _, f := range s.r.AllFields() {
		if !f.Create {
			assertRefused(t, create(map[string]any{f.Name: nil}), http.StatusBadRequest, "invalid_create", "a create with "+f.Name+", which is not writable on create")
		}
		if !f.Update {
			assertRefused(t, update(map[string]any{f.Name: nil}), http.StatusBadRequest, "invalid_update", "an update with "+f.Name+", which is not writable on update")
		}
	}
}

func checkTenantColumns(t testing.TB, s *suite) {
	in := s.home()
	id := s.record(t, in)
	before := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	require.Equal(t, http.StatusOK, before.code, before.raw)
	other := s.away()["another organization"]
	for _, col := range []string{resource.OrganizationColumn, resource.BranchColumn} {
		for _, value := range []string{other.OrganizationID, other.BranchID, s.SiblingBranch} {
			if value == "" {
				continue
			}
			filter := s.do(t, in, http.MethodGet, s.collection(in)+"?filter="+url.QueryEscape(col+":eq:"+value), nil)
			assertRefused(t, filter, http.StatusBadRequest, "invalid_request", "a filter on "+col)
		}
		sort := s.do(t, in, http.MethodGet, s.collection(in)+"?sort="+url.QueryEscape(col+":asc"), nil)
		assertRefused(t, sort, http.StatusBadRequest, "invalid_request", "a sort on "+col)
		if s.r.ReadOnly {
			continue
		}
		for _, value := range []any{other.OrganizationID, other.BranchID, nil} {
			body := map[string]any{col: value}
			assertRefused(t, s.do(t, in, http.MethodPost, s.collection(in), body), http.StatusBadRequest, "invalid_create", "a create that sends "+col)
			assertRefused(t, s.do(t, in, http.MethodPatch, s.item(in, id), body), http.StatusBadRequest, "invalid_update", "an update that sends "+col)
		}
	}
	after := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	assert.Equal(t, before.body, after.body, "a refused write changed the record")
}

func checkIsolation(t testing.TB, s *suite) {
	in := s.home()
	id := s.record(t, in)
	// A record of the other organization, so that its lists are not empty
	// by accident.
	theirs := s.record(t, s.away()["another organization"])
	before := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	require.Equal(t, http.StatusOK, before.code, before.raw)
	for name, away := range s.away() {
		list := s.do(t, away, http.MethodGet, s.collection(away)+byID(id), nil)
		require.Equal(t, http.StatusOK, list.code, "%s lists: %s", name, list.raw)
		assert.Empty(t, list.body["data"], "%s lists the record: %s", name, list.raw)
		assert.EqualValues(t, 0, list.body["pagination"].(map[string]any)["total"], "%s counts the record: %s", name, list.raw)
		all := s.do(t, away, http.MethodGet, s.collection(away)+"?limit=1000", nil)
		require.Equal(t, http.StatusOK, all.code, "%s lists: %s", name, all.raw)
		assert.NotContains(t, all.raw, id, "%s lists the record", name)

		assertRefused(t, s.do(t, away, http.MethodGet, s.item(away, id), nil), http.StatusNotFound, "not_found", name+" reads the record")
		assertRefused(t, s.do(t, away, http.MethodHead, s.item(away, id), nil), http.StatusNotFound, "", name+" reads the record with HEAD")
		if !s.r.ReadOnly {
			assertRefused(t, s.do(t, away, http.MethodPatch, s.item(away, id), map[string]any{}), http.StatusNotFound, "not_found", name+" updates the record")
			assertRefused(t, s.do(t, away, http.MethodDelete, s.item(away, id), nil), http.StatusNotFound, "not_found", name+" deletes the record")
		}
	}
	// The other organization's own record stays its own, and this tenant's
	// is unchanged.
	assertRefused(t, s.do(t, in, http.MethodGet, s.item(in, theirs), nil), http.StatusNotFound, "not_found", "the organization reads another organization's record")
	after := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	require.Equal(t, http.StatusOK, after.code, "the record is gone: %s", after.raw)
	assert.Equal(t, before.body, after.body, "another tenant changed the record")
}

func checkMethods(t testing.TB, s *suite) {
	in := s.home()
	id := s.record(t, in)
	collectionAllow, itemAllow := "GET, HEAD, POST, PATCH", "GET, HEAD, PATCH, DELETE"
	unserved := map[string][]string{"collection": {http.MethodPut, http.MethodDelete}, "item": {http.MethodPut, http.MethodPost}}
	if s.r.ReadOnly {
		collectionAllow, itemAllow = "GET, HEAD", "GET, HEAD"
		unserved["collection"] = append(unserved["collection"], http.MethodPost, http.MethodPatch)
		unserved["item"] = append(unserved["item"], http.MethodPatch, http.MethodDelete)
	}
	for _, c := range []struct {
		kind, path, allow string
	}{
		{"collection", s.collection(in), collectionAllow},
		{"item", s.item(in, id), itemAllow},
	} {
		for _, m := range unserved[c.kind] {
			res := s.do(t, in, m, c.path, map[string]any{})
			assertRefused(t, res, http.StatusMethodNotAllowed, "method_not_allowed", m+" on the "+c.kind)
			assert.Equal(t, c.allow, res.header.Get("Allow"), "the Allow header of %s on the %s", m, c.kind)
		}
		head := s.do(t, in, http.MethodHead, c.path, nil)
		assert.Equal(t, http.StatusOK, head.code, "HEAD on the %s", c.kind)
	}
	after := s.do(t, in, http.MethodGet, s.item(in, id), nil)
	assert.Equal(t, http.StatusOK, after.code, "a refused method deleted the record: %s", after.raw)
}

func checkOpenAPI(t testing.TB, s *suite) {
	raw, err := s.Registry.OpenAPI(resource.OpenAPIInfo{})
	require.NoError(t, err)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	collection := s.prefix + "/{scopeId}/" + s.r.Name
	item := collection + "/{id}"
	want := map[string][]string{collection: {"get", "post"}, item: {"get", "patch", "delete"}}
	if s.Registry.History != nil && !s.r.ReadOnly {
		want[item+"/history"] = []string{"get"}
	}
	for path, methods := range want {
		ops, ok := doc.Paths[path]
		if !assert.True(t, ok, "the OpenAPI document has no path %s", path) {
			continue
		}
		for _, m := range methods {
			_, has := ops[m]
			served := m == "get" || !s.r.ReadOnly
			assert.Equal(t, served, has, "the OpenAPI document's %s of %s", m, path)
		}
	}
	// The record schema: the one whose properties are every member of a
	// record.
	fields := s.recordFields()
	found := false
	for _, schema := range doc.Components.Schemas {
		if slices.Equal(fields, keys(schema.Properties)) {
			found = true
			break
		}
	}
	assert.True(t, found, "the OpenAPI document has no schema with the members of a record of %s: %v", s.r.Name, fields)
}

// checkHistory checks the history route of a registry with a History: the
// record's history is a page of entries, each of its own fields, oldest
// first; other tenants, and ids of no record, get 404; bad parameters 400;
// writes 405.
func checkHistory(t testing.TB, s *suite) {
	if s.Registry.History == nil || s.r.ReadOnly {
		return // a read-only resource is never written: it has no history
	}
	in := s.home()
	id := s.record(t, in)
	res := s.do(t, in, http.MethodGet, s.item(in, id)+"/history", nil)
	require.Equal(t, http.StatusOK, res.code, res.raw)
	assert.Equal(t, resource.Version, res.body["version"], res.raw)
	assert.Contains(t, res.body, "next_cursor", res.raw)
	entries, ok := res.body["data"].([]any)
	require.True(t, ok, "the history's data is an array: %s", res.raw)
	fields := map[string]bool{}
	for _, f := range s.r.AllFields() {
		fields[f.Name] = true
	}
	for _, e := range entries {
		entry := e.(map[string]any)
		assert.ElementsMatch(t, []string{"id", "type", "time", "clientid", "userid", "changed", "before", "after"}, keys(entry), "an entry's members")
		assert.True(t, strings.HasPrefix(entry["type"].(string), resource.Singular(s.r.Name)+"."), "an entry's type: %v", entry["type"])
		changed := map[string]bool{}
		for _, name := range entry["changed"].([]any) {
			assert.True(t, fields[name.(string)], "changed names %v, not a field of %s", name, s.r.Name)
			changed[name.(string)] = true
		}
		for _, side := range []string{"before", "after"} {
			for name := range entry[side].(map[string]any) {
				assert.True(t, changed[name], "%s has %s, which changed does not name", side, name)
			}
		}
	}
	for name, away := range s.away() {
		assertRefused(t, s.do(t, away, http.MethodGet, s.item(away, id)+"/history", nil), http.StatusNotFound, "not_found", name+" reads the record's history")
	}
	assertRefused(t, s.do(t, in, http.MethodGet, s.item(in, "01a21842-1803-7e21-a862-fae136d49c10")+"/history", nil), http.StatusNotFound, "not_found", "the history of no record")
	for _, q := range []string{"limit=0", "limit=x", "after=nope", "offset=1"} {
		assertRefused(t, s.do(t, in, http.MethodGet, s.item(in, id)+"/history?"+q, nil), http.StatusBadRequest, "invalid_request", "a history with "+q)
	}
	post := s.do(t, in, http.MethodPost, s.item(in, id)+"/history", map[string]any{})
	assert.Equal(t, http.StatusMethodNotAllowed, post.code, post.raw)
	assert.Equal(t, "GET, HEAD", post.header.Get("Allow"))
}
