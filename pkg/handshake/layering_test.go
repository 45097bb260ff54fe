package handshake

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The domain names what is wrong in domain terms (a field, a cluster, an object); commands translate that
// to their own flags, since one domain function serves commands where a flag means different clusters.
func TestNoFlagNamesInTheDomain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, `"--`) {
				t.Errorf("%s:%d names a flag: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
