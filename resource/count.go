package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// Count on request (RFC 7240): a list request may say how its total is
// counted with the Prefer header.
//
//	Prefer: count=exact      the default: COUNT(*) of every matching record,
//	                         which costs as much as reading them all
//	Prefer: count=estimated  on PostgreSQL, the planner's estimate (EXPLAIN,
//	                         no table read); when that is below
//	                         ExactCountBelow, the exact count, which is cheap
//	                         there. On SQLite, the exact count.
//	Prefer: count=none       no count: pagination.total is null. For sync
//	                         jobs that page until a short page.
//
// An estimate comes from the planner's statistics of the whole table, which
// the rows of every tenant make together: with filters, it reflects how
// values are spread across all tenants. Hosts for which that matters can
// refuse the preference in their Middleware.
//
// The answer says what was applied in Preference-Applied (count=exact,
// count=estimated or count=none); without that header the total is exact.
// Every list answer carries Vary: Prefer. Other preferences, and unknown
// count values, are ignored, as RFC 7240 asks.

// ExactCountBelow is the estimate under which Prefer: count=estimated
// counts exactly after all: counting that few records is cheap, and an
// estimate of a small set is often far off.
const ExactCountBelow = 10_000

type countMode uint8

const (
	countExact countMode = iota
	countEstimated
	countNone
)

// preferredCount returns the count preference of r and whether r stated
// one.
func preferredCount(r *http.Request) (countMode, bool) {
	for _, v := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(v, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "count") {
				continue
			}
			switch strings.ToLower(strings.Trim(strings.TrimSpace(value), `"`)) {
			case "exact":
				return countExact, true
			case "estimated":
				return countEstimated, true
			case "none":
				return countNone, true
			}
		}
	}
	return countExact, false
}

// preferred reports whether r's Prefer headers hold the preference pref
// ("resolution=merge-duplicates"): its name in any case, its value quoted
// or not, parameters after a ";" ignored.
func preferred(r *http.Request, pref string) bool {
	wantName, wantValue, _ := strings.Cut(pref, "=")
	for _, v := range r.Header.Values("Prefer") {
		for p := range strings.SplitSeq(v, ",") {
			p, _, _ = strings.Cut(p, ";")
			name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(name), wantName) && strings.EqualFold(strings.Trim(strings.TrimSpace(value), `"`), wantValue) {
				return true
			}
		}
	}
	return false
}

// total counts the records of the list request q in the tenant condition
// cond as mode asks. It returns nil for countNone, and the mode it applied.
func (h *handlers) total(ctx context.Context, db querier, q *query.Query, mode countMode, cond string, args []any) (*int64, countMode, error) {
	d := h.dialect()
	if mode == countNone {
		return nil, countNone, nil
	}
	if mode == countEstimated && d == query.Postgres {
		est, err := h.estimate(ctx, db, q, cond, args)
		if err != nil {
			return nil, 0, err
		}
		if est >= ExactCountBelow {
			return &est, countEstimated, nil
		}
	}
	text, targs, err := sqlbuild.SQL(d, sqlbuild.Count(d, q, sq.Select("COUNT(*)").From(h.resource.table()).Where(cond, args...)))
	if err != nil {
		return nil, 0, err
	}
	var n int64
	if err := db.QueryRowContext(ctx, text, targs...).Scan(&n); err != nil {
		return nil, 0, err
	}
	return &n, countExact, nil
}

// estimate returns PostgreSQL's estimate of the rows that match: the Plan
// Rows of EXPLAIN, which reads statistics, not the table.
func (h *handlers) estimate(ctx context.Context, db querier, q *query.Query, cond string, args []any) (int64, error) {
	text, targs, err := sqlbuild.SQL(query.Postgres, sqlbuild.Count(query.Postgres, q, sq.Select("1").From(h.resource.table()).Where(cond, args...)))
	if err != nil {
		return 0, err
	}
	var plan []byte
	if err := db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+text, targs...).Scan(&plan); err != nil {
		return 0, err
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) == 0 {
		return 0, fmt.Errorf("resource: read EXPLAIN: %v", err)
	}
	return int64(out[0].Plan.Rows), nil
}

// String is the value of the mode in Preference-Applied.
func (m countMode) String() string {
	switch m {
	case countEstimated:
		return "count=estimated"
	case countNone:
		return "count=none"
	}
	return "count=exact"
}
