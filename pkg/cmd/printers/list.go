package printers

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/jsonpath"
)

// ListFlags are kubectl get's listing flags, over the documents a command prints with -o json (the items
// of its List): -l/--selector filters them by their metadata.labels, --sort-by orders them by a JSONPath,
// -L/--label-columns adds a column per label to the table, --no-headers drops the table's header (and
// custom-columns'). A command filters and sorts its items, then prints the table or -o from what is left,
// so that every format shows the same items in the same order.
type ListFlags struct {
	Selector     string
	SortBy       string
	NoHeaders    bool
	LabelColumns []string

	selector labels.Selector
	sortBy   *jsonpath.JSONPath
}

// AddListFlags registers the listing flags on cmd and lets out print custom-columns, which honour
// --no-headers.
func AddListFlags(cmd *cobra.Command, out *Flags) *ListFlags {
	l := &ListFlags{}
	cmd.Flags().StringVarP(&l.Selector, "selector", "l", "", "Selector (label query) to filter on, over the labels -o json shows; supports '=', '==', '!=', 'in', 'notin' and 'key' (e.g. -l key1=value1,key2=value2)")
	cmd.Flags().StringVar(&l.SortBy, "sort-by", "", "Sort the list by this JSONPath over the items -o json prints (e.g. '{.status.notAfter}'); items missing the field come first")
	cmd.Flags().BoolVar(&l.NoHeaders, "no-headers", false, "Print no header in the table or in -o custom-columns")
	cmd.Flags().StringSliceVarP(&l.LabelColumns, "label-columns", "L", nil, "Labels to show as columns of the table, each a column headed by its name (after the last /) in capitals; repeat, or separate with commas")
	out.list = l
	cmd.Flags().Lookup("output").Usage = out.outputUsage()
	checkBeforeRun(cmd, l.validate)
	return l
}

// validate parses the selector and the JSONPath once, before the command builds any client.
func (l *ListFlags) validate() error {
	sel, err := labels.Parse(l.Selector)
	if err != nil {
		return fmt.Errorf("-l, --selector %q: %w", l.Selector, err)
	}
	l.selector = sel
	if l.SortBy != "" {
		p, err := parseJSONPath("sort-by", l.SortBy)
		if err != nil {
			return fmt.Errorf("--sort-by %q: %w", l.SortBy, err)
		}
		l.sortBy = p
	}
	for _, k := range l.LabelColumns {
		if k == "" {
			return fmt.Errorf("-L, --label-columns: a label key must not be empty")
		}
	}
	return nil
}

// Matches tells whether an item's labels match -l (everything matches when it was not given).
func (l *ListFlags) Matches(itemLabels map[string]string) bool {
	return l.selector == nil || l.selector.Matches(labels.Set(itemLabels))
}

// Order returns the indexes of items in --sort-by order (stable: equal or missing values keep the
// command's order, missing first), or nil when --sort-by was not given. A JSONPath that finds nothing in
// any item is an error, as kubectl's is: it names a field the items do not have.
func (l *ListFlags) Order(items []*unstructured.Unstructured) ([]int, error) {
	if l.sortBy == nil {
		return nil, nil
	}
	keys := make([]any, len(items))
	found := false
	for i, it := range items {
		vals, err := l.sortBy.FindResults(it.Object)
		if err != nil || len(vals) == 0 || len(vals[0]) == 0 {
			continue // missing in this item: sorts first
		}
		keys[i], found = vals[0][0].Interface(), true
	}
	if !found && len(items) > 0 {
		return nil, fmt.Errorf("--sort-by %q: no item has that field (see the fields with -o json)", l.SortBy)
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareValues(keys[a], keys[b]) })
	return order, nil
}

// compareValues orders JSON values: missing first, then numbers by value, booleans false first, and
// anything else by its text (RFC 3339 times, names).
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return cmp.Compare(x, y)
		}
	}
	if x, ok := a.(bool); ok {
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// LabelHeaders are the -L columns' headers: each label key's last segment in capitals, as kubectl's.
func (l *ListFlags) LabelHeaders() []string {
	out := make([]string, 0, len(l.LabelColumns))
	for _, k := range l.LabelColumns {
		out = append(out, strings.ToUpper(k[strings.LastIndex(k, "/")+1:]))
	}
	return out
}

// LabelCells are an item's values of the -L labels, empty where it has none (kubectl leaves the cell
// blank).
func (l *ListFlags) LabelCells(itemLabels map[string]string) []string {
	out := make([]string, 0, len(l.LabelColumns))
	for _, k := range l.LabelColumns {
		out = append(out, itemLabels[k])
	}
	return out
}

// NewTable starts a table with header, unless --no-headers.
func (l *ListFlags) NewTable(out io.Writer, header ...string) *Table {
	if l != nil && l.NoHeaders {
		return NewTable(out)
	}
	return NewTable(out, header...)
}

// parseJSONPath parses kubectl's relaxed JSONPath: "{.a.b}", ".a.b" or "a.b" are the same path.
func parseJSONPath(name, expr string) (*jsonpath.JSONPath, error) {
	e := strings.TrimSpace(expr)
	if !strings.HasPrefix(e, "{") {
		if !strings.HasPrefix(e, ".") && !strings.HasPrefix(e, "[") {
			e = "." + e
		}
		e = "{" + e + "}"
	}
	p := jsonpath.New(name).AllowMissingKeys(true)
	if err := p.Parse(e); err != nil {
		return nil, err
	}
	return p, nil
}
