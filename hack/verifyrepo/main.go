// Command verifyrepo fails, naming each file, when git tracks build output: a file over MaxSize, or an
// executable that is not a script (an ELF, Mach-O or PE binary). `make vet` runs it, so CI refuses the
// next committed binary the way it refuses unformatted code.
//
// Why 1 MB: the largest files that belong in git here are go.sum files and generated docs, a few tens of
// kilobytes each; anything near a megabyte is a binary, an archive or a data dump, which a clone should
// not carry. Generated files that belong in git (docs/reference, the completion shim) are text and far
// below the limit, so they need no exception.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// MaxSize is the largest tracked file allowed, in bytes.
const MaxSize = 1_000_000

func main() {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "verifyrepo: git ls-files:", err)
		os.Exit(2)
	}
	var problems []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if p := check(name); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "verifyrepo:", p)
		}
		fmt.Fprintln(os.Stderr, "verifyrepo: a clone carries source only: remove these with `git rm --cached FILE` and keep build output in bin/ or dist/ (ignored)")
		os.Exit(1)
	}
}

// check returns what is wrong with one tracked file, or "". A tracked file deleted from the work tree is
// not checked: the commit that removes it is what is wanted.
func check(name string) string {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	if st.IsDir() { // a submodule or a symlink to a directory
		return ""
	}
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	if kind := binaryKind(head[:n]); kind != "" {
		return fmt.Sprintf("%s: is an executable (%s), build output", name, kind)
	}
	if st.Size() > MaxSize {
		return fmt.Sprintf("%s: is %d bytes, more than the %d allowed for a tracked file", name, st.Size(), MaxSize)
	}
	return ""
}

// binaryKind names the executable format a file starts with, or "" (scripts start with "#!" and pass).
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(head, []byte("MZ")):
		return "PE"
	}
	for _, magic := range [][]byte{
		{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, // Mach-O 32/64, big-endian
		{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, // Mach-O 32/64, little-endian
		{0xca, 0xfe, 0xba, 0xbe}, // Mach-O universal (also a Java class file: neither belongs here)
	} {
		if bytes.Equal(head, magic) {
			return "Mach-O"
		}
	}
	return ""
}
