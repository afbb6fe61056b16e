package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// masterDataEntry is one entry of an organization's reference lists.
type masterDataEntry struct {
	category, code, label string
}

// masterData are the reference lists every organization starts with (the
// master_data resource): package types, units, currencies, countries and
// vehicle types. The vehicle types are the values of vehicles.vehicle_type.
var masterData = []masterDataEntry{
	{"package_type", "pallet", "Pallet"},
	{"package_type", "euro_pallet", "Euro pallet (1200 × 800 mm)"},
	{"package_type", "industrial_pallet", "Industrial pallet (1200 × 1000 mm)"},
	{"package_type", "box", "Box"},
	{"package_type", "crate", "Crate"},
	{"package_type", "drum", "Drum"},
	{"package_type", "roll", "Roll"},
	{"package_type", "bag", "Bag"},
	{"package_type", "container_20ft", "Container, 20 ft"},
	{"package_type", "container_40ft", "Container, 40 ft"},

	{"unit", "pcs", "Pieces"},
	{"unit", "pal", "Pallets"},
	{"unit", "kg", "Kilograms"},
	{"unit", "t", "Tonnes"},
	{"unit", "m3", "Cubic metres"},
	{"unit", "l", "Litres"},
	{"unit", "ldm", "Loading metres"},
	{"unit", "km", "Kilometres"},

	{"currency", "EUR", "Euro"},
	{"currency", "USD", "US dollar"},
	{"currency", "GBP", "Pound sterling"},
	{"currency", "CHF", "Swiss franc"},
	{"currency", "PLN", "Polish złoty"},
	{"currency", "CZK", "Czech koruna"},
	{"currency", "SEK", "Swedish krona"},
	{"currency", "DKK", "Danish krone"},
	{"currency", "NOK", "Norwegian krone"},

	{"country", "AT", "Austria"},
	{"country", "BE", "Belgium"},
	{"country", "CH", "Switzerland"},
	{"country", "CZ", "Czechia"},
	{"country", "DE", "Germany"},
	{"country", "DK", "Denmark"},
	{"country", "ES", "Spain"},
	{"country", "FR", "France"},
	{"country", "GB", "United Kingdom"},
	{"country", "IE", "Ireland"},
	{"country", "IT", "Italy"},
	{"country", "LU", "Luxembourg"},
	{"country", "NL", "Netherlands"},
	{"country", "NO", "Norway"},
	{"country", "PL", "Poland"},
	{"country", "PT", "Portugal"},
	{"country", "SE", "Sweden"},
	{"country", "US", "United States"},

	{"vehicle_type", "truck", "Truck"},
	{"vehicle_type", "van", "Van"},
	{"vehicle_type", "trailer", "Trailer"},
	{"vehicle_type", "tractor", "Tractor unit"},
	{"vehicle_type", "car", "Car"},
}

// execer is what seedMasterData needs: an *sql.DB or an *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// seedMasterData gives the organization with orgID the reference lists of
// masterData, in one statement. Entries it has already are kept, so seeding
// twice changes nothing.
func seedMasterData(ctx context.Context, db execer, orgID string) error {
	var b strings.Builder
	b.WriteString("INSERT INTO master_data (id, organization_id, category, code, label) VALUES ")
	args := make([]any, 0, 5*len(masterData))
	for i, e := range masterData {
		if i > 0 {
			b.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5)
		args = append(args, newID(), orgID, e.category, e.code, e.label)
	}
	b.WriteString(" ON CONFLICT (organization_id, category, code) DO NOTHING")
	if _, err := db.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("seed master data of organization %s: %w", orgID, err)
	}
	return nil
}
