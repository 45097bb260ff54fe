package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// usage prints a command's usage as cobra's own usage function does, but with the flag descriptions
// wrapped at HelpWidth, as kubectl's are. It is Go, not one of cobra's usage templates on purpose:
// executing a text/template makes the linker keep every exported method of every linked type
// (text/template looks methods up by name at run time), which is 20 MB of binary.
func usage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		listCommands(w, c)
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\n\nFlags:\n%s", strings.TrimRightFunc(c.LocalFlags().FlagUsagesWrapped(HelpWidth), isSpace))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\n\nGlobal Flags:\n%s", strings.TrimRightFunc(c.InheritedFlags().FlagUsagesWrapped(HelpWidth), isSpace))
	}
	if c.HasHelpSubCommands() {
		fmt.Fprint(w, "\n\nAdditional help topics:")
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				fmt.Fprintf(w, "\n  %-*s %s", sub.CommandPathPadding(), sub.CommandPath(), sub.Short)
			}
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

// listCommands lists a command's subcommands, by group where it has groups.
func listCommands(w io.Writer, c *cobra.Command) {
	shown := func(sub *cobra.Command) bool { return sub.IsAvailableCommand() || sub.Name() == "help" }
	line := func(sub *cobra.Command) { fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short) }
	if len(c.Groups()) == 0 {
		fmt.Fprint(w, "\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if shown(sub) {
				line(sub)
			}
		}
		return
	}
	for _, g := range c.Groups() {
		fmt.Fprintf(w, "\n\n%s", g.Title)
		for _, sub := range c.Commands() {
			if sub.GroupID == g.ID && shown(sub) {
				line(sub)
			}
		}
	}
	if !c.AllChildCommandsHaveGroup() {
		fmt.Fprint(w, "\n\nAdditional Commands:")
		for _, sub := range c.Commands() {
			if sub.GroupID == "" && shown(sub) {
				line(sub)
			}
		}
	}
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
