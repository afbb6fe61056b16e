package resource_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/resource"
)

// run runs the hook of h that a write of current (nil: a create) with
// changes runs, and returns the changes as the hook leaves them and its
// error code ("" for none).
func run(t *testing.T, h resource.Hooks, current, changes resource.Record) (resource.Record, string) {
	t.Helper()
	w := &resource.Write{Current: current, Changes: changes}
	hook := h.BeforeUpdate
	if current == nil {
		hook = h.BeforeCreate
	}
	if hook == nil {
		return w.Changes, ""
	}
	err := hook(context.Background(), nil, w)
	if err == nil {
		return w.Changes, ""
	}
	e, ok := apierrors.As(err)
	require.True(t, ok, "not an API error: %v", err)
	return w.Changes, e.Code
}

func TestRules(t *testing.T) {
	t.Parallel()
	day := func(s string) time.Time { v, _ := time.Parse(time.DateOnly, s); return v }
	stored := resource.Record{"status": "draft", "name": "x"}
	issued := resource.Record{"status": "issued", "name": "x"}
	tests := []struct {
		name     string
		hooks    resource.Hooks
		current  resource.Record
		changes  resource.Record
		want     resource.Record // the changes after the hook, if no error
		wantCode string
	}{
		{"default fills a missing field", resource.Default(resource.Record{"status": "draft"}), nil, resource.Record{}, resource.Record{"status": "draft"}, ""},
		{"default fills null", resource.Default(resource.Record{"status": "draft"}), nil, resource.Record{"status": nil}, resource.Record{"status": "draft"}, ""},
		{"default keeps a value", resource.Default(resource.Record{"status": "draft"}), nil, resource.Record{"status": "sent"}, resource.Record{"status": "sent"}, ""},
		{"default does not touch updates", resource.Default(resource.Record{"status": "draft"}), stored, resource.Record{}, resource.Record{}, ""},

		{"trim", resource.Trim("name"), nil, resource.Record{"name": "  Acme  "}, resource.Record{"name": "Acme"}, ""},
		{"trim refuses blank on create", resource.Trim("name"), nil, resource.Record{"name": "   "}, nil, "invalid_create"},
		{"trim refuses blank on update", resource.Trim("name"), stored, resource.Record{"name": " "}, nil, "invalid_update"},
		{"trim leaves null", resource.Trim("name"), stored, resource.Record{"name": nil}, resource.Record{"name": nil}, ""},

		{"upper", resource.Upper("code"), nil, resource.Record{"code": " eur "}, resource.Record{"code": "EUR"}, ""},

		{"match", resource.Match("code", regexp.MustCompile(`^[A-Z]{3}$`), "a currency code"), nil, resource.Record{"code": "EUR"}, resource.Record{"code": "EUR"}, ""},
		{"match refuses", resource.Match("code", regexp.MustCompile(`^[A-Z]{3}$`), "a currency code"), stored, resource.Record{"code": "euro"}, nil, "invalid_update"},

		{"rounded", resource.Rounded(map[string]int{"amount": 2}), nil, resource.Record{"amount": 1.005}, resource.Record{"amount": 1.01}, ""},

		{"not before: in order", resource.NotBefore("until", "from"), nil, resource.Record{"from": "2026-03-01", "until": "2026-03-02"}, resource.Record{"from": "2026-03-01", "until": "2026-03-02"}, ""},
		{"not before: the same day", resource.NotBefore("until", "from"), nil, resource.Record{"from": "2026-03-01", "until": "2026-03-01"}, resource.Record{"from": "2026-03-01", "until": "2026-03-01"}, ""},
		{"not before: refused on create", resource.NotBefore("until", "from"), nil, resource.Record{"from": "2026-03-02", "until": "2026-03-01"}, nil, "invalid_create"},
		{"not before: against the stored value", resource.NotBefore("until", "from"), resource.Record{"from": "2026-03-02"}, resource.Record{"until": "2026-03-01"}, nil, "invalid_update"},
		{"not before: a timestamp and a date", resource.NotBefore("until", "from"), nil, resource.Record{"from": "2026-03-02", "until": day("2026-03-01")}, nil, "invalid_create"},
		{"not before: an unrelated change", resource.NotBefore("until", "from"), resource.Record{"from": "2026-03-02", "until": "2026-03-01"}, resource.Record{"name": "y"}, resource.Record{"name": "y"}, ""},
		{"not before: one is null", resource.NotBefore("until", "from"), nil, resource.Record{"from": "2026-03-02", "until": nil}, resource.Record{"from": "2026-03-02", "until": nil}, ""},

		{"sum computed on create", resource.Sum("total", "net", "tax"), nil, resource.Record{"net": 100.0, "tax": 19.0}, resource.Record{"net": 100.0, "tax": 19.0, "total": 119.0}, ""},
		{"sum checked", resource.Sum("total", "net", "tax"), nil, resource.Record{"net": 100.0, "tax": 19.0, "total": 120.0}, nil, "invalid_create"},
		{"sum to the cent", resource.Sum("total", "net", "tax"), nil, resource.Record{"net": 0.1, "tax": 0.2, "total": 0.3}, resource.Record{"net": 0.1, "tax": 0.2, "total": 0.3}, ""},
		{"sum recomputed on update of a part", resource.Sum("total", "net", "tax"), resource.Record{"net": 100.0, "tax": 19.0, "total": 119.0}, resource.Record{"tax": int64(7)}, resource.Record{"tax": int64(7), "total": 107.0}, ""},
		{"sum of a stored decimal text", resource.Sum("total", "net", "tax"), resource.Record{"net": "100.50", "tax": 0.0, "total": 100.5}, resource.Record{"tax": 1.0}, resource.Record{"tax": 1.0, "total": 101.5}, ""},
		{"sum untouched", resource.Sum("total", "net", "tax"), resource.Record{"net": 1.0, "tax": 1.0, "total": 5.0}, resource.Record{"name": "y"}, resource.Record{"name": "y"}, ""},

		{"locked unless: open record", resource.LockedUnless("status", "draft"), stored, resource.Record{"name": "y"}, resource.Record{"name": "y"}, ""},
		{"locked unless: status may change", resource.LockedUnless("status", "draft"), issued, resource.Record{"status": "cancelled"}, resource.Record{"status": "cancelled"}, ""},
		{"locked unless: other fields may not", resource.LockedUnless("status", "draft"), issued, resource.Record{"name": "y"}, nil, "invalid_update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, code := run(t, tt.hooks, tt.current, tt.changes)
			assert.Equal(t, tt.wantCode, code)
			if tt.wantCode == "" {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

func TestLockedUnlessDelete(t *testing.T) {
	t.Parallel()
	h := resource.LockedUnless("status", "draft")
	for _, tt := range []struct {
		status, want string
	}{{"draft", ""}, {"issued", "invalid_request"}} {
		err := h.BeforeDelete(context.Background(), nil, &resource.Write{Current: resource.Record{"status": tt.status}, Changes: resource.Record{}})
		if tt.want == "" {
			assert.NoError(t, err, tt.status)
			continue
		}
		e, ok := apierrors.As(err)
		require.True(t, ok)
		assert.Equal(t, tt.want, e.Code, tt.status)
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v     float64
		scale int
		want  float64
	}{
		{1.005, 2, 1.01}, {-1.005, 2, -1.01}, {2.5, 0, 3}, {0.125, 2, 0.13}, {1.234567, 3, 1.235}, {100, 2, 100},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, resource.Round(tt.v, tt.scale), "%v to %d", tt.v, tt.scale)
	}
}

// The generic rules chain with a domain's own: here an invoice whose name
// is trimmed, whose currency is stored in upper case, whose total is the
// sum of its parts, and which is locked once issued.
func ExampleCombine_rules() {
	hooks := resource.Combine(
		resource.Default(resource.Record{"status": "draft", "currency": "EUR"}),
		resource.Trim("name"),
		resource.Upper("currency"),
		resource.Sum("total", "net", "tax"),
		resource.LockedUnless("status", "draft"),
	)
	w := &resource.Write{Changes: resource.Record{"name": "  March  ", "currency": "usd", "net": 100.0, "tax": 19.0}}
	if err := hooks.BeforeCreate(context.Background(), nil, w); err != nil {
		panic(err)
	}
	fmt.Println(w.Changes["name"], w.Changes["currency"], w.Changes["status"], w.Changes["total"])

	w = &resource.Write{Current: resource.Record{"status": "issued"}, Changes: resource.Record{"name": "April"}}
	fmt.Println(hooks.BeforeUpdate(context.Background(), nil, w))
	// Output:
	// March USD draft 119
	// invalid_update: name: a record that is issued can only change its status
}
