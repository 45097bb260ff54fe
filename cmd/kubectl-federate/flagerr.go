package main

import "strings"

// isFlagError recognises cobra's and pflag's parse errors, which deserve a pointer to the help.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "invalid argument", "flag needs an argument",
		"required flag", "unknown command", "accepts ", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
