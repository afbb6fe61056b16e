package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/password"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource/numbering"
)

// The demo organization, user and app that "waybill serve --demo" seeds.
const (
	demoOrganization = "Demo Transport"
	demoEmail        = "demo@waybill.test"
	demoAppName      = "Demo integration"
	demoNorth        = "North"
	demoSouth        = "South"
	// demoRedirectURI is the demo app's redirect URI: a loopback address
	// where nothing needs to listen, since the user copies the code from
	// the browser's address bar.
	demoRedirectURI = "http://127.0.0.1:8976/callback"
	// demoFlowScope is the scope the printed authorization request asks for.
	demoFlowScope = "svc:quotations:read"
)

// demoInfo is what the demo seed prints.
type demoInfo struct {
	organizationID, northID, southID string
	clientID, clientSecret           string // the secret only when just registered
	password                         string // only when the user was just created
	userExisted                      bool
	// codeFlow is whether the demo app has demoRedirectURI, which apps of
	// demos seeded by earlier versions lack.
	codeFlow bool
}

// seedDemo seeds, once per database, the demo organization "Demo
// Transport": branches North and South, master data, the admin user
// demo@waybill.test with a random password, an app with every scope of the
// API and both branches, and a few hundred records of every writable
// resource. Everything but the app is written in one transaction; the app
// is registered right after it (the token service writes through db).
//
// It prints to out the client id, the client secret and ready curl lines
// against baseURL; on a later call, when the secret can no longer be
// shown, it prints the client id and how to rotate the secret. A row of
// demo_seed marks the database as seeded, so that replicas starting
// together seed it once.
func seedDemo(ctx context.Context, db *sql.DB, dialect query.Dialect, tokens *oauth.Server, out io.Writer, baseURL string) error {
	info, seeded, err := loadDemo(ctx, db)
	if err != nil {
		return err
	}
	if !seeded {
		pass := rand.Text()[:16]
		hash, err := password.Hash(pass)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		g := newDemoGenerator(dialect, time.Now())
		err = inTx(ctx, db, func(tx *sql.Tx) error { return g.seed(ctx, tx, &info, hash) })
		if errors.Is(err, errDemoSeeded) {
			// Another process seeded the database meanwhile.
			if info, _, err = loadDemo(ctx, db); err != nil {
				return err
			}
			return printDemoSeeded(ctx, out, tokens, info, baseURL)
		}
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if !info.userExisted {
			info.password = pass
		}
	}
	if info.clientID != "" {
		return printDemoSeeded(ctx, out, tokens, info, baseURL)
	}

	// The data is there, the app not yet: register it now, also when an
	// earlier start stopped between the two.
	if err := registerDemoApp(ctx, db, tokens, &info); err != nil {
		return err
	}
	return printDemoCreated(out, info, baseURL)
}

// loadDemo returns what demo_seed records, and whether it records
// anything.
func loadDemo(ctx context.Context, db *sql.DB) (demoInfo, bool, error) {
	var info demoInfo
	var clientID sql.NullString
	err := db.QueryRowContext(ctx, "SELECT organization_id, client_id FROM demo_seed WHERE id = 1").Scan(&info.organizationID, &clientID)
	if errors.Is(err, sql.ErrNoRows) {
		return demoInfo{}, false, nil
	}
	if err != nil {
		return demoInfo{}, false, fmt.Errorf("demo: look up the demo seed: %w", err)
	}
	info.clientID = clientID.String
	for name, p := range map[string]*string{demoNorth: &info.northID, demoSouth: &info.southID} {
		err := db.QueryRowContext(ctx, "SELECT id FROM branches WHERE organization_id = $1 AND name = $2", info.organizationID, name).Scan(p)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return demoInfo{}, false, fmt.Errorf("demo: look up branch %s: %w", name, err)
		}
	}
	return info, true, nil
}

// registerDemoApp registers the demo app and records its client id.
func registerDemoApp(ctx context.Context, db *sql.DB, tokens *oauth.Server, info *demoInfo) error {
	app, secret, err := tokens.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: info.organizationID,
		Name:           demoAppName,
		Scopes:         knownScopes(), // the change feed's and the webhooks' too
		BranchIDs:      []string{info.northID, info.southID},
		RedirectURIs:   []string{demoRedirectURI},
	})
	if err != nil {
		return fmt.Errorf("demo: register the demo app: %w", err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE demo_seed SET client_id = $1 WHERE id = 1", app.ClientID); err != nil {
		return fmt.Errorf("demo: record the demo app: %w", err)
	}
	info.clientID, info.clientSecret, info.codeFlow = app.ClientID, secret, true
	return nil
}

// printDemoCreated prints the demo's credentials and curl lines, once.
func printDemoCreated(out io.Writer, info demoInfo, baseURL string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Demo data seeded: organization %q %s, branches %s %s and %s %s.\n",
		demoOrganization, info.organizationID, demoNorth, info.northID, demoSouth, info.southID)
	switch {
	case info.password != "":
		fmt.Fprintf(&b, "  user:          %s  password: %s  (shown once)\n", demoEmail, info.password)
	case info.userExisted:
		fmt.Fprintf(&b, "  user:          %s  (existed already; its password is unchanged)\n", demoEmail)
	}
	fmt.Fprintf(&b, "  client_id:     %s\n", info.clientID)
	fmt.Fprintf(&b, "  client_secret: %s  (shown once; a new one: waybill admin app rotate-secret --client-id %s)\n", info.clientSecret, info.clientID)
	fmt.Fprintf(&b, "Get a token:\n  %s\n", tokenCurl(baseURL, info.clientID, info.clientSecret))
	fmt.Fprintf(&b, "List the quotations of the %s branch:\n  %s\n", demoNorth, listCurl(baseURL, info.northID))
	fmt.Fprintf(&b, "Follow the change feed of the organization (the creates, updates and deletes made through the API from now on, in commit order; pass its next_cursor as after):\n  %s\n",
		feedCurl(baseURL, info.organizationID))
	if info.codeFlow && (info.password != "" || info.userExisted) {
		writeCodeFlow(&b, baseURL, info.clientID, info.clientSecret)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// writeCodeFlow writes the steps of the authorization-code flow with the
// demo app: an authorization URL with a fresh PKCE pair, and the command
// that exchanges the code.
func writeCodeFlow(b *strings.Builder, baseURL, clientID, secret string) {
	verifier := oauth.NewSecret() // 43 characters of [A-Za-z0-9-_]: a valid PKCE verifier
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {demoRedirectURI},
		"scope":                 {demoFlowScope},
		"state":                 {"demo"},
		"code_challenge":        {oauth.S256Challenge(verifier)},
		"code_challenge_method": {"S256"},
	}
	fmt.Fprintf(b, "Try the authorization-code flow as the user %s:\n", demoEmail)
	fmt.Fprintf(b, "  1. Open in a browser, sign in, pick the organization and approve:\n     %s%s?%s\n", baseURL, oauth.PathAuthorize, q.Encode())
	fmt.Fprintf(b, "  2. The browser goes to %s?code=...&iss=...&state=demo where nothing listens: copy the code from the address bar.\n", demoRedirectURI)
	fmt.Fprintf(b, "  3. Within 60 seconds, exchange it for an access token and a refresh token:\n     CODE=<the code>\n     %s\n", exchangeCurl(baseURL, clientID, secret, verifier))
}

// exchangeCurl returns a curl line that redeems the code in $CODE with the
// PKCE verifier.
func exchangeCurl(baseURL, clientID, secret, verifier string) string {
	return fmt.Sprintf(`curl -s -X POST '%s%s' -u '%s:%s' -d grant_type=authorization_code -d "code=$CODE" -d redirect_uri=%s -d code_verifier=%s`,
		baseURL, oauth.PathToken, clientID, secret, url.QueryEscape(demoRedirectURI), verifier)
}

// printDemoSeeded prints what a later start can still tell: the client id,
// how to get a new secret and, when the demo app has the demo's redirect
// URI, the authorization-code flow.
func printDemoSeeded(ctx context.Context, out io.Writer, tokens *oauth.Server, info demoInfo, baseURL string) error {
	if info.clientID != "" {
		app, err := tokens.Store.App(ctx, info.clientID)
		if err != nil && !errors.Is(err, oauth.ErrNotFound) {
			return fmt.Errorf("demo: look up the demo app: %w", err)
		}
		info.codeFlow = err == nil && slices.Contains(app.RedirectURIs, demoRedirectURI)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Demo data already seeded: organization %q %s, branches %s %s and %s %s.\n",
		demoOrganization, info.organizationID, demoNorth, info.northID, demoSouth, info.southID)
	if info.clientID == "" {
		b.WriteString("  The demo app is being registered by another process; its output shows the client id and secret.\n")
	} else {
		fmt.Fprintf(&b, "  client_id: %s  (its secret was shown when the demo was seeded and cannot be shown again)\n", info.clientID)
		fmt.Fprintf(&b, "  For a new secret (the old one stops working), with the same --database-url as serve:\n%s", adminHint("app rotate-secret --client-id "+info.clientID))
		fmt.Fprintf(&b, "Then get a token:\n  %s\n", tokenCurl(baseURL, info.clientID, "SECRET"))
	}
	fmt.Fprintf(&b, "List the quotations of the %s branch:\n  %s\n", demoNorth, listCurl(baseURL, info.northID))
	fmt.Fprintf(&b, "Follow the change feed of the organization (the creates, updates and deletes made through the API from now on, in commit order; pass its next_cursor as after):\n  %s\n",
		feedCurl(baseURL, info.organizationID))
	if info.codeFlow {
		writeCodeFlow(&b, baseURL, info.clientID, "SECRET")
		fmt.Fprintf(&b, "  For a new password of %s:\n%s", demoEmail, adminHint("user set-password --email "+demoEmail+" --password NEW"))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// adminHint returns the lines that run "waybill admin args", in both forms a
// user may need: the built binary's, and that of a source checkout, where
// "go run ./reference" stands for "waybill".
func adminHint(args string) string {
	return fmt.Sprintf("  waybill admin %s\n  (from a source checkout: go run ./reference admin %s)\n", args, args)
}

// tokenCurl returns a shell line that gets a client-credentials token and
// keeps it in $TOKEN. Client ids and secrets are base64url or UUIDs: no
// character of theirs needs quoting.
func tokenCurl(baseURL, clientID, secret string) string {
	return fmt.Sprintf(`TOKEN=$(curl -s -X POST '%s/v1/oauth/token' -d grant_type=client_credentials -d client_id=%s -d client_secret=%s | sed -E 's/.*"access_token":"([^"]+)".*/\1/')`,
		baseURL, clientID, secret)
}

// listCurl returns a curl line that lists the newest quotations of a
// branch with $TOKEN.
func listCurl(baseURL, branchID string) string {
	return fmt.Sprintf(`curl -s '%s/v1/%s/quotations?limit=5&sort=quotation_date:desc' -H "Authorization: Bearer $TOKEN"`, baseURL, branchID)
}

// feedCurl returns a curl line that reads the first events of the change
// feed of the organization.
func feedCurl(baseURL, organizationID string) string {
	return fmt.Sprintf(`curl -s '%s/v1/%s/events?limit=5' -H "Authorization: Bearer $TOKEN"`, baseURL, organizationID)
}

// demoGenerator writes the demo records. Its randomness is seeded, so every
// demo holds the same records (but for ids and times).
type demoGenerator struct {
	d   query.Dialect
	now time.Time
	rnd *mathrand.Rand
}

func newDemoGenerator(d query.Dialect, now time.Time) *demoGenerator {
	return &demoGenerator{d: d, now: now.UTC().Truncate(time.Microsecond), rnd: mathrand.New(mathrand.NewPCG(2026, 42))}
}

// demoBranch is one branch of the demo and what its records refer to.
type demoBranch struct {
	id, name, city string
	customers      []string          // active customers
	accountOf      map[string]string // the account of each quotation
	projects       []string
	accepted       []string            // accepted quotations
	trips          map[string][]string // trips by status
}

// demoOrder is what shipments and invoices need of an order.
type demoOrder struct {
	id, account, status      string
	pickupFrom, deliveryFrom time.Time
	weight, volume           float64
	packages                 int
}

// errDemoSeeded is the error of demoGenerator.seed when the database was
// seeded already, by another process that got there first.
var errDemoSeeded = errors.New("the demo is seeded already")

// seed writes the demo in tx; an error rolls every row back.
func (g *demoGenerator) seed(ctx context.Context, tx *sql.Tx, info *demoInfo, passwordHash string) error {
	w := &demoWriter{ctx: ctx, tx: tx}
	org := newID()
	created := g.now.AddDate(0, -7, 0)
	w.insert("organizations", "id, name, created_at", org, demoOrganization, g.ts(created))
	if w.err != nil {
		return w.err
	}
	// The marker first: a second process waits here until the first one's
	// transaction ends, then finds the marker and gives up.
	res, err := tx.ExecContext(ctx, "INSERT INTO demo_seed (id, organization_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING", org)
	if err != nil {
		return fmt.Errorf("mark the demo seed: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mark the demo seed: %w", err)
	} else if n == 0 {
		return errDemoSeeded
	}
	info.organizationID = org

	north := &demoBranch{id: newID(), name: demoNorth, city: "Hamburg"}
	south := &demoBranch{id: newID(), name: demoSouth, city: "Munich"}
	info.northID, info.southID = north.id, south.id
	for _, b := range []*demoBranch{north, south} {
		w.insert("branches", "id, organization_id, name, created_at", b.id, org, b.name, g.ts(created))
	}
	if w.err != nil {
		return w.err
	}
	if err := seedMasterData(ctx, tx, org); err != nil {
		return err
	}
	if err := g.user(w, org, passwordHash, info); err != nil {
		return err
	}

	g.records(w, org, north, south)
	return w.err
}

// records writes the demo records of every writable resource for the
// organization and its two branches.
func (g *demoGenerator) records(w *demoWriter, org string, north, south *demoBranch) {
	vehicles := g.vehicles(w, org)
	g.pricing(w, org, north, south)
	for i, b := range []*demoBranch{north, south} {
		g.accounts(w, org, b, i)
		g.projects(w, org, b)
		g.quotations(w, org, b)
		orders := g.orders(w, org, b)
		g.trips(w, org, b, vehicles)
		g.shipments(w, org, b, orders)
		g.invoices(w, org, b, orders)
	}
}

// user creates the demo user as an admin of org, or makes an existing user
// of that email one.
func (g *demoGenerator) user(w *demoWriter, org, passwordHash string, info *demoInfo) error {
	var id string
	err := w.tx.QueryRowContext(w.ctx, "SELECT id FROM users WHERE email = $1", demoEmail).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return insertUser(w.ctx, w.tx, newID(), demoEmail, passwordHash, []string{org}, true)
	case err != nil:
		return fmt.Errorf("look up the demo user: %w", err)
	}
	info.userExisted = true
	_, err = w.tx.ExecContext(w.ctx, "INSERT INTO memberships (user_id, organization_id, admin) VALUES ($1, $2, $3)", id, org, true)
	if err != nil {
		return fmt.Errorf("make %s a member of the demo: %w", demoEmail, err)
	}
	return nil
}

// ts returns t as the dialect stores a timestamp.
func (g *demoGenerator) ts(t time.Time) any { return g.d.Timestamp(t) }

// date returns the date of t as the database stores it.
func (g *demoGenerator) date(t time.Time) any { return g.d.Date(t.UTC()) }

// pick returns a random element of list.
func pick[T any](g *demoGenerator, list []T) T { return list[g.rnd.IntN(len(list))] }

// between returns a random number in [lo, hi) rounded to scale decimals.
func (g *demoGenerator) between(lo, hi float64, scale int) float64 {
	return round(lo+g.rnd.Float64()*(hi-lo), scale)
}

// daysAgo returns a time on the day n days before now, during work hours.
func (g *demoGenerator) daysAgo(n int) time.Time {
	day := g.now.AddDate(0, 0, -n).Truncate(24 * time.Hour)
	return day.Add(time.Duration(7*60+g.rnd.IntN(10*60)) * time.Minute).Add(time.Duration(g.rnd.IntN(60)) * time.Second)
}

// number takes the next number of kind for the branch and the year of
// t, as numbering.Hooks does for the API's creates.
func (g *demoGenerator) number(w *demoWriter, b *demoBranch, prefix, kind string, t time.Time) string {
	if w.err != nil {
		return ""
	}
	n, err := numbering.Next(w.ctx, w.tx, b.id, kind, t.Year())
	if err != nil {
		w.err = err
		return ""
	}
	return numbering.Format(prefix, t.Year(), n)
}

var demoVehicles = []struct {
	plate, kind string
	kg, m3      float64
}{
	{"HH-WB 101", "truck", 18000, 82}, {"HH-WB 102", "truck", 18000, 82}, {"HH-WB 103", "truck", 12000, 55},
	{"HH-WB 201", "van", 1200, 12.5}, {"HH-WB 202", "van", 1000, 10.8}, {"HH-WB 301", "tractor", 0, 0},
	{"HH-WB 401", "trailer", 24000, 90}, {"M-WB 101", "truck", 18000, 82}, {"M-WB 102", "truck", 7500, 40},
	{"M-WB 201", "van", 1200, 12.5}, {"M-WB 301", "tractor", 0, 0}, {"M-WB 501", "car", 300, 1.2},
}

// vehicles writes the organization's fleet and returns the ids of the
// vehicles that can run a trip on their own or as a tractor.
func (g *demoGenerator) vehicles(w *demoWriter, org string) []string {
	var ids []string
	for i, v := range demoVehicles {
		id := newID()
		t := g.ts(g.daysAgo(200 - i))
		active := i != 2
		w.insert("vehicles", "id, organization_id, created_at, updated_at, plate, vehicle_type, capacity_kg, capacity_m3, active",
			id, org, t, t, v.plate, v.kind, v.kg, v.m3, active)
		if active && v.kind != "trailer" {
			ids = append(ids, id)
		}
	}
	return ids
}

var demoCompanies = []string{
	"Albrecht Maschinenbau", "Baltic Timber Trading", "Carstens Feinkost", "Delta Packaging", "Elbe Chemie",
	"Fjord Seafood Import", "Geest Agrar", "Hanse Elektronik", "Isar Möbelwerk", "Jansen Baustoffe",
	"Kieler Druckhaus", "Lindner Getränke", "Marsch Solar", "Nordsee Textil", "Oberland Papier",
	"Pfalz Weinkontor", "Quadro Medizintechnik", "Rhein Stahlhandel", "Sauer Kunststoffe", "Tegernsee Käserei",
	"Ulmer Fahrradbau", "Voss Logistikbedarf", "Weser Glaswerke", "Xaver Holzbau", "Zugspitz Outdoor",
	"Alpen Spielwaren", "Bavaria Reifen", "Chiemgau Naturkost",
}

var demoCarriers = []string{
	"Nordkurier Transporte", "Südstern Spedition", "Blitz Kurierdienst", "Eurocargo Partner", "Westwind Frachten", "Alpenland Logistik",
}

// accounts writes the branch's customers and carriers.
func (g *demoGenerator) accounts(w *demoWriter, org string, b *demoBranch, branchIndex int) {
	add := func(name, kind, status string, comment any, age int) string {
		id := newID()
		t := g.ts(g.daysAgo(age))
		slug := strings.ToLower(strings.NewReplacer(" ", "-", "ö", "oe", "ü", "ue", "ä", "ae").Replace(name))
		phone := fmt.Sprintf("+49 %s %07d", map[string]string{"Hamburg": "40", "Munich": "89"}[b.city], g.rnd.IntN(10_000_000))
		w.insert("accounts", "id, organization_id, branch_id, created_at, updated_at, company_name, email, phone, account_type, status, comment",
			id, org, b.id, t, t, name+" GmbH", "dispatch@"+slug+".example", phone, kind, status, comment)
		return id
	}
	for i := 0; i < 20; i++ {
		name := demoCompanies[(i+branchIndex*8)%len(demoCompanies)]
		status := "active"
		switch i {
		case 7, 13:
			status = "inactive"
		case 17:
			status = "blocked"
		}
		var comment any
		switch i % 5 {
		case 1:
			comment = "Deliveries only on weekdays before 14:00."
		case 3:
			comment = "Tail-lift required."
		}
		if status == "blocked" {
			comment = "Blocked: invoices overdue more than 90 days."
		}
		id := add(name, "customer", status, comment, 190-i*3)
		if status == "active" {
			b.customers = append(b.customers, id)
		}
	}
	for i := 0; i < 5; i++ {
		name := demoCarriers[(i+branchIndex)%len(demoCarriers)]
		add(name, "carrier", "active", nil, 185-i*4)
	}
}

// projects writes the branch's projects.
func (g *demoGenerator) projects(w *demoWriter, org string, b *demoBranch) {
	names := []string{"Harbour terminal expansion", "Winter season contract", "Retail store openings", "Plant relocation"}
	for i, name := range names {
		id := newID()
		created := g.daysAgo(180 - i*30)
		start := created.AddDate(0, 0, 7)
		status, end := "active", any(nil)
		if i == 0 {
			status, end = "closed", g.date(start.AddDate(0, 3, 0))
		}
		var account any
		if i%2 == 0 {
			account = pick(g, b.customers)
		}
		t := g.ts(created)
		w.insert("projects", "id, organization_id, branch_id, created_at, updated_at, name, code, account_id, status, start_date, end_date, description",
			id, org, b.id, t, t, b.city+" "+strings.ToLower(name[:1])+name[1:], fmt.Sprintf("%s-%02d", strings.ToUpper(b.name[:1]), i+1),
			account, status, g.date(start), end, nil)
		b.projects = append(b.projects, id)
	}
}

// quotations writes 60 quotations of the branch over the last six months,
// numbered in the order they were made.
func (g *demoGenerator) quotations(w *demoWriter, org string, b *demoBranch) {
	b.accountOf = map[string]string{}
	for i := 0; i < 60; i++ {
		created := g.daysAgo(180 - i*3)
		valid := created.AddDate(0, 0, 30)
		status := pick(g, []string{"draft", "sent", "sent", "accepted", "accepted", "accepted", "rejected", "cancelled"})
		if !valid.After(g.now) && (status == "draft" || status == "sent") {
			status = "expired"
		}
		id := newID()
		account := pick(g, b.customers)
		packages := 1 + g.rnd.IntN(40)
		t := g.ts(created)
		w.insert("quotations", "id, organization_id, branch_id, created_at, updated_at, quotation_number, account_id, quotation_date, valid_until, status, total_weight_kg, total_volume_m3, total_packages",
			id, org, b.id, t, t, g.number(w, b, "Q", "quotation", created), account, g.date(created), g.date(valid), status,
			round(float64(packages)*g.between(80, 600, 1), 3), g.between(0.5, 60, 3), packages)
		b.accountOf[id] = account
		if status == "accepted" {
			b.accepted = append(b.accepted, id)
		}
	}
}

var demoStreets = []string{
	"Am Sandtorkai 1", "Industriestraße 14", "Hafenstraße 7", "Gewerbepark 3", "Lagerweg 22", "Bahnhofstraße 9",
	"Kanalstraße 40", "Ringstraße 118", "Messeallee 5", "Zollhof 2",
}

var demoCities = []string{
	"20457 Hamburg", "28195 Bremen", "30159 Hannover", "10115 Berlin", "40213 Düsseldorf", "50667 Köln",
	"60311 Frankfurt am Main", "70173 Stuttgart", "80331 München", "90402 Nürnberg", "1010 Wien, AT", "3011 Rotterdam, NL",
}

// orders writes 40 orders of the branch; the older ones are delivered.
func (g *demoGenerator) orders(w *demoWriter, org string, b *demoBranch) []demoOrder {
	var orders []demoOrder
	for i := 0; i < 40; i++ {
		age := 160 - i*4
		created := g.daysAgo(age)
		o := demoOrder{id: newID(), account: pick(g, b.customers), packages: 1 + g.rnd.IntN(33)}
		var quotation, project, reference any
		if i%2 == 0 && len(b.accepted) > 0 {
			q := b.accepted[(i/2)%len(b.accepted)]
			quotation, o.account = q, b.accountOf[q]
		}
		if i%4 == 1 {
			project = pick(g, b.projects)
		}
		if i%3 != 0 {
			reference = fmt.Sprintf("PO-%06d", g.rnd.IntN(1_000_000))
		}
		o.pickupFrom = created.AddDate(0, 0, 1+g.rnd.IntN(4)).Truncate(24 * time.Hour).Add(8 * time.Hour)
		o.deliveryFrom = o.pickupFrom.AddDate(0, 0, 1+g.rnd.IntN(2))
		switch {
		case i%13 == 5:
			o.status = "cancelled"
		case o.deliveryFrom.Before(g.now.AddDate(0, 0, -2)):
			o.status = "delivered"
		case o.pickupFrom.Before(g.now):
			o.status = "in_transit"
		case i%2 == 0:
			o.status = "confirmed"
		default:
			o.status = "draft"
		}
		o.weight = round(float64(o.packages)*g.between(50, 700, 1), 3)
		o.volume = round(float64(o.packages)*g.between(0.2, 1.8, 3), 3)
		pickup := pick(g, demoStreets) + ", " + pick(g, demoCities[:4]) + ", DE"
		if b.name == demoSouth {
			pickup = pick(g, demoStreets) + ", " + pick(g, demoCities[6:10]) + ", DE"
		}
		delivery := pick(g, demoStreets) + ", " + pick(g, demoCities)
		if !strings.Contains(delivery, ", AT") && !strings.Contains(delivery, ", NL") {
			delivery += ", DE"
		}
		t := g.ts(created)
		w.insert("orders", "id, organization_id, branch_id, created_at, updated_at, order_number, account_id, project_id, quotation_id, status, pickup_address, pickup_from, pickup_until, delivery_address, delivery_from, delivery_until, weight_kg, volume_m3, packages, reference",
			o.id, org, b.id, t, t, g.number(w, b, "O", "order", created), o.account, project, quotation, o.status,
			pickup, g.ts(o.pickupFrom), g.ts(o.pickupFrom.Add(4*time.Hour)), delivery, g.ts(o.deliveryFrom), g.ts(o.deliveryFrom.Add(6*time.Hour)),
			o.weight, o.volume, o.packages, reference)
		orders = append(orders, o)
	}
	return orders
}

var demoDrivers = []string{"Jonas Becker", "Mia Schulz", "Lukas Wagner", "Emma Hoffmann", "Finn Schäfer", "Lea Koch", "Paul Richter", "Hannah Klein"}

// trips writes 15 trips of the branch: completed in the past, one in
// progress, planned ahead, one cancelled.
func (g *demoGenerator) trips(w *demoWriter, org string, b *demoBranch, vehicles []string) {
	b.trips = map[string][]string{}
	for i := 0; i < 15; i++ {
		var start time.Time
		switch {
		case i < 12:
			start = g.now.AddDate(0, 0, -150+i*12)
		case i == 12:
			start = g.now.Add(-3 * time.Hour)
		default:
			start = g.now.AddDate(0, 0, 2*(i-12))
		}
		if i != 12 {
			start = start.Truncate(24 * time.Hour).Add(6 * time.Hour)
		} else {
			start = start.Truncate(time.Minute)
		}
		end := start.Add(10 * time.Hour)
		created := start.AddDate(0, 0, -3)
		if created.After(g.now) {
			created = g.now.Add(-time.Hour)
		}
		status := "planned"
		var actualStart, actualEnd any
		switch {
		case i == 6:
			status = "cancelled"
		case end.Before(g.now):
			status = "completed"
			actualStart, actualEnd = g.ts(start.Add(12*time.Minute)), g.ts(end.Add(35*time.Minute))
		case start.Before(g.now):
			status = "in_progress"
			actualStart = g.ts(start.Add(5 * time.Minute))
		}
		id := newID()
		t := g.ts(created)
		w.insert("trips", "id, organization_id, branch_id, created_at, updated_at, trip_number, vehicle_id, driver_name, driver_phone, status, planned_start, planned_end, actual_start, actual_end",
			id, org, b.id, t, t, g.number(w, b, "T", "trip", created), pick(g, vehicles), pick(g, demoDrivers),
			fmt.Sprintf("+49 151 %07d", g.rnd.IntN(10_000_000)), status, g.ts(start), g.ts(end), actualStart, actualEnd)
		b.trips[status] = append(b.trips[status], id)
	}
}

// shipments writes one shipment for every order under way or done, and a
// second for the larger ones.
func (g *demoGenerator) shipments(w *demoWriter, org string, b *demoBranch, orders []demoOrder) {
	tripFor := map[string]string{"delivered": "completed", "in_transit": "in_progress", "confirmed": "planned"}
	for _, o := range orders {
		status := map[string]string{"delivered": "delivered", "in_transit": "in_transit", "confirmed": "planned"}[o.status]
		if status == "" {
			continue
		}
		parts := 1
		if o.packages > 20 {
			parts = 2
		}
		for p := 0; p < parts; p++ {
			var trip, deliveredAt any
			if trips := b.trips[tripFor[o.status]]; len(trips) > 0 && (o.status != "confirmed" || p == 0) {
				trip = pick(g, trips)
			}
			if status == "delivered" {
				deliveredAt = g.ts(o.deliveryFrom.Add(time.Duration(60+g.rnd.IntN(300)) * time.Minute))
			}
			packages := o.packages / parts
			if p == 0 {
				packages += o.packages % parts
			}
			share := float64(packages) / float64(o.packages)
			created := o.pickupFrom.AddDate(0, 0, -1)
			t := g.ts(created)
			w.insert("shipments", "id, organization_id, branch_id, created_at, updated_at, tracking_number, order_id, trip_id, status, weight_kg, volume_m3, packages, delivered_at",
				newID(), org, b.id, t, t, g.number(w, b, "S", "shipment", created), o.id, trip, status,
				round(o.weight*share, 3), round(o.volume*share, 3), packages, deliveredAt)
		}
	}
}

// invoices writes an invoice for every delivered order: paid, overdue or
// issued by its due date, the newest still drafts.
func (g *demoGenerator) invoices(w *demoWriter, org string, b *demoBranch, orders []demoOrder) {
	var delivered []demoOrder
	for _, o := range orders {
		if o.status == "delivered" {
			delivered = append(delivered, o)
		}
	}
	for i, o := range delivered {
		date := o.deliveryFrom.AddDate(0, 0, 1)
		due := date.AddDate(0, 0, 30)
		net := round(150+o.weight*0.085+o.volume*4.5, 2)
		tax := round(net*0.19, 2)
		status := "issued"
		switch {
		case i >= len(delivered)-2:
			status = "draft"
		case due.Before(g.now) && i%5 == 2:
			status = "overdue"
		case due.Before(g.now):
			status = "paid"
		}
		t := g.ts(date)
		w.insert("invoices", "id, organization_id, branch_id, created_at, updated_at, invoice_number, account_id, order_id, invoice_date, due_date, currency, net_amount, tax_amount, total_amount, status",
			newID(), org, b.id, t, t, g.number(w, b, "INV", "invoice", date), o.account, o.id, g.date(date), g.date(due), "EUR",
			net, tax, round(net+tax, 2), status)
	}
}

// pricing writes zones, tariffs and items: organization-wide ones (branch
// NULL) and some of each branch.
func (g *demoGenerator) pricing(w *demoWriter, org string, north, south *demoBranch) {
	t := g.ts(g.daysAgo(195))
	zone := func(branch any, name, country string, from, to any) string {
		id := newID()
		w.insert("zones", "id, organization_id, branch_id, created_at, updated_at, name, country_code, postal_code_from, postal_code_to",
			id, org, branch, t, t, name, country, from, to)
		return id
	}
	deNorth := zone(nil, "Germany north", "DE", "20000", "29999")
	deSouth := zone(nil, "Germany south", "DE", "80000", "89999")
	zone(nil, "Germany west", "DE", "40000", "59999")
	nl := zone(nil, "Netherlands", "NL", nil, nil)
	at := zone(nil, "Austria", "AT", nil, nil)
	pl := zone(nil, "Poland", "PL", nil, nil)
	hamburg := zone(north.id, "Hamburg city", "DE", "20000", "22999")
	munich := zone(south.id, "Munich city", "DE", "80000", "81999")

	year := g.now.Year()
	tariff := func(branch any, name string, zoneID any, perKg, perM3, minimum float64, currency string, until any) {
		w.insert("tariffs", "id, organization_id, branch_id, created_at, updated_at, name, zone_id, price_per_kg, price_per_m3, minimum_price, currency, valid_from, valid_until",
			newID(), org, branch, t, t, name, zoneID, perKg, perM3, minimum, currency, fmt.Sprintf("%d-01-01", year), until)
	}
	tariff(nil, "Standard Germany", nil, 0.0950, 18.5, 45, "EUR", nil)
	tariff(nil, "Netherlands groupage", nl, 0.1250, 24, 65, "EUR", fmt.Sprintf("%d-12-31", year))
	tariff(nil, "Austria groupage", at, 0.1180, 22.75, 60, "EUR", fmt.Sprintf("%d-12-31", year))
	tariff(nil, "Poland full truck load", pl, 0.4200, 95, 350, "PLN", nil)
	tariff(north.id, "Hamburg city courier", hamburg, 0.2100, 30, 25, "EUR", nil)
	tariff(north.id, "North to south line haul", deSouth, 0.0725, 14.2, 120, "EUR", nil)
	tariff(south.id, "Munich city courier", munich, 0.2300, 32, 28, "EUR", nil)
	tariff(south.id, "South to north line haul", deNorth, 0.0740, 14.5, 120, "EUR", nil)

	item := func(branch any, sku, name, unit string, kg, m3 float64) {
		w.insert("items", "id, organization_id, branch_id, created_at, updated_at, sku, name, unit, weight_kg, volume_m3",
			newID(), org, branch, t, t, sku, name, unit, kg, m3)
	}
	item(nil, "PAL-EUR", "Euro pallet, empty", "pal", 25, 0.144)
	item(nil, "PAL-IND", "Industrial pallet, empty", "pal", 30, 0.18)
	item(nil, "BOX-S", "Carton, small", "pcs", 0.4, 0.012)
	item(nil, "BOX-M", "Carton, medium", "pcs", 0.7, 0.036)
	item(nil, "BOX-L", "Carton, large", "pcs", 1.1, 0.084)
	item(nil, "DRUM-200", "Steel drum, 200 l", "pcs", 18, 0.26)
	item(nil, "IBC-1000", "IBC container, 1000 l", "pcs", 60, 1.2)
	item(nil, "ROLL-CAGE", "Roll cage", "pcs", 35, 1.1)
	item(nil, "GITTER-BOX", "Mesh box pallet", "pal", 70, 0.9)
	item(nil, "CRATE-BEV", "Beverage crate", "pcs", 1.6, 0.03)
	for _, b := range []*demoBranch{north, south} {
		p := strings.ToUpper(b.name[:1])
		item(b.id, p+"-FISH-20", "Fish box, 20 kg, chilled", "pcs", 21.5, 0.05)
		item(b.id, p+"-TIRE-R17", "Car tyre R17", "pcs", 10.2, 0.07)
		item(b.id, p+"-FURN-SOFA", "Sofa, three-seater, wrapped", "pcs", 68, 1.9)
		item(b.id, p+"-STEEL-COIL", "Steel coil", "t", 1000, 0.13)
		item(b.id, p+"-PAPER-REEL", "Paper reel", "pcs", 450, 1.05)
	}
}

// demoWriter inserts rows in a transaction and keeps the first error, so
// that the generators read as lists of records.
type demoWriter struct {
	ctx context.Context
	tx  *sql.Tx
	err error
}

// insert inserts one row of table: columns is the comma-separated column
// list, values its values in order. After an error it does nothing.
func (w *demoWriter) insert(table, columns string, values ...any) {
	if w.err != nil {
		return
	}
	if n := strings.Count(columns, ",") + 1; n != len(values) {
		w.err = fmt.Errorf("insert into %s: %d columns but %d values", table, n, len(values))
		return
	}
	marks := make([]string, len(values))
	for i := range values {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	stmt := "INSERT INTO " + table + " (" + columns + ") VALUES (" + strings.Join(marks, ", ") + ")"
	if _, err := w.tx.ExecContext(w.ctx, stmt, values...); err != nil {
		w.err = fmt.Errorf("insert into %s: %w", table, err)
	}
}
