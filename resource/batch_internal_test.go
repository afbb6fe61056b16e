package resource

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
)

// readItems reads a batch of r's creates as the POST handler does.
func readItems(r *Resource, body []byte) ([]*item, error) {
	return readBatch(body, func(i int, raw json.RawMessage) *item {
		members, err := r.itemObject(raw, func(name string) error {
			_, err := r.writableField(name, true)
			return err
		}, apierrors.InvalidCreate)
		if err != nil {
			return newItem(i, nil, err)
		}
		changes, err := r.changes(members, true)
		return newItem(i, changes, err)
	})
}

func TestReadBatch(t *testing.T) {
	t.Parallel()
	r := bodyResource(t)
	ok := `{"company_name":"x","account_type":"customer"}`
	many := func(n int) string { return "[" + strings.Repeat(ok+",", n-1) + ok + "]" }
	for _, tc := range []struct {
		name, body string
		items      int            // items read, when the batch is read
		refused    map[int]string // their refusals
		code       string         // the refusal of the whole body
	}{
		{"one", "[" + ok + "]", 1, map[int]string{}, ""},
		{"spaces", " \n[ " + ok + " , " + ok + " ]\t", 2, map[int]string{}, ""},
		{"a thousand", many(MaxBatchItems), MaxBatchItems, map[int]string{}, ""},
		{"a thousand and one", many(MaxBatchItems + 1), 0, nil, apierrors.CodeInvalidBatch},
		{"empty", "[]", 0, nil, apierrors.CodeInvalidBatch},
		{"not an array", ok, 0, nil, apierrors.CodeInvalidBatch},
		{"two arrays", "[" + ok + "][" + ok + "]", 0, nil, apierrors.CodeInvalidBatch},
		{"broken at 2", "[" + ok + "," + ok + `,{"company_name":` + "]", 0, nil, apierrors.CodeInvalidBatch},
		{"no comma", "[" + ok + ok + "]", 0, nil, apierrors.CodeInvalidBatch},
		{"unclosed", "[" + ok, 0, nil, apierrors.CodeInvalidBatch},
		{"items refused", `[[],"x",{"colour":1},` + ok + `,{"company_name":"x"},null]`, 6,
			map[int]string{0: "invalid_create", 1: "invalid_create", 2: "invalid_create", 4: "invalid_create", 5: "invalid_create"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := readItems(r, []byte(tc.body))
			if tc.code != "" {
				require.Error(t, err)
				assert.Equal(t, tc.code, apierrors.CodeOf(err))
				return
			}
			require.NoError(t, err)
			require.Len(t, items, tc.items)
			got := map[int]string{}
			for _, e := range refusals(items) {
				got[e.Index] = e.Code
			}
			assert.Equal(t, tc.refused, got)
		})
	}
	t.Run("where the JSON breaks", func(t *testing.T) {
		_, err := readItems(r, []byte("["+ok+","+ok+`,{"company_name":`+"]"))
		e, _ := apierrors.As(err)
		require.NotNil(t, e)
		require.Len(t, e.Items, 1)
		assert.Equal(t, 2, e.Items[0].Index)
		assert.Contains(t, e.Items[0].Description, "item 2 is not valid JSON")
	})
}

// FuzzBatchBody feeds the batch reader any bytes. It never panics; it
// reads exactly the JSON arrays of 1 to MaxBatchItems values that
// encoding/json finds valid, one item per value in order, and refuses
// everything else with 400 invalid_batch; an item that is not an object
// the resource takes is refused on its own with a 400 code.
func FuzzBatchBody(f *testing.F) {
	for _, seed := range []string{
		`[{"company_name":"x","account_type":"customer"}]`, `[]`, `[[]]`, `[{}, {"a":1}]`, `[1,"x",null,true]`,
		`[{"company_name":"x"},]`, `[{"a":1}{"b":2}]`, `[{"company_name":"x","company_name":"y"}]`, `{"a":1}`, ` [ { } ] `,
		`[{"company_name":"\u0000"}]`, `[{}][{}]`, `[`, `[{"weight_kg":-1e999}]`, "[{\"\xff\":1}]", `[{"external_id":"a b"}]`,
	} {
		f.Add([]byte(seed))
	}
	r := bodyResource(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := readItems(r, body)
		var want []json.RawMessage
		array := json.Valid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) && json.Unmarshal(body, &want) == nil
		if err != nil {
			e, ok := apierrors.As(err)
			require.True(t, ok, "not an API error: %#v", err)
			require.Equal(t, apierrors.CodeInvalidBatch, e.Code, "%v", err)
			require.NotNil(t, e.Items, "a refused batch always has errors")
			if array {
				require.True(t, len(want) == 0 || len(want) > MaxBatchItems, "refused a valid array of %d values: %v", len(want), err)
			}
			return
		}
		require.True(t, array, "read what encoding/json does not read as an array")
		require.Len(t, items, len(want))
		for i, it := range items {
			require.Equal(t, i, it.index)
			if it.err != nil {
				require.Equal(t, 400, it.err.Status, "%v", it.err)
				continue
			}
			var obj map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(want[i], &obj), "item %d is an object", i)
			require.Len(t, it.changes, len(obj))
		}
	})
}
