package main

import (
	"slices"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/numbering"
	"github.com/waybillhq/waybill/tenancy"
)

// This file declares the fifteen resources of the transport management API:
// their fields, whitelists, bounds, references and the hooks that carry
// their domain rules (rules.go). The tables and views they read are in
// migrations/*/0002_resources.sql, one column per field.
//
// Conventions of the declarations below:
//   - every field is filterable (with every operator its type allows);
//     free text that nobody orders by (comments, descriptions, addresses,
//     phone numbers) is not sortable;
//   - a field that a client may leave out and that has no natural "unknown"
//     gets a default on create (resource.Default), so a record never holds
//     NULL where the field is not Nullable;
//   - numbers are bounded below by 0 and above by what their column holds,
//     and rounded to the column's scale before they are stored
//     (resource.Rounded), so that PostgreSQL and SQLite keep the same value;
//   - generated numbers (quotation_number, ...) are never writable.

// Upper bounds of numeric fields, inside what their columns hold
// (numeric(14,3), numeric(14,2), numeric(14,4), integer).
var (
	maxWeightKg = resource.Bound(1e9)  // a million tonnes
	maxVolumeM3 = resource.Bound(1e7)  // ten million cubic metres
	maxPackages = resource.Bound(1e6)  // a million packages
	maxAmount   = resource.Bound(1e10) // money, in the currency's unit
	maxRate     = resource.Bound(1e6)  // a price per kg or m3
	zero        = resource.Bound(0)
)

// Maximum lengths of strings, in characters.
const (
	nameLength    = 200
	addressLength = 500
	textLength    = 2000
	codeLength    = 50
)

// resources returns the declarations of every resource the reference
// server serves: the organization-scoped ones, then the branch-scoped ones,
// then the branch-or-null ones.
func resources() []*resource.Resource {
	return []*resource.Resource{
		branchesResource(),
		organizationsResource(),
		usersResource(),
		masterDataResource(),
		vehiclesResource(),
		accountsResource(),
		ordersResource(),
		projectsResource(),
		quotationsResource(),
		shipmentsResource(),
		tripsResource(),
		invoicesResource(),
		itemsResource(),
		tariffsResource(),
		zonesResource(),
	}
}

// Read-only, organization-scoped resources.

// branchesResource lists the branches of the organization.
func branchesResource() *resource.Resource {
	return &resource.Resource{
		Name:        "branches",
		Table:       "api_branches",
		ScopeType:   tenancy.Organization,
		ReadOnly:    true,
		Description: "The branches of the organization: the {scopeId} of branch-scoped resources. Read-only; branches are created with `waybill admin branch create`.",
		DefaultSort: "name:asc",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Filterable: true, Sortable: true, Description: "Name of the branch."},
		},
	}
}

// organizationsResource is the token's organization itself, as a list of one.
func organizationsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "organizations",
		Table:       "api_organizations",
		ScopeType:   tenancy.Organization,
		ReadOnly:    true,
		Description: "The organization of the token, as a list of one record. Read-only.",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Filterable: true, Sortable: true, Description: "Name of the organization."},
		},
	}
}

// usersResource lists the members of the organization.
func usersResource() *resource.Resource {
	return &resource.Resource{
		Name:        "users",
		Table:       "api_users",
		ScopeType:   tenancy.Organization,
		ReadOnly:    true,
		Description: "The users who are members of the organization. Read-only; users are created with `waybill admin user create`.",
		DefaultSort: "email:asc",
		Fields: []resource.Field{
			{Name: "email", Type: query.String, Filterable: true, Sortable: true, Description: "Email address the user signs in with, in lower case."},
			{Name: "admin", Type: query.Boolean, Filterable: true, Sortable: true, Description: "Whether the user administers the organization (and may register apps)."},
		},
	}
}

// masterDataCategories are the categories of the organization's reference
// lists.
var masterDataCategories = []string{"package_type", "unit", "currency", "country", "vehicle_type"}

// masterDataResource lists the organization's reference lists.
func masterDataResource() *resource.Resource {
	return &resource.Resource{
		Name:        "master_data",
		ScopeType:   tenancy.Organization,
		ReadOnly:    true,
		Description: "The organization's reference lists — package types, units, currencies, countries and vehicle types — as {category, code, label} records. Read-only; seeded for every organization.",
		DefaultSort: "category:asc,code:asc",
		Fields: []resource.Field{
			{Name: "category", Type: query.Enum, Values: masterDataCategories, Filterable: true, Sortable: true, Description: "The list the entry belongs to."},
			{Name: "code", Type: query.String, Filterable: true, Sortable: true, Description: "The entry's code, unique in its category: what other records hold, e.g. the currency `EUR`, the unit `kg`, the country `DE`."},
			{Name: "label", Type: query.String, Filterable: true, Sortable: true, Description: "The entry's name for people, e.g. `Euro`."},
		},
	}
}

// Writable, organization-scoped.

// vehicleTypes are the values of vehicles.vehicle_type; master data lists
// them too.
var vehicleTypes = []string{"truck", "van", "trailer", "tractor", "car"}

// vehiclesResource is the organization's fleet, shared by its branches.
func vehiclesResource() *resource.Resource {
	return &resource.Resource{
		Name:        "vehicles",
		ExternalID:  true,
		ScopeType:   tenancy.Organization,
		Description: "The organization's fleet, which every branch plans trips with.",
		Fields: []resource.Field{
			{Name: "plate", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 20,
				Description: "Registration plate, stored trimmed and in upper case; unique in the organization (a duplicate is create_failed)."},
			{Name: "vehicle_type", Type: query.Enum, Values: vehicleTypes, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Kind of vehicle."},
			{Name: "capacity_kg", Type: query.Number, Min: zero, Max: maxWeightKg, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Payload in kilograms (3 decimals); 0 when unknown or not applicable (a tractor). Default 0."},
			{Name: "capacity_m3", Type: query.Number, Min: zero, Max: maxVolumeM3, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Load volume in cubic metres (3 decimals). Default 0."},
			{Name: "active", Type: query.Boolean, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Whether the vehicle is in service. Default true."},
		},
		Hooks: resource.Combine(
			resource.Default(resource.Record{"capacity_kg": 0.0, "capacity_m3": 0.0, "active": true}),
			resource.Upper("plate"),
			resource.Trim("plate"),
			resource.Rounded(map[string]int{"capacity_kg": 3, "capacity_m3": 3}),
		),
	}
}

// Writable, branch-scoped.

// accountsResource holds the branch's customers and carriers.
func accountsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "accounts",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "The branch's business partners: customers who order transport and carriers who perform it.",
		Fields: []resource.Field{
			{Name: "company_name", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Legal name of the company."},
			{Name: "email", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, MaxLength: 254,
				Description: "Contact email address, trimmed; null when not given. Returned as stored: an empty string sent stays empty."},
			{Name: "phone", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, MaxLength: codeLength,
				Description: "Contact phone number; null when not given. Returned as stored: an empty string sent stays empty."},
			{Name: "account_type", Type: query.Enum, Values: []string{"customer", "carrier"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Whether the account is a customer or a carrier. Default customer."},
			{Name: "status", Type: query.Enum, Values: []string{"active", "inactive", "blocked"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Account status: active, inactive or blocked. Default active."},
			{Name: "comment", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, MaxLength: textLength,
				Description: "Free-text note; null when there is none."},
		},
		Hooks: resource.Combine(
			resource.Default(resource.Record{"account_type": "customer", "status": "active"}),
			resource.Trim("company_name"),
			emailAddress("email"),
		),
	}
}

// Status flows of the branch-scoped resources. next[from] lists the states
// from may move to; a state without an entry is final.
var (
	quotationFlow = map[string][]string{
		"draft": {"sent", "accepted", "rejected", "cancelled"},
		"sent":  {"accepted", "rejected", "expired", "cancelled"},
	}
	orderFlow = map[string][]string{
		"draft":      {"confirmed", "cancelled"},
		"confirmed":  {"in_transit", "cancelled"},
		"in_transit": {"delivered"},
	}
	shipmentFlow = map[string][]string{
		"planned":    {"picked_up", "exception", "cancelled"},
		"picked_up":  {"in_transit", "exception"},
		"in_transit": {"delivered", "exception"},
		"exception":  {"in_transit", "delivered", "cancelled"},
	}
	tripFlow = map[string][]string{
		"planned":     {"in_progress", "cancelled"},
		"in_progress": {"completed", "cancelled"},
	}
	invoiceFlow = map[string][]string{
		"draft":   {"issued", "cancelled"},
		"issued":  {"paid", "overdue", "cancelled"},
		"overdue": {"paid", "cancelled"},
	}
)

// states returns the states of a flow in a stable order: the initial one,
// then every state reachable, each once.
func states(initial string, flow map[string][]string) []string {
	out := []string{initial}
	for i := 0; i < len(out); i++ {
		for _, s := range flow[out[i]] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// quotationsResource is the quotations of a branch: numbered per branch
// (Q-2026-000042), valid_until not before quotation_date, and the status
// flow draft → sent | accepted | rejected | cancelled, sent → accepted |
// rejected | expired | cancelled, the last four final.
func quotationsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "quotations",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		MaxLimit:    1000,
		Description: "Price offers to an account of the branch. Status flow: draft → sent | accepted | rejected | cancelled; sent → accepted | rejected | expired | cancelled; accepted, rejected, expired and cancelled are final.",
		Fields: []resource.Field{
			{Name: "quotation_number", Type: query.String, Filterable: true, Sortable: true,
				Description: "Number generated by the server, per branch and year: `Q-2026-000042`. Never writable."},
			{Name: "account_id", Type: query.UUID, References: "accounts", Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The account (of the same branch) the quotation is made to."},
			{Name: "quotation_date", Type: query.Date, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Date of the quotation, YYYY-MM-DD."},
			{Name: "valid_until", Type: query.Date, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Last day the offer holds, YYYY-MM-DD; not before quotation_date."},
			{Name: "status", Type: query.Enum, Values: states("draft", quotationFlow), Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "draft (default), sent, accepted, rejected, expired or cancelled; moves only along the status flow."},
			{Name: "total_weight_kg", Type: query.Number, Min: zero, Max: maxWeightKg, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Total weight in kilograms (3 decimals). Default 0."},
			{Name: "total_volume_m3", Type: query.Number, Min: zero, Max: maxVolumeM3, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Total volume in cubic metres (3 decimals). Default 0."},
			{Name: "total_packages", Type: query.Integer, Min: zero, Max: maxPackages, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Total number of packages. Default 0."},
		},
		Hooks: resource.Combine(
			resource.StatusFlow("status", "draft", quotationFlow),
			resource.Default(resource.Record{"total_weight_kg": 0.0, "total_volume_m3": 0.0, "total_packages": int64(0)}),
			resource.Rounded(map[string]int{"total_weight_kg": 3, "total_volume_m3": 3}),
			resource.NotBefore("valid_until", "quotation_date"),
			numbering.Hooks("quotation_number", "Q", "quotation"),
		),
	}
}

// projectsResource groups the orders of one undertaking.
func projectsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "projects",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "Projects group the orders of one undertaking (a construction site, a season's contract), optionally for one account.",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Name of the project."},
			{Name: "code", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: codeLength,
				Description: "Short code of the project, unique in the branch (a duplicate is create_failed); null when none."},
			{Name: "account_id", Type: query.UUID, References: "accounts", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The account (of the same branch) the project is for; null when none."},
			{Name: "status", Type: query.Enum, Values: []string{"active", "closed"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "active (default) or closed; a closed project may be reopened."},
			{Name: "start_date", Type: query.Date, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "First day of the project, YYYY-MM-DD; null when open."},
			{Name: "end_date", Type: query.Date, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Last day of the project, YYYY-MM-DD; not before start_date; null when open."},
			{Name: "description", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, MaxLength: textLength,
				Description: "Free-text description; null when none."},
		},
		Hooks: resource.Combine(
			resource.Default(resource.Record{"status": "active"}),
			resource.Trim("name"),
			resource.NotBefore("end_date", "start_date"),
		),
	}
}

// ordersResource holds the transport orders of the branch.
func ordersResource() *resource.Resource {
	return &resource.Resource{
		Name:        "orders",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "Transport orders: goods to pick up at one address and deliver to another, within time windows, for an account. Status flow: draft → confirmed | cancelled; confirmed → in_transit | cancelled; in_transit → delivered; delivered and cancelled are final.",
		Fields: []resource.Field{
			{Name: "order_number", Type: query.String, Filterable: true, Sortable: true,
				Description: "Number generated by the server, per branch and year: `O-2026-000042`. Never writable."},
			{Name: "account_id", Type: query.UUID, References: "accounts", Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The ordering account, of the same branch."},
			{Name: "project_id", Type: query.UUID, References: "projects", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The project (of the same branch) the order belongs to; null when none."},
			{Name: "quotation_id", Type: query.UUID, References: "quotations", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The quotation (of the same branch) the order was placed on; null when none."},
			{Name: "status", Type: query.Enum, Values: states("draft", orderFlow), Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "draft (default), confirmed, in_transit, delivered or cancelled; moves only along the status flow."},
			{Name: "pickup_address", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, MaxLength: addressLength,
				Description: "Where the goods are picked up: street, postal code, city, country."},
			{Name: "pickup_from", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Start of the pickup window (RFC 3339); null when open."},
			{Name: "pickup_until", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "End of the pickup window (RFC 3339); not before pickup_from; null when open."},
			{Name: "delivery_address", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, MaxLength: addressLength,
				Description: "Where the goods are delivered."},
			{Name: "delivery_from", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Start of the delivery window (RFC 3339); not before pickup_from; null when open."},
			{Name: "delivery_until", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "End of the delivery window (RFC 3339); not before delivery_from; null when open."},
			{Name: "weight_kg", Type: query.Number, Min: zero, Max: maxWeightKg, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Gross weight in kilograms (3 decimals). Default 0."},
			{Name: "volume_m3", Type: query.Number, Min: zero, Max: maxVolumeM3, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Volume in cubic metres (3 decimals). Default 0."},
			{Name: "packages", Type: query.Integer, Min: zero, Max: maxPackages, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Number of packages. Default 0."},
			{Name: "reference", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: codeLength,
				Description: "The customer's own reference (their purchase order number, say); null when none."},
		},
		Hooks: resource.Combine(
			resource.StatusFlow("status", "draft", orderFlow),
			resource.Default(resource.Record{"weight_kg": 0.0, "volume_m3": 0.0, "packages": int64(0)}),
			resource.Trim("pickup_address", "delivery_address"),
			resource.Rounded(map[string]int{"weight_kg": 3, "volume_m3": 3}),
			resource.NotBefore("pickup_until", "pickup_from"),
			resource.NotBefore("delivery_from", "pickup_from"),
			resource.NotBefore("delivery_until", "delivery_from"),
			numbering.Hooks("order_number", "O", "order"),
		),
	}
}

// shipmentsResource holds what is physically moved for an order.
func shipmentsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "shipments",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "Consignments moved for an order, each with a tracking number, optionally on a trip. Status flow: planned → picked_up | exception | cancelled; picked_up → in_transit | exception; in_transit → delivered | exception; exception → in_transit | delivered | cancelled; delivered and cancelled are final.",
		Fields: []resource.Field{
			{Name: "tracking_number", Type: query.String, Filterable: true, Sortable: true,
				Description: "Tracking number generated by the server, per branch and year: `S-2026-000042`. Never writable."},
			{Name: "order_id", Type: query.UUID, References: "orders", Required: true, Create: true, Filterable: true, Sortable: true,
				Description: "The order (of the same branch) the shipment serves; set on create only."},
			{Name: "trip_id", Type: query.UUID, References: "trips", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The trip (of the same branch) that carries the shipment; null until it is planned on one."},
			{Name: "status", Type: query.Enum, Values: states("planned", shipmentFlow), Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "planned (default), picked_up, in_transit, delivered, exception or cancelled; moves only along the status flow."},
			{Name: "weight_kg", Type: query.Number, Min: zero, Max: maxWeightKg, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Gross weight in kilograms (3 decimals). Default 0."},
			{Name: "volume_m3", Type: query.Number, Min: zero, Max: maxVolumeM3, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Volume in cubic metres (3 decimals). Default 0."},
			{Name: "packages", Type: query.Integer, Min: zero, Max: maxPackages, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Number of packages. Default 0."},
			{Name: "delivered_at", Type: query.Timestamp, Nullable: true, Filterable: true, Sortable: true,
				Description: "When the shipment moved to delivered, set by the server; null before."},
		},
		Hooks: resource.Combine(
			resource.StatusFlow("status", "planned", shipmentFlow),
			resource.Default(resource.Record{"weight_kg": 0.0, "volume_m3": 0.0, "packages": int64(0)}),
			resource.Rounded(map[string]int{"weight_kg": 3, "volume_m3": 3}),
			stampOnStatus("status", "delivered", "delivered_at"),
			numbering.Hooks("tracking_number", "S", "shipment"),
		),
	}
}

// tripsResource holds the runs of a vehicle and its driver.
func tripsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "trips",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "Runs of one vehicle and driver that carry shipments, with planned and actual times. Status flow: planned → in_progress | cancelled; in_progress → completed | cancelled; completed and cancelled are final.",
		Fields: []resource.Field{
			{Name: "trip_number", Type: query.String, Filterable: true, Sortable: true,
				Description: "Number generated by the server, per branch and year: `T-2026-000042`. Never writable."},
			{Name: "vehicle_id", Type: query.UUID, References: "vehicles", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The vehicle (of the organization's fleet) that runs the trip; null until assigned."},
			{Name: "driver_name", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Name of the driver; null until assigned."},
			{Name: "driver_phone", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, MaxLength: codeLength,
				Description: "Phone number of the driver on the road; null when unknown."},
			{Name: "status", Type: query.Enum, Values: states("planned", tripFlow), Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "planned (default), in_progress, completed or cancelled; moves only along the status flow."},
			{Name: "planned_start", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Planned departure (RFC 3339); null when not planned yet."},
			{Name: "planned_end", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Planned arrival (RFC 3339); not before planned_start."},
			{Name: "actual_start", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Actual departure (RFC 3339); set to the time of the move to in_progress unless given."},
			{Name: "actual_end", Type: query.Timestamp, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Actual arrival (RFC 3339); not before actual_start; set to the time of the move to completed unless given."},
		},
		Hooks: resource.Combine(
			resource.StatusFlow("status", "planned", tripFlow),
			stampOnStatus("status", "in_progress", "actual_start"),
			stampOnStatus("status", "completed", "actual_end"),
			resource.NotBefore("planned_end", "planned_start"),
			resource.NotBefore("actual_end", "actual_start"),
			numbering.Hooks("trip_number", "T", "trip"),
		),
	}
}

// invoicesResource holds the invoices of the branch to its accounts.
func invoicesResource() *resource.Resource {
	return &resource.Resource{
		Name:        "invoices",
		ExternalID:  true,
		ScopeType:   tenancy.Branch,
		Description: "Invoices to an account. total_amount is always net_amount + tax_amount: left out, it is computed. Status flow: draft → issued | cancelled; issued → paid | overdue | cancelled; overdue → paid | cancelled; paid and cancelled are final. Once issued, only the status may change, and only drafts may be deleted.",
		Fields: []resource.Field{
			{Name: "invoice_number", Type: query.String, Filterable: true, Sortable: true,
				Description: "Number generated by the server, per branch and year: `INV-2026-000042`. Never writable."},
			{Name: "account_id", Type: query.UUID, References: "accounts", Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The invoiced account, of the same branch."},
			{Name: "order_id", Type: query.UUID, References: "orders", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The order (of the same branch) invoiced; null for an invoice of several orders or of none."},
			{Name: "invoice_date", Type: query.Date, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Date of the invoice, YYYY-MM-DD."},
			{Name: "due_date", Type: query.Date, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Payment due date, YYYY-MM-DD; not before invoice_date."},
			{Name: "currency", Type: query.String, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 3,
				Description: "ISO 4217 currency code: three upper-case letters. Default EUR."},
			{Name: "net_amount", Type: query.Number, Min: zero, Max: maxAmount, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Amount before tax (2 decimals). Default 0."},
			{Name: "tax_amount", Type: query.Number, Min: zero, Max: maxAmount, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Tax (2 decimals). Default 0."},
			{Name: "total_amount", Type: query.Number, Min: zero, Max: maxAmount, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "net_amount + tax_amount (2 decimals): computed when left out; a different value is refused."},
			{Name: "status", Type: query.Enum, Values: states("draft", invoiceFlow), Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "draft (default), issued, paid, overdue or cancelled; moves only along the status flow."},
		},
		Hooks: resource.Combine(
			resource.LockedUnless("status", "draft"),
			resource.StatusFlow("status", "draft", invoiceFlow),
			resource.Default(resource.Record{"currency": "EUR", "net_amount": 0.0, "tax_amount": 0.0}),
			currencyCode("currency"),
			resource.Rounded(map[string]int{"net_amount": 2, "tax_amount": 2, "total_amount": 2}),
			resource.Sum("total_amount", "net_amount", "tax_amount"),
			resource.NotBefore("due_date", "invoice_date"),
			numbering.Hooks("invoice_number", "INV", "invoice"),
		),
	}
}

// Writable, branch-or-null: records of one branch, or of the whole
// organization (branch_id NULL) that every branch sees.

// itemsResource is the catalogue of goods.
func itemsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "items",
		ExternalID:  true,
		ScopeType:   tenancy.BranchOrNull,
		Description: "The catalogue of goods that orders carry, with their unit weight and volume. A branch sees its own items and the organization-wide ones.",
		Fields: []resource.Field{
			{Name: "sku", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: codeLength,
				Description: "Stock-keeping unit, unique among the items of a branch and among the organization-wide ones (a duplicate is create_failed); null when none."},
			{Name: "name", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Name of the item."},
			{Name: "unit", Type: query.String, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 16,
				Description: "Unit the item is counted in, a code of the `unit` master data (pcs, pal, kg, ...). Default pcs."},
			{Name: "weight_kg", Type: query.Number, Min: zero, Max: maxWeightKg, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Weight of one unit in kilograms (3 decimals). Default 0."},
			{Name: "volume_m3", Type: query.Number, Min: zero, Max: maxVolumeM3, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Volume of one unit in cubic metres (3 decimals). Default 0."},
		},
		Hooks: resource.Combine(
			resource.Default(resource.Record{"unit": "pcs", "weight_kg": 0.0, "volume_m3": 0.0}),
			resource.Trim("name", "unit"),
			resource.Rounded(map[string]int{"weight_kg": 3, "volume_m3": 3}),
		),
	}
}

// tariffsResource holds the prices of transport.
func tariffsResource() *resource.Resource {
	return &resource.Resource{
		Name:        "tariffs",
		ExternalID:  true,
		ScopeType:   tenancy.BranchOrNull,
		Description: "Transport prices per kilogram and per cubic metre, with a minimum price, optionally for one zone, valid over a period. A branch sees its own tariffs and the organization-wide ones.",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Name of the tariff."},
			{Name: "zone_id", Type: query.UUID, References: "zones", Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "The zone (of the branch, or organization-wide) the tariff applies to; null for every destination."},
			{Name: "price_per_kg", Type: query.Number, Min: zero, Max: maxRate, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Price per kilogram (4 decimals). Default 0."},
			{Name: "price_per_m3", Type: query.Number, Min: zero, Max: maxRate, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Price per cubic metre (4 decimals). Default 0."},
			{Name: "minimum_price", Type: query.Number, Min: zero, Max: maxAmount, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Least price of one transport (2 decimals). Default 0."},
			{Name: "currency", Type: query.String, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 3,
				Description: "ISO 4217 currency code of the prices: three upper-case letters. Default EUR."},
			{Name: "valid_from", Type: query.Date, Required: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "First day the tariff applies, YYYY-MM-DD."},
			{Name: "valid_until", Type: query.Date, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "Last day the tariff applies, YYYY-MM-DD; not before valid_from; null when open-ended."},
		},
		Hooks: resource.Combine(
			resource.Default(resource.Record{"price_per_kg": 0.0, "price_per_m3": 0.0, "minimum_price": 0.0, "currency": "EUR"}),
			resource.Trim("name"),
			currencyCode("currency"),
			resource.Rounded(map[string]int{"price_per_kg": 4, "price_per_m3": 4, "minimum_price": 2}),
			resource.NotBefore("valid_until", "valid_from"),
		),
	}
}

// zonesResource holds the geographic zones that tariffs price.
func zonesResource() *resource.Resource {
	return &resource.Resource{
		Name:        "zones",
		ExternalID:  true,
		ScopeType:   tenancy.BranchOrNull,
		Description: "Geographic zones — a country, or a range of its postal codes — that tariffs price. A branch sees its own zones and the organization-wide ones.",
		Fields: []resource.Field{
			{Name: "name", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: nameLength,
				Description: "Name of the zone."},
			{Name: "country_code", Type: query.String, Required: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 2,
				Description: "ISO 3166-1 alpha-2 country code: two upper-case letters."},
			{Name: "postal_code_from", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 20,
				Description: "First postal code of the zone; null for the whole country."},
			{Name: "postal_code_to", Type: query.String, Nullable: true, Create: true, Update: true, Filterable: true, Sortable: true, MaxLength: 20,
				Description: "Last postal code of the zone, compared as text; not before postal_code_from; null for no upper end."},
		},
		Hooks: resource.Combine(
			resource.Trim("name"),
			countryCode("country_code"),
			resource.NotBefore("postal_code_to", "postal_code_from"),
		),
	}
}
