package resource

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Three organizations share the export slots of a registry: none takes
// more than half of them, and together they take no more than all.
func TestExportSlots(t *testing.T) {
	t.Parallel()
	g := &Registry{ExportsAtOnce: 4}
	take := func(org string, want int) func() {
		t.Helper()
		release, err := g.takeExport(org)
		if want == http.StatusOK {
			require.NoError(t, err, org)
			return release
		}
		e, ok := apierrors.As(err)
		require.True(t, ok, "%s: %v", org, err)
		assert.Equal(t, want, e.Status, "%s: %v", org, err)
		assert.NotEmpty(t, e.Header.Get("Retry-After"))
		return nil
	}
	a1 := take("a", http.StatusOK)
	take("a", http.StatusOK)
	take("a", http.StatusTooManyRequests) // half of the four is a's
	take("b", http.StatusOK)
	take("c", http.StatusOK)
	take("b", http.StatusServiceUnavailable) // all four run
	take("c", http.StatusServiceUnavailable)
	a1()
	c2 := take("c", http.StatusOK) // a's ended export freed a slot for c
	take("a", http.StatusServiceUnavailable)
	c2()
	take("a", http.StatusOK)

	var d Registry // the default: four, two an organization
	for range DefaultExportsAtOnce / 2 {
		_, err := d.takeExport("a")
		require.NoError(t, err)
	}
	_, err := d.takeExport("a")
	assert.Equal(t, apierrors.CodeRateLimited, apierrors.CodeOf(err))
}

// FuzzCSVCell checks the CSV cells of an export against encoding/csv: a
// string reads back as it was (a CRLF inside a cell as LF, as
// encoding/csv reads it), and one without line breaks is written as
// encoding/csv writes it.
func FuzzCSVCell(f *testing.F) {
	for _, seed := range []string{"", "plain", "a,b", `say "hi"`, "two\nlines", "cr\r\nlf", " lead", "\ttab", `\.`, "=SUM(A1)", "ünï,cödé"} {
		f.Add(seed, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // the database holds text, always valid UTF-8
		}
		line := appendCSVCell(appendCSVCell(nil, a), b)
		require.Equal(t, string(appendCSVText(nil, a)), string(appendCSVText(nil, []byte(a))), "a cell's text as bytes")
		line = append(line[:len(line)-1], '\r', '\n')
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		w.UseCRLF = true
		require.NoError(t, w.Write([]string{a, b}))
		w.Flush()
		if !strings.ContainsAny(a+b, "\r\n") {
			// encoding/csv with UseCRLF writes a line break inside a cell
			// as CRLF; the export writes the text as it is stored.
			assert.Equal(t, want.String(), string(line), "as encoding/csv writes it")
		}
		rows, err := csv.NewReader(bytes.NewReader(line)).ReadAll()
		if a == "" && b == "" {
			return // an empty line, which readers skip
		}
		require.NoError(t, err)
		require.Len(t, rows, 1)
		assert.Equal(t, []string{strings.ReplaceAll(a, "\r\n", "\n"), strings.ReplaceAll(b, "\r\n", "\n")}, rows[0], "reads back")
	})
}
