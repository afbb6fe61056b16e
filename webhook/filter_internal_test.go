package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// filterAPI is an API with two resources: quotations, with a status flow
// and fields of every type, and accounts, whose status has no flow.
func filterAPI(t testing.TB) *API {
	t.Helper()
	reg := &resource.Registry{}
	quotations := &resource.Resource{Name: "quotations", ScopeType: tenancy.Branch, Fields: []resource.Field{
		{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Create: true, Update: true},
		{Name: "total_weight_kg", Type: query.Number, Create: true, Update: true},
		{Name: "total_packages", Type: query.Integer, Create: true, Update: true},
		{Name: "valid_until", Type: query.Date, Create: true, Update: true},
		{Name: "sent_at", Type: query.Timestamp, Nullable: true},
		{Name: "reference", Type: query.String, Nullable: true, Create: true, Update: true},
		{Name: "urgent", Type: query.Boolean, Create: true, Update: true},
		{Name: "account_id", Type: query.UUID, Create: true},
	}, Hooks: resource.StatusFlow("status", "draft", map[string][]string{"draft": {"sent"}, "sent": {"accepted"}})}
	accounts := &resource.Resource{Name: "accounts", ScopeType: tenancy.Branch, Fields: []resource.Field{
		{Name: "status", Type: query.Enum, Values: []string{"active", "blocked"}, Create: true, Update: true},
		{Name: "total_packages", Type: query.String, Create: true, Update: true},
		{Name: "reference", Type: query.String, Nullable: true, Create: true, Update: true},
	}}
	if err := reg.Register(quotations, accounts); err != nil {
		t.Fatal(err)
	}
	return &API{Registry: reg}
}

// TestParseFilter checks the conditions a filter may hold, for the
// resources its endpoint's event types name.
func TestParseFilter(t *testing.T) {
	a := filterAPI(t)
	for _, tc := range []struct {
		name       string
		types      []string
		conditions []string
		refused    string // a part of the refusal; "" when taken
	}{
		{"status move", []string{"quotation.*"}, []string{"status.to:eq:sent", "status.from:in:draft,sent"}, ""},
		{"changed field", []string{"quotation.updated"}, []string{"changed:eq:total_packages", "changed:in:valid_until,reference"}, ""},
		{"numbers", []string{"quotation.*"}, []string{"total_weight_kg:gt:100.5", "total_packages:lte:3"}, ""},
		{"dates and times", []string{"quotation.*"}, []string{"valid_until:gte:2026-01-01", "sent_at:lt:2026-01-01T10:00:00+01:00"}, ""},
		{"null", []string{"quotation.*"}, []string{"reference:isnull:true", "sent_at:isnull:false"}, ""},
		{"field of both", []string{"quotation.*", "account.*"}, []string{"reference:eq:x", "changed:eq:reference"}, ""},
		{"common field of every resource", []string{"*"}, []string{"created_at:gte:2026-01-01"}, ""},
		{"value with colons", []string{"quotation.*"}, []string{"reference:eq:a:b:c"}, ""},
		{"empty", []string{"quotation.*"}, []string{}, "at least one condition"},
		{"unknown field", []string{"quotation.*"}, []string{"eta:eq:1"}, "unknown field"},
		{"field of one resource only", []string{"quotation.*", "account.*"}, []string{"valid_until:gte:2026-01-01"}, "accounts"},
		{"field of two types", []string{"*"}, []string{"total_packages:eq:1"}, "of type integer in quotations and of type string in accounts"},
		{"status of a resource without a flow", []string{"account.*"}, []string{"status.to:eq:active"}, "unknown field"},
		{"status value not of the flow", []string{"quotation.*"}, []string{"status.to:eq:delivered"}, "not one of"},
		{"bad operator", []string{"quotation.*"}, []string{"status:foo:sent"}, "unknown operator"},
		{"like is not a filter operator", []string{"quotation.*"}, []string{"reference:like:a%"}, "not allowed"},
		{"gt on a string", []string{"quotation.*"}, []string{"status:gt:draft"}, "not allowed"},
		{"not a number", []string{"quotation.*"}, []string{"total_weight_kg:gt:heavy"}, "not a number"},
		{"not an integer", []string{"quotation.*"}, []string{"total_packages:eq:1.5"}, "not an integer"},
		{"not a date", []string{"quotation.*"}, []string{"valid_until:gt:tomorrow"}, "not a date"},
		{"isnull not a boolean", []string{"quotation.*"}, []string{"reference:isnull:yes"}, "true or false"},
		{"changed not a field", []string{"quotation.*"}, []string{"changed:eq:eta"}, "not one of"},
		{"changed with gt", []string{"quotation.*"}, []string{"changed:gt:status"}, "not allowed"},
		{"no operator", []string{"quotation.*"}, []string{"status"}, "field:operator:value"},
		{"empty in", []string{"quotation.*"}, []string{"status:in:"}, "at least one value"},
		{"too many", []string{"quotation.*"}, strings.Split(strings.Repeat("status:eq:sent,", MaxFilterConditions+1), ",")[:MaxFilterConditions+1], "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.parseFilter(tc.conditions, tc.types, apierrors.InvalidCreate)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(got) != len(tc.conditions) {
					t.Fatalf("%d conditions stored of %d", len(got), len(tc.conditions))
				}
				if _, err := compileFilter(got); err != nil {
					t.Fatalf("does not compile: %v", err)
				}
				return
			}
			e, ok := apierrors.As(err)
			if !ok || e.Status != http.StatusBadRequest || e.Code != "invalid_create" || !strings.Contains(e.Description, tc.refused) {
				t.Fatalf("want a 400 invalid_create about %q, got %v", tc.refused, err)
			}
		})
	}
}

// quotationEvent is the body of a quotation's event.
func quotationEvent(typ, record string, changed []string, status string) []byte {
	c, _ := json.Marshal(changed)
	b := `{"specversion":"1.0","id":"0a000000-0000-4000-8000-0000000000e1","type":"` + typ + `","data":{"record":` + record + `,"changed":` + string(c)
	if status != "" {
		b += `,"status":` + status
	}
	return []byte(b + `}}`)
}

// TestFilterMatches checks the decision of a filter on events' bodies.
func TestFilterMatches(t *testing.T) {
	a := filterAPI(t)
	record := `{"id":"0a000000-0000-4000-8000-0000000000a1","status":"sent","total_weight_kg":120.5,"total_packages":3,"valid_until":"2026-12-24",` +
		`"sent_at":"2026-11-24T10:00:00.000000Z","reference":null,"urgent":true,"account_id":"0a000000-0000-4000-8000-0000000000b2",` +
		`"created_at":"2026-11-24T09:00:00.000000Z","updated_at":"2026-11-24T10:00:00.000000Z"}`
	statusChanged := quotationEvent("quotation.status_changed", record, []string{"status", "sent_at"}, `{"field":"status","from":"draft","to":"sent"}`)
	updated := quotationEvent("quotation.updated", record, []string{"status", "sent_at"}, "")
	deleted := quotationEvent("quotation.deleted", `{"id":"0a000000-0000-4000-8000-0000000000a1"}`, nil, "")
	for _, tc := range []struct {
		condition string
		event     []byte
		want      bool
	}{
		{"status.to:eq:sent", statusChanged, true},
		{"status.to:eq:accepted", statusChanged, false},
		{"status.from:in:draft,accepted", statusChanged, true},
		{"status.to:eq:sent", updated, false},
		{"status.to:isnull:true", updated, true},
		{"status.to:ne:accepted", updated, false},
		{"changed:eq:sent_at", updated, true},
		{"changed:eq:total_packages", updated, false},
		{"changed:in:total_packages,status", updated, true},
		{"changed:ne:total_packages", updated, true},
		{"changed:ne:status", updated, false},
		{"total_weight_kg:gt:100", updated, true},
		{"total_weight_kg:gt:120.5", updated, false},
		{"total_weight_kg:gte:120.5", updated, true},
		{"total_weight_kg:lt:99", updated, false},
		{"total_weight_kg:eq:1.205e2", updated, true},
		{"total_packages:in:1,2,3", updated, true},
		{"total_packages:in:4,5", updated, false},
		{"total_packages:gt:20", updated, false}, // 3 < 20 as numbers, not as text
		{"valid_until:gt:2026-12-01", updated, true},
		{"valid_until:lt:2026-12-01", updated, false},
		{"sent_at:gte:2026-11-24T11:00:00+01:00", updated, true}, // the same instant
		{"sent_at:gt:2026-11-24T11:00:00+01:00", updated, false},
		{"sent_at:lt:2026-11-25", updated, true},
		{"reference:isnull:true", updated, true},
		{"reference:isnull:false", updated, false},
		{"reference:ne:x", updated, false}, // ne never holds for null
		{"reference:eq:x", updated, false},
		{"urgent:eq:true", updated, true},
		{"urgent:ne:true", updated, false},
		{"account_id:eq:0A000000-0000-4000-8000-0000000000B2", updated, true},
		{"status:in:draft,sent", updated, true},
		{"status:ne:sent", updated, false},
		{"total_weight_kg:gt:1", deleted, false}, // a deleted record carries its id only
		{"total_weight_kg:isnull:true", deleted, true},
		{"id:eq:0a000000-0000-4000-8000-0000000000a1", deleted, true},
	} {
		t.Run(tc.condition+"/"+string(tc.event[len(`{"specversion":"1.0","id":"0a000000-0000-4000-8000-0000000000e1","type":"quotation.`):][:7]), func(t *testing.T) {
			stored, err := a.parseFilter([]string{tc.condition}, []string{"quotation.*"}, apierrors.InvalidCreate)
			if err != nil {
				t.Fatal(err)
			}
			f, err := compileFilter(stored)
			if err != nil {
				t.Fatal(err)
			}
			ev := &fanEvent{Stored: &eventstore.Stored{Seq: 2, Resource: "quotations", Type: "quotation.updated", Body: tc.event}}
			sub := &subscription{patterns: nil, grantResources: []string{"quotations"}, filter: f}
			sub.patterns = append(sub.patterns, "quotation.*")
			if got := sub.wants(ev); got != tc.want {
				t.Fatalf("wants %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzEndpointFilter checks the filter of an endpoint: any conditions are
// refused with a 400 invalid_create, or stored as conditions that compile
// and decide on any event body without panicking.
func FuzzEndpointFilter(f *testing.F) {
	a := filterAPI(f)
	for _, s := range []string{
		"status.to:eq:sent", "changed:in:status,reference", "total_weight_kg:gt:1e2", "total_packages:in:1,\"2\"",
		"sent_at:gte:2026-01-01T10:00:00Z", "valid_until:lt:2026-01-01", "reference:isnull:true", "reference:eq:\x00",
		"reference:in:\"a,b\",c", "status:eq:", ":::", "urgent:eq:true", "account_id:ne:0A000000-0000-4000-8000-0000000000B2",
	} {
		f.Add(s, "quotation.*", `{"data":{"record":{"status":"sent","total_weight_kg":1,"reference":null},"changed":["status"],"status":{"from":"draft","to":"sent"}}}`)
		f.Add(s, "*", `{"data":{"record":{"total_weight_kg":"x","sent_at":3},"changed":null}}`)
	}
	f.Fuzz(func(t *testing.T, condition, pattern, body string) {
		if _, ok := a.parsePatternsOK(pattern); !ok {
			return
		}
		stored, err := a.parseFilter([]string{condition}, []string{pattern}, apierrors.InvalidCreate)
		if err != nil {
			if e, ok := apierrors.As(err); !ok || e.Status != http.StatusBadRequest || e.Code != "invalid_create" {
				t.Fatalf("%q: %v is not a 400 invalid_create", condition, err)
			}
			return
		}
		raw, _ := json.Marshal(stored)
		var back []storedCondition
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		compiled, err := compileFilter(back)
		if err != nil {
			t.Fatalf("%q is stored and does not compile: %v", condition, err)
		}
		if data, err := decodeEvent([]byte(body)); err == nil {
			compiled.matches(data)
		}
	})
}

// parsePatternsOK reports whether pattern is an event type pattern of a.
func (a *API) parsePatternsOK(pattern string) ([]string, bool) {
	l, err := a.parsePatterns([]string{pattern}, apierrors.InvalidCreate)
	return l, err == nil
}

// BenchmarkFilter measures the filter's work per event in the fan-out:
// decoding the event's body once (the floor, which every filter on the
// event shares) and deciding three conditions on it.
func BenchmarkFilter(b *testing.B) {
	a := filterAPI(b)
	record := `{"id":"0a000000-0000-4000-8000-0000000000a1","status":"sent","total_weight_kg":120.5,"total_packages":3,"valid_until":"2026-12-24",` +
		`"sent_at":"2026-11-24T10:00:00.000000Z","reference":null,"urgent":true,"account_id":"0a000000-0000-4000-8000-0000000000b2",` +
		`"created_at":"2026-11-24T09:00:00.000000Z","updated_at":"2026-11-24T10:00:00.000000Z"}`
	body := quotationEvent("quotation.status_changed", record, []string{"status", "sent_at"}, `{"field":"status","from":"draft","to":"sent"}`)
	stored, err := a.parseFilter([]string{"status.to:eq:sent", "changed:eq:sent_at", "total_weight_kg:gt:100"}, []string{"quotation.*"}, apierrors.InvalidCreate)
	if err != nil {
		b.Fatal(err)
	}
	f, err := compileFilter(stored)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEvent(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := decodeEvent(body)
			if err != nil || !f.matches(data) {
				b.Fatal("no match")
			}
		}
	})
	data, _ := decodeEvent(body)
	b.Run("match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !f.matches(data) {
				b.Fatal("no match")
			}
		}
	})
}
