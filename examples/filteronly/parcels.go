package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	sq "github.com/Masterminds/squirrel"
	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite": no cgo

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// parcel is one row of the parcels table, as the API returns it.
type parcel struct {
	ID             string  `json:"id"`
	TrackingNumber string  `json:"tracking_number"`
	Reference      string  `json:"reference"`
	Status         string  `json:"status"`
	WeightKg       float64 `json:"weight_kg"`
	Pieces         int64   `json:"pieces"`
	Insured        bool    `json:"insured"`
	ShippedOn      *string `json:"shipped_on"` // YYYY-MM-DD or null
	CreatedAt      string  `json:"created_at"`
}

// parcelSchema is the whitelist of GET /parcels: the fields a client may
// filter and sort on, with their types. Anything else is refused with a 400
// that names the field.
func parcelSchema() *query.Schema {
	return &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "tracking_number", Type: query.String, Filterable: true, Sortable: true},
			{Name: "reference", Type: query.String, Filterable: true},
			{Name: "status", Type: query.Enum, Values: []string{"registered", "in_transit", "delivered", "returned"}, Filterable: true, Sortable: true},
			{Name: "weight_kg", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "pieces", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "insured", Type: query.Boolean, Filterable: true},
			{Name: "shipped_on", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
		},
		MaxLimit:    100,
		DefaultSort: "created_at:desc",
	}
}

// openDB opens the SQLite file at path, creates the parcels table if it is
// missing, and seeds a few parcels when the table is empty.
func openDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	if err := setUp(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("set up %s: %w", path, err)
	}
	return db, nil
}

func setUp(db *sql.DB) error {
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS parcels (
		id TEXT PRIMARY KEY, tracking_number TEXT NOT NULL UNIQUE, reference TEXT NOT NULL,
		status TEXT NOT NULL, weight_kg REAL NOT NULL, pieces INTEGER NOT NULL,
		insured INTEGER NOT NULL, shipped_on TEXT, created_at TEXT NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM parcels").Scan(&n); err != nil || n > 0 {
		return err
	}
	day := func(s string) *string { return &s }
	created := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, p := range []parcel{
		{"7d1f0000-0000-4000-8000-000000000001", "WB-1001", "PO_2026_001", "delivered", 2.5, 1, false, day("2026-03-02"), ""},
		{"7d1f0000-0000-4000-8000-000000000002", "WB-1002", "PO-2026-002", "in_transit", 12, 3, true, day("2026-03-04"), ""},
		{"7d1f0000-0000-4000-8000-000000000003", "WB-1003", "PO_2026_003", "in_transit", 0.8, 1, false, day("2026-03-05"), ""},
		{"7d1f0000-0000-4000-8000-000000000004", "WB-1004", "RMA-77", "returned", 4.2, 2, true, day("2026-02-20"), ""},
		{"7d1f0000-0000-4000-8000-000000000005", "WB-1005", "PO-2026-005", "registered", 30.5, 6, true, nil, ""},
		{"7d1f0000-0000-4000-8000-000000000006", "WB-1006", "po_2026_006", "registered", 7, 1, false, nil, ""},
	} {
		// Timestamps are kept as fixed-width UTC text, so that text order is
		// time order; query.SQLite.Timestamp writes that layout.
		if _, err := db.Exec("INSERT INTO parcels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			p.ID, p.TrackingNumber, p.Reference, p.Status, p.WeightKg, p.Pieces, p.Insured, p.ShippedOn,
			query.SQLite.Timestamp(created.Add(time.Duration(i)*time.Hour))); err != nil {
			return err
		}
	}
	return nil
}

// listParcels returns GET /parcels: the query string is parsed against
// parcelSchema, compiled to SQLite SQL whose values are all bound
// parameters, and answered as
// {"data": [...], "pagination": {"limit", "offset", "total"}}.
func listParcels(db *sql.DB) (http.HandlerFunc, error) {
	schema := parcelSchema()
	if err := schema.Validate(); err != nil {
		return nil, err
	}
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := schema.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, err) // 400 invalid_request naming the field
			return
		}
		d := query.SQLite
		// The caller starts each SELECT (and could add its own WHERE, a
		// tenant say); sqlbuild's Count and Page add the filters, order
		// and page.
		countSQL, countArgs, err := sqlbuild.SQL(d, sqlbuild.Count(d, q, sq.Select("COUNT(*)").From("parcels")))
		if err != nil {
			writeError(w, err)
			return
		}
		pageSQL, pageArgs, err := sqlbuild.SQL(d, sqlbuild.Page(d, q, sq.Select("id", "tracking_number", "reference", "status",
			"weight_kg", "pieces", "insured", "shipped_on", "created_at").From("parcels")))
		if err != nil {
			writeError(w, err)
			return
		}
		var total int64
		if err := db.QueryRowContext(r.Context(), countSQL, countArgs...).Scan(&total); err != nil {
			writeError(w, err)
			return
		}
		rows, err := db.QueryContext(r.Context(), pageSQL, pageArgs...)
		if err != nil {
			writeError(w, err)
			return
		}
		defer rows.Close()
		parcels := []parcel{}
		for rows.Next() {
			var p parcel
			if err := rows.Scan(&p.ID, &p.TrackingNumber, &p.Reference, &p.Status, &p.WeightKg,
				&p.Pieces, &p.Insured, &p.ShippedOn, &p.CreatedAt); err != nil {
				writeError(w, err)
				return
			}
			parcels = append(parcels, p)
		}
		if err := rows.Err(); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"data":       parcels,
			"pagination": map[string]any{"limit": q.Limit, "offset": q.Offset, "total": total},
		})
	}, nil
}

// writeError answers with the status, code and description of an
// *apierrors.Error (every error of query is one), and with a 500 that
// reveals nothing of any other error.
func writeError(w http.ResponseWriter, err error) {
	var e *apierrors.Error
	if !errors.As(err, &e) {
		log.Printf("list parcels: %v", err)
		e = apierrors.Internal(err)
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Code, "error_description": e.Description})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(body); err != nil {
		log.Printf("write response: %v", err)
	}
}
