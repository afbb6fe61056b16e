package main

import (
	"context"
	"database/sql"
	"flag"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/query"
)

// auditList is "waybill admin audit --org ORG": the organization's audit
// log, oldest first, one JSON object a line (see package audit).
type auditList struct {
	org string
}

// flags declares --org.
func (c *auditList) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization (required)")
}

// check requires --org, a UUID.
func (c *auditList) check() error {
	var err error
	c.org, err = parseOrgID(c.org)
	return err
}

// exec prints every entry of the organization's audit log, and of the
// whole installation's, a page at a time.
func (c *auditList) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	log := &auditdb.Log{DB: db, Dialect: d}
	out := jsonLines{}
	for after := ""; ; {
		entries, next, err := log.List(ctx, c.org, after, audit.MaxPageSize)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, e)
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// cliActor is the actor of what an admin command does: the operator on
// the command line.
var cliActor = audit.Who{Actor: audit.Actor{Kind: audit.ActorCLI}}

// appendAudit appends, in tx, the audit log entry of action done to target
// in the organization org ("" for the whole installation), by the actor of
// ctx (the CLI for the admin commands).
func appendAudit(ctx context.Context, tx auditdb.Execer, d query.Dialect, org, action string, target audit.Target, details map[string]any) error {
	who, ok := audit.FromContext(ctx)
	if !ok {
		who = audit.Who{Actor: audit.Actor{Kind: audit.ActorSystem, ID: "waybill"}}
	}
	return auditdb.Append(ctx, tx, d, &audit.Entry{OrganizationID: org, Action: action, Actor: who.Actor, Target: target,
		RemoteAddr: who.RemoteAddr, Details: details})
}

// userTarget is the target of an action on the user with id.
func userTarget(id string) audit.Target { return audit.Target{Kind: "user", ID: id} }
