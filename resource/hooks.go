package resource

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
)

// hookFunc is the shape of every hook.
type hookFunc = func(ctx context.Context, tx *sql.Tx, w *Write) error

// Combine returns hooks that run each of hooks in order, stopping at the
// first error. A batch write runs them in the same order: the
// BeforeCreateBatch of a hook that has one on the records still standing,
// the BeforeCreate of the others on each.
func Combine(hooks ...Hooks) Hooks {
	chain := func(pick func(Hooks) hookFunc) hookFunc {
		var fs []hookFunc
		for _, h := range hooks {
			if f := pick(h); f != nil {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return nil
		}
		return func(ctx context.Context, tx *sql.Tx, w *Write) error {
			for _, f := range fs {
				if err := f(ctx, tx, w); err != nil {
					return err
				}
			}
			return nil
		}
	}
	combined := Hooks{
		BeforeCreate: chain(func(h Hooks) hookFunc { return h.BeforeCreate }),
		BeforeUpdate: chain(func(h Hooks) hookFunc { return h.BeforeUpdate }),
		BeforeDelete: chain(func(h Hooks) hookFunc { return h.BeforeDelete }),
	}
	for _, h := range hooks {
		if combined.status == "" {
			combined.status = h.status
		}
		combined.parts = append(combined.parts, h.steps()...)
	}
	return combined
}

// steps returns the hooks h runs one after the other: those Combine
// combined, or h itself.
func (h Hooks) steps() []Hooks {
	if h.parts != nil {
		return h.parts
	}
	return []Hooks{h}
}

// StatusFlow returns hooks that keep an Enum field on a state machine: a
// new record starts in initial unless it names a state itself, which must
// be initial or one initial may move to; an update may move the field only
// along next (next[from] lists the states from may move to; a state with no
// entry is final). A move outside the flow is invalid_create on POST and
// invalid_update on PATCH. Setting the field to its current value is no
// move and always allowed.
//
// The field becomes the resource's StatusField: the registry's Outbox is
// told of each move (Change.Status). Combine keeps the first StatusFlow's
// field.
func StatusFlow(field, initial string, next map[string][]string) Hooks {
	return Hooks{
		status: field,
		BeforeCreate: func(_ context.Context, _ *sql.Tx, w *Write) error {
			v, ok := w.Changes[field].(string)
			if !ok {
				w.Changes[field] = initial
				return nil
			}
			if v != initial && !slices.Contains(next[initial], v) {
				return apierrors.InvalidCreate("%s: a new record may start as %s, not %q", field, describeStates(initial, next[initial]), v)
			}
			return nil
		},
		BeforeUpdate: func(_ context.Context, _ *sql.Tx, w *Write) error {
			to, ok := w.Changes[field].(string)
			if !ok {
				return nil
			}
			from, _ := w.Current[field].(string)
			if to == from || slices.Contains(next[from], to) {
				return nil
			}
			if len(next[from]) == 0 {
				return apierrors.InvalidUpdate("%s: %q is final and cannot change to %q", field, from, to)
			}
			return apierrors.InvalidUpdate("%s: %q may move to %s, not %q", field, from, strings.Join(next[from], ", "), to)
		},
	}
}

func describeStates(initial string, next []string) string {
	return strings.Join(append([]string{initial}, next...), ", ")
}
