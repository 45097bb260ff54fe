// Package docgen renders the command reference in docs/reference from the cobra tree, so the docs are
// the help text and cannot drift from it.
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Generate returns file name -> Markdown for root and every visible command below it.
func Generate(root *cobra.Command) map[string][]byte {
	files := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || strings.HasPrefix(c.Name(), "__") {
			return
		}
		files[fileName(c)] = page(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var index bytes.Buffer
	index.WriteString("# Command reference\n\nGenerated from the command tree by `make docs`; do not edit.\n\n")
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		title := strings.ReplaceAll(strings.TrimSuffix(n, ".md"), "_", " ")
		fmt.Fprintf(&index, "- [%s](%s)\n", title, n)
	}
	files["README.md"] = index.Bytes()
	return files
}

func fileName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

func page(c *cobra.Command) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", c.CommandPath(), c.Short)
	if c.Long != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Long)
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", c.Example)
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Options\n\n```\n%s```\n\n", fl.FlagUsagesWrapped(120))
	}
	if fl := c.InheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Options inherited from parent commands\n\n```\n%s```\n\n", fl.FlagUsagesWrapped(120))
	}
	var subs []string
	for _, s := range c.Commands() {
		if !s.Hidden && s.Name() != "help" && !strings.HasPrefix(s.Name(), "__") {
			subs = append(subs, fmt.Sprintf("- [%s](%s): %s", s.CommandPath(), fileName(s), s.Short))
		}
	}
	if len(subs) > 0 {
		fmt.Fprintf(&b, "## Subcommands\n\n%s\n\n", strings.Join(subs, "\n"))
	}
	if c.HasParent() {
		fmt.Fprintf(&b, "See also: [%s](%s)\n", c.Parent().CommandPath(), fileName(c.Parent()))
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}

// Write replaces the Markdown files of dir with the generated ones.
func Write(root *cobra.Command, dir string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // documentation is world-readable
		return err
	}
	for name, data := range Generate(root) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil { //nolint:gosec // documentation is world-readable
			return err
		}
	}
	return nil
}
