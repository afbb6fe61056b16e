package query

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
)

// Type is the type of a field. It decides how a filter value is parsed and
// which operators the field may allow.
type Type uint8

// The field types.
const (
	UUID      Type = iota + 1 // canonical 8-4-4-4-12 hex form; matched in lower case
	String                    // any text
	Enum                      // one of Field.Values
	Integer                   // a 64-bit signed integer
	Number                    // a finite decimal number, e.g. 12.5 or 1e3
	Date                      // YYYY-MM-DD
	Timestamp                 // RFC 3339, or YYYY-MM-DD for midnight UTC
	Boolean                   // true or false
)

var typeNames = [...]string{
	UUID: "uuid", String: "string", Enum: "enum", Integer: "integer",
	Number: "number", Date: "date", Timestamp: "timestamp", Boolean: "boolean",
}

// String returns the type's name as the API documents it ("uuid", "date", ...).
func (t Type) String() string {
	if t > 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Op is a filter operator, as written in filter=field:op:value.
type Op string

// The filter operators. Values are always bound parameters; like and ilike
// take % as their only wildcard.
const (
	Eq     Op = "eq"     // equal
	Ne     Op = "ne"     // not equal; like SQL's <>, it never matches NULL
	Gt     Op = "gt"     // greater than
	Gte    Op = "gte"    // greater than or equal
	Lt     Op = "lt"     // less than
	Lte    Op = "lte"    // less than or equal
	In     Op = "in"     // one of a comma-separated list; "quoted" values may hold commas
	Like   Op = "like"   // case-sensitive match where % is the only wildcard
	ILike  Op = "ilike"  // case-insensitive match where % is the only wildcard
	IsNull Op = "isnull" // true: IS NULL; false: IS NOT NULL
)

// DefaultOps returns the operators a field of type t allows unless it says
// otherwise: uuid and enum eq, ne, in, isnull; string adds
// like and ilike; integer, number, date and timestamp add gt, gte, lt, lte;
// boolean eq, ne, isnull. A field may narrow this set but never widen it.
func DefaultOps(t Type) []Op {
	switch t {
	case UUID, Enum:
		return []Op{Eq, Ne, In, IsNull}
	case String:
		return []Op{Eq, Ne, In, Like, ILike, IsNull}
	case Integer, Number, Date, Timestamp:
		return []Op{Eq, Ne, In, Gt, Gte, Lt, Lte, IsNull}
	case Boolean:
		return []Op{Eq, Ne, IsNull}
	}
	return nil
}

// Field declares one field of a resource as the list endpoint sees it.
type Field struct {
	// Name is the field's name in the API: in filters, sorts and errors.
	Name string
	// Column is the SQL column the field reads, possibly qualified
	// ("q.status"). Empty means Name. It is written into SQL as it is, so it
	// must be a plain identifier: Schema.Validate checks that.
	Column string
	// Type is the field's type.
	Type Type
	// Values lists the allowed values of an Enum field.
	Values []string
	// Filterable lets clients filter on the field.
	Filterable bool
	// Ops narrows the operators a Filterable field allows. Nil means
	// DefaultOps(Type).
	Ops []Op
	// Sortable lets clients sort on the field.
	Sortable bool
	// Nullable marks a column that may hold NULL. Sorts on it place NULLs
	// as PostgreSQL does (last ascending, first descending) on every dialect.
	Nullable bool
}

func (f *Field) column() string {
	if f.Column != "" {
		return f.Column
	}
	return f.Name
}

func (f *Field) allows(op Op) bool {
	if f.Ops != nil {
		return slices.Contains(f.Ops, op)
	}
	return slices.Contains(DefaultOps(f.Type), op)
}

// Defaults of a Schema whose fields are left zero.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Bounds on one request, so that a hostile query string cannot build an
// unbounded statement.
const (
	MaxFilters     = 32   // filter parameters per request
	MaxInValues    = 100  // values of one in filter
	MaxSortKeys    = 8    // sort keys per request, before id is appended
	MaxValueLength = 1024 // bytes of one filter value (of the whole list for in)
)

// Schema declares what the list endpoint of one resource accepts: its fields
// with their types and operators, the page size, the default order and the
// fields no client may ever filter or sort on. The zero values of its
// numeric fields are the documented defaults, so a Schema literal needs only
// Fields.
//
// Parse validates the schema the first time it runs, once, and fails with
// an internal error while the schema is invalid, so a mistake in the
// declaration never reaches SQL. Call Validate when the schema is declared
// as well, to catch such a mistake at start-up. A Schema is read-only and
// safe for concurrent use once declared; it must not be copied after its
// first Parse.
type Schema struct {
	// Fields are the resource's fields.
	Fields []Field
	// DefaultLimit is the page size when no limit is given (0 means 50).
	DefaultLimit int
	// MaxLimit is the largest limit accepted (0 means 1000).
	MaxLimit int
	// DefaultSort is the order when no sort is given, written like the
	// sort parameter, e.g. "created_at:desc". Empty means none but the
	// tiebreaker.
	DefaultSort string
	// Tiebreaker names the unique field that is always the last sort key so
	// pages are stable ("" means "id"). It takes the direction of the key
	// before it, so an index on (key, id) serves both directions.
	Tiebreaker string
	// Reserved names fields that can never be filtered or sorted on, such
	// as the tenant columns organization_id and branch_id. A request that
	// tries gets an error that says so.
	Reserved []string
	// Params names further query parameters the caller handles itself.
	// Every other unknown parameter is rejected.
	Params []string
	// Name names the resource, such as "quotations". It is bound into every
	// cursor, with the fields' names, columns and types, so that a list
	// refuses the cursors of another list that shares its CursorKey.
	Name string
	// CursorKey authenticates the cursors of cursor pages (the after
	// parameter) with HMAC-SHA256; it must hold at least
	// MinCursorKeyLength secret random bytes. One key may serve every
	// schema of a server, and every instance of the server must hold the
	// same one; replacing it voids the cursors handed out. Nil means the
	// list pages with offset only: after is refused with a 400 and
	// NextCursor fails. There is no random default key, as cursors made
	// under one would fail on another instance or after a restart.
	CursorKey []byte

	validated sync.Once
	invalid   error             // what Validate returned on the first Parse
	identity  [sha256.Size]byte // what of the schema its cursors are bound to
	macs      sync.Pool         // of hash.Hash, HMAC-SHA256 keyed with CursorKey
}

// check validates s the first time it is called and returns Validate's
// answer, the same on every call.
func (s *Schema) check() error {
	s.validated.Do(func() {
		s.invalid = s.Validate()
		s.identity = s.identityDigest()
	})
	return s.invalid
}

func (s *Schema) field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

func (s *Schema) defaultLimit() int {
	if s.DefaultLimit > 0 {
		return s.DefaultLimit
	}
	return min(DefaultLimit, s.maxLimit())
}

func (s *Schema) maxLimit() int {
	if s.MaxLimit > 0 {
		return s.MaxLimit
	}
	return MaxLimit
}

func (s *Schema) tiebreaker() string {
	if s.Tiebreaker != "" {
		return s.Tiebreaker
	}
	return "id"
}

// Validate reports the first mistake in the schema's declaration: a field
// without a name or with a duplicate one, an unknown type, an enum without
// values, an operator the field's type does not allow, a column that is not
// a plain identifier, a reserved field declared filterable or sortable, a
// tiebreaker that is not a field, a default sort that does not parse,
// limits that contradict each other, or a CursorKey shorter than
// MinCursorKeyLength.
func (s *Schema) Validate() error {
	seen := make(map[string]bool, len(s.Fields))
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Name == "" {
			return fmt.Errorf("query: field %d has no name", i)
		}
		if seen[f.Name] {
			return fmt.Errorf("query: field %q is declared twice", f.Name)
		}
		seen[f.Name] = true
		if !identifier(f.column()) {
			return fmt.Errorf("query: field %q: column %q is not a plain identifier", f.Name, f.column())
		}
		if f.Type < UUID || f.Type > Boolean {
			return fmt.Errorf("query: field %q: unknown type %v", f.Name, f.Type)
		}
		if f.Type == Enum && len(f.Values) == 0 {
			return fmt.Errorf("query: enum field %q has no values", f.Name)
		}
		for _, op := range f.Ops {
			if !slices.Contains(DefaultOps(f.Type), op) {
				return fmt.Errorf("query: field %q: a %v field cannot allow %q", f.Name, f.Type, op)
			}
		}
		if slices.Contains(s.Reserved, f.Name) && (f.Filterable || f.Sortable) {
			return fmt.Errorf("query: field %q is reserved and cannot be filterable or sortable", f.Name)
		}
	}
	if s.field(s.tiebreaker()) == nil {
		return fmt.Errorf("query: tiebreaker %q is not a field", s.tiebreaker())
	}
	if s.MaxLimit < 0 || s.DefaultLimit < 0 {
		return fmt.Errorf("query: limits cannot be negative")
	}
	if s.defaultLimit() > s.maxLimit() {
		return fmt.Errorf("query: default limit %d is above the max limit %d", s.defaultLimit(), s.maxLimit())
	}
	if s.CursorKey != nil && len(s.CursorKey) < MinCursorKeyLength {
		return fmt.Errorf("query: the cursor key is %d bytes; it needs at least %d", len(s.CursorKey), MinCursorKeyLength)
	}
	if s.DefaultSort != "" {
		if _, err := s.parseSort([]string{s.DefaultSort}); err != nil {
			return fmt.Errorf("query: default sort: %w", err)
		}
	}
	return nil
}

// identifier reports whether s is a plain, possibly qualified SQL
// identifier: letters, digits and underscores, not starting with a digit,
// parts joined by single dots.
func identifier(s string) bool {
	if s == "" {
		return false
	}
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if start {
				return false
			}
			start = true
			continue
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if start {
				return false
			}
		default:
			return false
		}
		start = false
	}
	return !start
}
