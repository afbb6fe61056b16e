package resourcetest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// checkBatch checks the batch writes of a writable resource, without
// writing: a batch with a refused item writes none of the others, every
// refused item is named, the bounds hold, a batch update never reaches
// another tenant's record, and an upsert item needs its external_id.
func checkBatch(t testing.TB, s *suite) {
	if s.r.ReadOnly {
		return // 405, which checkMethods checks
	}
	in := s.home()
	mine := s.record(t, in)
	count := func() any {
		t.Helper()
		res := s.do(t, in, http.MethodGet, s.collection(in)+"?limit=1", nil)
		require.Equal(t, http.StatusOK, res.code, res.raw)
		return res.body["pagination"].(map[string]any)["total"]
	}
	before := count()
	stored := s.do(t, in, http.MethodGet, s.item(in, mine), nil)
	require.Equal(t, http.StatusOK, stored.code, stored.raw)

	// An item as a copy of the stored record: what may be created.
	copyOf := map[string]any{}
	for _, f := range s.r.AllFields() {
		if v := stored.body["data"].(map[string]any)[f.Name]; f.Create && v != nil && f.Name != resource.ExternalIDColumn {
			copyOf[f.Name] = v
		}
	}
	res := s.do(t, in, http.MethodPost, s.collection(in), []any{copyOf, map[string]any{"resourcetest_unknown": 1}, "not an object", []any{}})
	assertRefused(t, res, http.StatusBadRequest, "invalid_batch", "a batch with refused items")
	refused := map[int]bool{}
	for _, e := range res.body["errors"].([]any) {
		item := e.(map[string]any)
		assert.NotEmpty(t, item["error"], "an item's error code")
		assert.NotEmpty(t, item["error_description"], "an item's error description")
		refused[int(item["index"].(float64))] = true
	}
	for _, i := range []int{1, 2, 3} {
		assert.True(t, refused[i], "item %d is named among the refused: %s", i, res.raw)
	}
	assert.Equal(t, before, count(), "a refused batch wrote records")

	for what, body := range map[string]any{"an empty batch": []any{}, "a batch over the bound": make([]any, resource.MaxBatchItems+1)} {
		assertRefused(t, s.do(t, in, http.MethodPost, s.collection(in), body), http.StatusBadRequest, "invalid_batch", what)
		assertRefused(t, s.do(t, in, http.MethodPatch, s.collection(in), body), http.StatusBadRequest, "invalid_batch", what+" of updates")
	}

	// A batch update reaches only the path's tenant.
	for name, away := range s.away() {
		theirs := s.record(t, away)
		theirsBefore := s.do(t, away, http.MethodGet, s.item(away, theirs), nil)
		res := s.do(t, in, http.MethodPatch, s.collection(in), []any{map[string]any{"id": theirs}})
		assertRefused(t, res, http.StatusBadRequest, "invalid_batch", "a batch update of "+name+"'s record")
		if items, ok := res.body["errors"].([]any); assert.True(t, ok) && assert.Len(t, items, 1) {
			assert.Equal(t, "not_found", items[0].(map[string]any)["error"], "%s's record in a batch update", name)
		}
		after := s.do(t, away, http.MethodGet, s.item(away, theirs), nil)
		assert.Equal(t, theirsBefore.raw, after.raw, "a batch update changed %s's record", name)
	}
	// Tenant columns are never an item's.
	cols := []string{resource.OrganizationColumn}
	if s.r.ScopeType != tenancy.Organization {
		cols = append(cols, resource.BranchColumn)
	}
	for _, col := range cols {
		res := s.do(t, in, http.MethodPatch, s.collection(in), []any{map[string]any{"id": mine, col: s.OtherOrganization}})
		assertRefused(t, res, http.StatusBadRequest, "invalid_batch", "a batch update that sends "+col)
	}
	// An item that changes nothing writes nothing.
	res = s.do(t, in, http.MethodPatch, s.collection(in), []any{map[string]any{"id": mine}})
	require.Equal(t, http.StatusOK, res.code, "a batch update of nothing: %s", res.raw)
	after := s.do(t, in, http.MethodGet, s.item(in, mine), nil)
	assert.Equal(t, stored.raw, after.raw, "a batch update of nothing changed the record")

	if s.r.ExternalID {
		res := s.doWith(t, in, http.MethodPost, s.collection(in), []any{copyOf}, map[string]string{"Prefer": "resolution=merge-duplicates"})
		assertRefused(t, res, http.StatusBadRequest, "invalid_batch", "an upsert item without external_id")
		assert.Equal(t, before, count(), "a refused upsert wrote records")
	}
}
