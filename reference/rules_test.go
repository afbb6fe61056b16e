package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/resource"
)

// TestResourceRules runs the update and delete hooks of the resources —
// none of which touches the database — on a current record and a change,
// and the create hooks of those that take no number.
func TestResourceRules(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		resource string
		current  resource.Record // nil: a create
		changes  resource.Record
		want     resource.Record // values after the hooks
		wantErr  string          // the error code, "" for none
	}{
		// Quotations: the status flow of SPEC section 3, and dates.
		{"quotation draft to accepted", "quotations", resource.Record{"status": "draft"}, resource.Record{"status": "accepted"}, nil, ""},
		{"quotation draft to sent", "quotations", resource.Record{"status": "draft"}, resource.Record{"status": "sent"}, nil, ""},
		{"quotation draft to expired", "quotations", resource.Record{"status": "draft"}, resource.Record{"status": "expired"}, nil, apierrors.CodeInvalidUpdate},
		{"quotation sent to expired", "quotations", resource.Record{"status": "sent"}, resource.Record{"status": "expired"}, nil, ""},
		{"quotation sent to draft", "quotations", resource.Record{"status": "sent"}, resource.Record{"status": "draft"}, nil, apierrors.CodeInvalidUpdate},
		{"quotation accepted is final", "quotations", resource.Record{"status": "accepted"}, resource.Record{"status": "cancelled"}, nil, apierrors.CodeInvalidUpdate},
		{"quotation same status", "quotations", resource.Record{"status": "expired"}, resource.Record{"status": "expired"}, nil, ""},
		{"quotation valid_until before quotation_date", "quotations",
			resource.Record{"status": "draft", "quotation_date": "2026-03-01", "valid_until": "2026-03-31"},
			resource.Record{"valid_until": "2026-02-28"}, nil, apierrors.CodeInvalidUpdate},
		{"quotation quotation_date after valid_until", "quotations",
			resource.Record{"status": "draft", "quotation_date": "2026-03-01", "valid_until": "2026-03-31"},
			resource.Record{"quotation_date": "2026-04-01"}, nil, apierrors.CodeInvalidUpdate},
		{"quotation valid on the same day", "quotations",
			resource.Record{"status": "draft", "quotation_date": "2026-03-01", "valid_until": "2026-03-31"},
			resource.Record{"valid_until": "2026-03-01", "total_weight_kg": 1.23449}, resource.Record{"total_weight_kg": 1.234}, ""},

		// Accounts.
		{"account defaults", "accounts", nil, resource.Record{"company_name": "Acme"},
			resource.Record{"status": "active", "account_type": "customer"}, ""},
		{"account with a status", "accounts", nil, resource.Record{"company_name": "Acme", "status": "blocked", "account_type": "carrier"},
			resource.Record{"status": "blocked", "account_type": "carrier"}, ""},
		{"account with a blank name", "accounts", nil, resource.Record{"company_name": "  "}, nil, apierrors.CodeInvalidCreate},
		{"account renamed blank", "accounts", resource.Record{"company_name": "Acme"}, resource.Record{"company_name": ""}, nil, apierrors.CodeInvalidUpdate},
		{"account with a bad email", "accounts", nil, resource.Record{"company_name": "Acme", "email": "nope"}, nil, apierrors.CodeInvalidCreate},
		{"account email trimmed", "accounts", resource.Record{}, resource.Record{"email": " a@b.example "}, resource.Record{"email": "a@b.example"}, ""},
		{"account may leave any status", "accounts", resource.Record{"status": "blocked"}, resource.Record{"status": "active"}, nil, ""},

		// Invoices: the total, the currency, the lock after draft.
		{"invoice total computed", "invoices", resource.Record{"status": "draft", "net_amount": 100.0, "tax_amount": 19.0, "total_amount": 119.0},
			resource.Record{"net_amount": 200.004}, resource.Record{"net_amount": 200.0, "total_amount": 219.0}, ""},
		{"invoice total given right", "invoices", resource.Record{"status": "draft", "net_amount": 100.0, "tax_amount": 19.0, "total_amount": 119.0},
			resource.Record{"tax_amount": 0.0, "total_amount": 100.0}, resource.Record{"total_amount": 100.0}, ""},
		{"invoice total given wrong", "invoices", resource.Record{"status": "draft", "net_amount": 100.0, "tax_amount": 19.0, "total_amount": 119.0},
			resource.Record{"total_amount": 120.0}, nil, apierrors.CodeInvalidUpdate},
		{"invoice total of decimal text", "invoices", resource.Record{"status": "draft", "net_amount": "100.10", "tax_amount": "19.02", "total_amount": "119.12"},
			resource.Record{"total_amount": 119.12}, nil, ""},
		{"invoice lower-case currency", "invoices", resource.Record{"status": "draft"}, resource.Record{"currency": "eur"}, nil, apierrors.CodeInvalidUpdate},
		{"invoice currency", "invoices", resource.Record{"status": "draft"}, resource.Record{"currency": "CHF"}, nil, ""},
		{"issued invoice edited", "invoices", resource.Record{"status": "issued", "net_amount": 1.0, "tax_amount": 0.0, "total_amount": 1.0},
			resource.Record{"net_amount": 2.0}, nil, apierrors.CodeInvalidUpdate},
		{"issued invoice paid", "invoices", resource.Record{"status": "issued"}, resource.Record{"status": "paid"}, nil, ""},
		{"issued invoice overdue", "invoices", resource.Record{"status": "issued"}, resource.Record{"status": "overdue"}, nil, ""},
		{"overdue invoice paid", "invoices", resource.Record{"status": "overdue"}, resource.Record{"status": "paid"}, nil, ""},
		{"paid invoice cancelled", "invoices", resource.Record{"status": "paid"}, resource.Record{"status": "cancelled"}, nil, apierrors.CodeInvalidUpdate},
		{"invoice due before its date", "invoices", resource.Record{"status": "draft", "invoice_date": "2026-04-01", "due_date": "2026-05-01"},
			resource.Record{"due_date": "2026-03-31"}, nil, apierrors.CodeInvalidUpdate},

		// Orders, trips, shipments.
		{"order confirmed", "orders", resource.Record{"status": "draft"}, resource.Record{"status": "confirmed"}, nil, ""},
		{"order delivered too early", "orders", resource.Record{"status": "confirmed"}, resource.Record{"status": "delivered"}, nil, apierrors.CodeInvalidUpdate},
		{"order pickup window reversed", "orders", resource.Record{"status": "draft", "pickup_from": t0},
			resource.Record{"pickup_until": t0.Add(-time.Hour)}, nil, apierrors.CodeInvalidUpdate},
		{"order delivery before pickup", "orders", resource.Record{"status": "draft", "pickup_from": t0},
			resource.Record{"delivery_from": t0.Add(-time.Hour)}, nil, apierrors.CodeInvalidUpdate},
		{"order window cleared", "orders", resource.Record{"status": "draft", "pickup_from": t0, "pickup_until": t0.Add(time.Hour)},
			resource.Record{"pickup_from": nil}, nil, ""},
		{"trip completed", "trips", resource.Record{"status": "in_progress", "actual_start": t0},
			resource.Record{"status": "completed", "actual_end": t0.Add(time.Hour)}, resource.Record{"actual_end": t0.Add(time.Hour)}, ""},
		{"trip ends before it starts", "trips", resource.Record{"status": "in_progress", "actual_start": t0},
			resource.Record{"actual_end": t0.Add(-time.Minute)}, nil, apierrors.CodeInvalidUpdate},
		{"cancelled trip restarted", "trips", resource.Record{"status": "cancelled"}, resource.Record{"status": "planned"}, nil, apierrors.CodeInvalidUpdate},
		{"shipment exception resolved", "shipments", resource.Record{"status": "exception"}, resource.Record{"status": "in_transit"}, nil, ""},
		{"shipment delivered back to transit", "shipments", resource.Record{"status": "delivered"}, resource.Record{"status": "in_transit"}, nil, apierrors.CodeInvalidUpdate},

		// Vehicles, zones, tariffs, items, projects.
		{"vehicle plate normalized", "vehicles", resource.Record{}, resource.Record{"plate": " m-ab 12 "}, resource.Record{"plate": "M-AB 12"}, ""},
		{"vehicle plate blank", "vehicles", resource.Record{}, resource.Record{"plate": "   "}, nil, apierrors.CodeInvalidUpdate},
		{"vehicle defaults", "vehicles", nil, resource.Record{"plate": "M-1", "vehicle_type": "car"},
			resource.Record{"active": true, "capacity_kg": 0.0, "capacity_m3": 0.0}, ""},
		{"inactive vehicle", "vehicles", nil, resource.Record{"plate": "M-1", "vehicle_type": "car", "active": false}, resource.Record{"active": false}, ""},
		{"zone country", "zones", nil, resource.Record{"name": "Z", "country_code": "de"}, nil, apierrors.CodeInvalidCreate},
		{"zone postal range reversed", "zones", nil, resource.Record{"name": "Z", "country_code": "DE", "postal_code_from": "80000", "postal_code_to": "79999"},
			nil, apierrors.CodeInvalidCreate},
		{"zone open range", "zones", nil, resource.Record{"name": "Z", "country_code": "DE", "postal_code_from": "80000"}, nil, ""},
		{"tariff rates rounded", "tariffs", nil, resource.Record{"name": "T", "valid_from": "2026-01-01", "price_per_kg": 0.08555, "minimum_price": 10.005},
			resource.Record{"price_per_kg": 0.0856, "minimum_price": 10.01, "currency": "EUR", "price_per_m3": 0.0}, ""},
		{"tariff ends before it starts", "tariffs", resource.Record{"valid_from": "2026-01-01"}, resource.Record{"valid_until": "2025-12-31"}, nil, apierrors.CodeInvalidUpdate},
		{"tariff currency", "tariffs", nil, resource.Record{"name": "T", "valid_from": "2026-01-01", "currency": "EURO"}, nil, apierrors.CodeInvalidCreate},
		{"item defaults", "items", nil, resource.Record{"name": "Box"}, resource.Record{"unit": "pcs", "weight_kg": 0.0, "volume_m3": 0.0}, ""},
		{"project dates reversed", "projects", nil, resource.Record{"name": "P", "start_date": "2026-02-01", "end_date": "2026-01-31"}, nil, apierrors.CodeInvalidCreate},
		{"project reopened", "projects", resource.Record{"status": "closed"}, resource.Record{"status": "active"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := resourceByName(t, tt.resource)
			w := &resource.Write{Resource: r, Current: tt.current, Changes: tt.changes}
			hook := r.Hooks.BeforeUpdate
			if tt.current == nil {
				hook = r.Hooks.BeforeCreate
			}
			var err error
			if hook != nil {
				err = hook(t.Context(), nil, w)
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, apierrors.CodeOf(err), err.Error())
				return
			}
			require.NoError(t, err)
			for k, v := range tt.want {
				assert.Equal(t, v, w.Changes[k], k)
			}
		})
	}
}

// TestStatusCreate checks which states a new record may start in.
func TestStatusCreate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		resource, status, wantErr string
	}{
		{"accounts", "blocked", ""},
		{"projects", "closed", ""},
		{"vehicles", "", ""},
		{"zones", "", ""},
	} {
		r := resourceByName(t, tt.resource)
		rec := resource.Record{"status": tt.status, "company_name": "A", "name": "N", "plate": "P", "vehicle_type": "van", "country_code": "DE"}
		if tt.status == "" {
			delete(rec, "status")
		}
		w := &resource.Write{Resource: r, Changes: rec}
		err := r.Hooks.BeforeCreate(t.Context(), nil, w)
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.resource)
		} else {
			assert.Equal(t, tt.wantErr, apierrors.CodeOf(err), tt.resource)
		}
	}
}

// TestInvoiceDelete checks that only draft invoices may be deleted.
func TestInvoiceDelete(t *testing.T) {
	t.Parallel()
	r := resourceByName(t, "invoices")
	for status, wantErr := range map[string]string{"draft": "", "issued": apierrors.CodeInvalidRequest, "cancelled": apierrors.CodeInvalidRequest} {
		err := r.Hooks.BeforeDelete(t.Context(), nil, &resource.Write{Resource: r, Current: resource.Record{"status": status}})
		assert.Equal(t, wantErr, apierrors.CodeOf(err), status)
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"draft", "confirmed", "cancelled", "in_transit", "delivered"}, states("draft", orderFlow))
	assert.Equal(t, []string{"planned", "picked_up", "exception", "cancelled", "in_transit", "delivered"}, states("planned", shipmentFlow))
	assert.Equal(t, []string{"draft", "issued", "cancelled", "paid", "overdue"}, states("draft", invoiceFlow))
}

func TestRound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v     float64
		scale int
		want  float64
	}{
		{1.2345, 3, 1.235}, {1.005, 2, 1.01}, {0.1 + 0.2, 2, 0.3}, {119.0, 2, 119}, {-1.5, 0, -2}, {12345678.1234567, 4, 12345678.1235},
	} {
		assert.Equal(t, tt.want, round(tt.v, tt.scale), "%v to %d", tt.v, tt.scale)
	}
}
