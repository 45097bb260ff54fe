package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self, err := os.Executable() // the test binary: a real executable of this platform
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want string // substring of the problem, "" for none
	}{
		{"script.sh", []byte("#!/usr/bin/env bash\necho hi\n"), ""},
		{"small.go", []byte("package main\n"), ""},
		{"empty", nil, ""},
		{"bench", exe, "is an executable"},
		{"tool.exe", append([]byte("MZ"), make([]byte, 100)...), "(PE)"},
		{"macho", []byte{0xcf, 0xfa, 0xed, 0xfe, 0, 0}, "(Mach-O)"},
		{"big.txt", []byte(strings.Repeat("a", MaxSize+1)), "more than the 1000000 allowed"},
		{"limit.txt", []byte(strings.Repeat("a", MaxSize)), ""},
	}
	for _, c := range cases {
		got := check(write(c.name, c.data))
		if c.want == "" && got != "" {
			t.Errorf("%s: want no problem, got %q", c.name, got)
		}
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: want a problem containing %q, got %q", c.name, c.want, got)
		}
		if c.want != "" && !strings.Contains(got, c.name) {
			t.Errorf("%s: the problem %q does not name the file", c.name, got)
		}
	}
	if got := check(filepath.Join(dir, "gone")); got != "" {
		t.Errorf("a tracked file deleted from the work tree: want no problem, got %q", got)
	}
}
