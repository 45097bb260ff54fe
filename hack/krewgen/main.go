// Command krewgen renders krew-manifest.yaml for the archives in a dist directory and validates the
// result against krew's manifest rules (name, version, descriptions, one platform per os/arch with a
// .tar.gz URI, a lowercase sha256 that matches the archive, and the binary inside it).
//
//	krewgen -template krew-manifest.yaml -dist dist -version v0.1.0 -url https://.../releases/download
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	tmpl := flag.String("template", "krew-manifest.yaml", "manifest template")
	dist := flag.String("dist", "dist", "directory with the archives and checksums.txt")
	version := flag.String("version", "", "release version, vX.Y.Z")
	base := flag.String("url", "https://github.com/federate-dev/kubectl-federate/releases/download", "download URL prefix; the version is appended")
	flag.Parse()
	if err := run(*tmpl, *dist, *version, *base); err != nil {
		fmt.Fprintln(os.Stderr, "krewgen: error:", err)
		os.Exit(1)
	}
}

func run(tmplPath, dist, version, base string) error {
	sums, err := readChecksums(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return err
	}
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var platforms strings.Builder
	archive := regexp.MustCompile(`^kubectl-federate_(.+)_(linux|darwin|windows)_(amd64|arm64)\.tar\.gz$`)
	for _, n := range names {
		m := archive.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		bin := "kubectl-federate"
		if m[2] == "windows" {
			bin += ".exe"
		}
		fmt.Fprintf(&platforms, "  - selector:\n      matchLabels:\n        os: %s\n        arch: %s\n", m[2], m[3])
		fmt.Fprintf(&platforms, "    uri: %s/%s/%s\n    sha256: %s\n    bin: %s\n", base, version, n, sums[n], bin)
		fmt.Fprintf(&platforms, "    files:\n    - from: %s\n      to: .\n    - from: LICENSE\n      to: .\n", bin)
	}
	out := strings.NewReplacer("${VERSION}", version, "${PLATFORMS}\n", platforms.String()).Replace(string(tmpl))
	if err := validate([]byte(out), version, sums); err != nil {
		return fmt.Errorf("rendered manifest is invalid: %w", err)
	}
	return os.WriteFile(filepath.Join(dist, "krew-manifest.yaml"), []byte(out), 0o644)
}

func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 {
			sums[fields[1]] = fields[0]
		}
	}
	return sums, sc.Err()
}

type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

var (
	semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	sha    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	name   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// validate applies krew's manifest rules (internal/index/validation in krew) to a rendered manifest.
func validate(data []byte, version string, sums map[string]string) error {
	var m manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return err
	}
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	check(m.APIVersion == "krew.googlecontainertools.github.com/v1alpha2", "apiVersion %q", m.APIVersion)
	check(m.Kind == "Plugin", "kind %q", m.Kind)
	check(name.MatchString(m.Metadata.Name), "metadata.name %q is not a valid plugin name", m.Metadata.Name)
	check(semver.MatchString(m.Spec.Version) && m.Spec.Version == version, "spec.version %q must be the semver tag %q", m.Spec.Version, version)
	check(strings.HasPrefix(m.Spec.Homepage, "https://"), "spec.homepage must be an https URL")
	check(m.Spec.ShortDescription != "" && len(m.Spec.ShortDescription) <= 50 && !strings.Contains(m.Spec.ShortDescription, "\n"), "spec.shortDescription must be one line of at most 50 characters")
	for _, l := range strings.Split(m.Spec.Description, "\n") {
		check(len(l) <= 80, "spec.description line longer than 80 columns: %q", l)
	}
	check(len(m.Spec.Platforms) == 6, "want 6 platforms (linux, darwin, windows x amd64, arm64), got %d", len(m.Spec.Platforms))
	seen := map[string]bool{}
	for i, p := range m.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		key := os + "/" + arch
		check(!seen[key], "platform %d: duplicate %s", i, key)
		seen[key] = true
		check(strings.HasPrefix(p.URI, "https://") && strings.HasSuffix(p.URI, ".tar.gz"), "platform %s: uri %q must be an https .tar.gz", key, p.URI)
		check(sha.MatchString(p.SHA256), "platform %s: sha256 must be 64 lowercase hex digits", key)
		check(sums[filepath.Base(p.URI)] == p.SHA256, "platform %s: sha256 does not match the archive %s", key, filepath.Base(p.URI))
		wantBin := "kubectl-federate"
		if os == "windows" {
			wantBin += ".exe"
		}
		check(p.Bin == wantBin, "platform %s: bin %q, want %q", key, p.Bin, wantBin)
		hasBin, hasLicense := false, false
		for _, f := range p.Files {
			hasBin = hasBin || f.From == p.Bin
			hasLicense = hasLicense || f.From == "LICENSE"
		}
		check(hasBin && hasLicense, "platform %s: files must install the binary and LICENSE", key)
	}
	return errors.Join(errs...)
}
