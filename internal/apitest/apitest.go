// Package apitest holds what the tests of the module's HTTP APIs share: a
// tenancy.Branches over a table of branches, tokens signed like the token
// service's, and requests whose JSON answers they decode. Only tests import
// it.
package apitest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
)

// Branches is a tenancy.Branches over Table (columns id and
// organization_id) of DB, a PostgreSQL or SQLite database.
type Branches struct {
	DB    *sql.DB
	Table string // a name the test chooses, never user input
}

// Organization implements tenancy.Branches.
func (b Branches) Organization(ctx context.Context, id string) (string, error) {
	var org string
	err := b.DB.QueryRowContext(ctx, "SELECT organization_id FROM "+b.Table+" WHERE id = $1", id).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", tenancy.ErrNoBranch
	}
	return org, err
}

// List implements tenancy.Branches.
func (b Branches) List(ctx context.Context, org string) ([]string, error) {
	rows, err := b.DB.QueryContext(ctx, "SELECT id FROM "+b.Table+" WHERE organization_id = $1 ORDER BY id", org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Sign returns c as an access token of issuer signed with keys, valid for
// an hour, with the audience and role the token service gives.
func Sign(tb testing.TB, keys *bearer.KeySet, issuer string, c *bearer.Claims) string {
	tb.Helper()
	now := time.Now()
	c.Issuer, c.Audience, c.Role, c.IssuedAt, c.ExpiresAt, c.ID = issuer, bearer.Audience, bearer.Role, now.Unix(), now.Add(time.Hour).Unix(), "jti-"+c.Subject
	s, err := keys.Sign(c)
	require.NoError(tb, err)
	return s
}

// Response is an answer, its JSON body decoded.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// Code returns the error code of an error answer.
func (r Response) Code() string { s, _ := r.Body["error"].(string); return s }

// Data returns the data of a one-record answer.
func (r Response) Data() map[string]any { m, _ := r.Body["data"].(map[string]any); return m }

// List returns the data of a list answer.
func (r Response) List() []any { l, _ := r.Body["data"].([]any); return l }

// Do sends a request with a bearer token (none when token is "") and a
// JSON body (none when body is ""), and returns the answer. It may run on
// any goroutine: it returns its failures.
func Do(method, url, token, body string) (Response, error) {
	return DoWith(method, url, token, body, nil)
}

// DoWith is Do with more request headers.
func DoWith(method, url, token, body string, header map[string]string) (Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return Response{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return Send(req)
}

// Send sends req and returns the answer.
func Send(req *http.Request) (Response, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return Response{}, err
	}
	r := Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && req.Method != http.MethodHead {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			return r, fmt.Errorf("%w: %s", err, raw)
		}
	}
	return r, nil
}
