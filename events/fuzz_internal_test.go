package events

import (
	"encoding/json"
	"net/http"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// FuzzFeedQuery checks the parser of the feed's query string: any input
// is a page's query within the bounds, or a 400; nothing panics.
func FuzzFeedQuery(f *testing.F) {
	reg := &resource.Registry{}
	if err := reg.Register(&resource.Resource{Name: "quotations", ScopeType: tenancy.Branch}, &resource.Resource{Name: "accounts", ScopeType: tenancy.Branch},
		&resource.Resource{Name: "master_data", ScopeType: tenancy.Organization, ReadOnly: true}); err != nil {
		f.Fatal(err)
	}
	feed := &Feed{Registry: reg}
	for _, s := range []string{"", "after=12&limit=50", "types=quotation.*,account.created", "types=*", "after=", "limit=1000",
		"types=master_data.status_changed", "after=9223372036854775807", "after=1&after=2", "types=%2A", "types=quotation.,x", "limit=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := feed.parse(raw)
		if err != nil {
			e, ok := apierrors.As(err)
			if !ok || e.Status != http.StatusBadRequest {
				t.Fatalf("%q: %v is not a 400", raw, err)
			}
			return
		}
		if q.limit < 1 || q.limit > MaxLimit || q.after < 0 {
			t.Fatalf("%q: limit %d, after %d", raw, q.limit, q.after)
		}
		names := []string{"quotations", "accounts", "master_data"}
		for _, typ := range q.types {
			if _, ok := ParsePattern(typ, names); !ok {
				t.Fatalf("%q: type %q", raw, typ)
			}
		}
		for _, p := range q.prefixes {
			if p != "quotation" && p != "account" && p != "master_data" {
				t.Fatalf("%q: prefix %q", raw, p)
			}
		}
	})
}

// FuzzAppendString checks that appendString writes what encoding/json
// reads back as the same string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "quotation.created", "/v1/x/y", `a"b`, "a\\b", "\x00\n", "<&>", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(appendString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q reads back as %q, not %q", s, back, wantBack)
		}
	})
}
