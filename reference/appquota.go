package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// appQuotaTTL is how long the server keeps the per-app overrides of
// "rest-app" (table app_quotas, set by waybill admin app set-quota) before
// it reads them again: an override takes effect on every replica within
// about this long, and no request waits for the database to learn its
// app's quota.
const appQuotaTTL = 30 * time.Second

// appQuotaLoadTimeout bounds one reading of the overrides.
const appQuotaLoadTimeout = 5 * time.Second

// appQuotas holds the per-app overrides of the "rest-app" quota, read
// whole from the database (they are few: one row per app with an
// override) and kept for appQuotaTTL. A request reads the snapshot it
// finds; the first request after the TTL starts one reading in the
// background and goes on with the old snapshot. A reading that fails keeps
// the old snapshot and is logged.
type appQuotas struct {
	db     *sql.DB
	logger *slog.Logger
	now    func() time.Time // nil: time.Now

	snap    atomic.Pointer[quotaSnapshot]
	loading atomic.Bool
}

// quotaSnapshot is the overrides as one reading found them.
type quotaSnapshot struct {
	byClient map[string]int // requests per minute, by client id
	at       time.Time
}

// newAppQuotas returns the overrides of db, read once now; a failed first
// reading is logged and the server starts without overrides.
func newAppQuotas(ctx context.Context, db *sql.DB, logger *slog.Logger) *appQuotas {
	q := &appQuotas{db: db, logger: logger}
	if err := q.load(ctx); err != nil {
		logger.Warn("rate limits: the per-app quotas could not be read; every app has --rate-rest-app (by default no quota of its own) until they are", "error", err.Error())
		q.snap.Store(&quotaSnapshot{at: q.clock()})
	}
	return q
}

func (q *appQuotas) clock() time.Time {
	if q.now != nil {
		return q.now()
	}
	return time.Now()
}

// load reads every override.
func (q *appQuotas) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, appQuotaLoadTimeout)
	defer cancel()
	rows, err := q.db.QueryContext(ctx, "SELECT client_id, rest_per_minute FROM app_quotas")
	if err != nil {
		return fmt.Errorf("app quotas: %w", err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return fmt.Errorf("app quotas: %w", err)
		}
		m[id] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("app quotas: %w", err)
	}
	q.snap.Store(&quotaSnapshot{byClient: m, at: q.clock()})
	return nil
}

// quota returns the override of the app clientID, if it has one. An old
// snapshot starts a reading in the background, one at a time.
func (q *appQuotas) quota(clientID string) (int, bool) {
	s := q.snap.Load()
	if q.clock().Sub(s.at) >= appQuotaTTL && q.loading.CompareAndSwap(false, true) {
		go func() {
			defer q.loading.Store(false)
			if err := q.load(context.Background()); err != nil {
				q.logger.Warn("rate limits: the per-app quotas could not be read again; the last ones hold", "error", err.Error())
				// Try again after another TTL, not on the next request.
				q.snap.Store(&quotaSnapshot{byClient: s.byClient, at: q.clock()})
			}
		}()
	}
	n, ok := s.byClient[clientID]
	return n, ok
}

// restAppQuota is the ratelimit.Policy.Quota of "rest-app": the override
// of the token's app, if any.
func (q *appQuotas) restAppQuota(r *http.Request, _ string) (int, bool) {
	t, ok := tenancy.FromContext(r.Context())
	if !ok || t.Claims == nil || t.Claims.ClientID == "" {
		return 0, false
	}
	return q.quota(t.Claims.ClientID)
}

// appSetQuota is "waybill admin app set-quota --client-id ID
// (--rest-per-minute N | --default)".
type appSetQuota struct {
	clientID string
	perMin   int
	def      bool
}

// flags declares --client-id, --rest-per-minute and --default.
func (c *appSetQuota) flags(fs *flag.FlagSet) {
	c.perMin = -1
	fs.StringVar(&c.clientID, "client-id", "", "`id` of the app (required)")
	fs.Var(quotaFlag{&c.perMin}, "rest-per-minute", "`N` requests per minute of the app to the REST API within its organization, instead of --rate-rest-app (also when that is unset); 0 exempts it from that limit (its organization's still holds)")
	fs.BoolVar(&c.def, "default", false, "remove the app's override: it has --rate-rest-app again (by default, no quota of its own)")
}

// check requires --client-id and one of --rest-per-minute and --default.
func (c *appSetQuota) check() error {
	switch {
	case c.clientID == "":
		return errors.New("--client-id is required")
	case (c.perMin >= 0) == c.def:
		return errors.New("give one of --rest-per-minute N and --default")
	}
	return nil
}

// appQuotaOut is what set-quota prints: the app's override, null for none.
type appQuotaOut struct {
	ClientID      string `json:"client_id"`
	RESTPerMinute *int   `json:"rest_per_minute"`
}

// exec stores or removes the override of an app that exists.
func (c *appSetQuota) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	var org string
	err := db.QueryRowContext(ctx, "SELECT organization_id FROM oauth_apps WHERE client_id = $1", c.clientID).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no app %s", c.clientID)
	}
	if err != nil {
		return nil, fmt.Errorf("find the app: %w", err)
	}
	out := appQuotaOut{ClientID: c.clientID}
	details := map[string]any{"rest_per_minute": nil}
	err = inTx(ctx, db, func(tx *sql.Tx) error {
		var err error
		if c.def {
			_, err = tx.ExecContext(ctx, "DELETE FROM app_quotas WHERE client_id = $1", c.clientID)
		} else {
			_, err = tx.ExecContext(ctx, "INSERT INTO app_quotas (client_id, rest_per_minute) VALUES ($1, $2) "+
				"ON CONFLICT (client_id) DO UPDATE SET rest_per_minute = excluded.rest_per_minute", c.clientID, c.perMin)
			out.RESTPerMinute, details["rest_per_minute"] = &c.perMin, c.perMin
		}
		if err != nil {
			return fmt.Errorf("set the quota: %w", err)
		}
		return appendAudit(ctx, tx, d, org, audit.AppQuotaSet, audit.Target{Kind: "app", ID: c.clientID}, details)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
