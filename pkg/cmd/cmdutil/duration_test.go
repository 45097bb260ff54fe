package cmdutil

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDurationFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30d", 30 * 24 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"720h", 720 * time.Hour, ""},
		{"5m", 0, "5m is out of range: must be from 10m to 365d"},
		{"400d", 0, "400d is out of range"},
		{"soon", 0, `"soon" is not a duration`},
		{"-1h", 0, "out of range"},
	} {
		var d time.Duration
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		DurationFlag(fs, &d, "expiration", 24*time.Hour, 10*time.Minute, 365*24*time.Hour, "Life")
		err := fs.Parse([]string{"--expiration", c.in})
		switch {
		case c.err == "" && (err != nil || d != c.want):
			t.Errorf("%s: got %s %v, want %s", c.in, d, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--expiration")):
			t.Errorf("%s: got %v, want an error naming --expiration and %q", c.in, err, c.err)
		}
		if !strings.Contains(fs.Lookup("expiration").Usage, "from 10m to 365d") {
			t.Errorf("usage does not state the range: %q", fs.Lookup("expiration").Usage)
		}
	}
	for d, want := range map[time.Duration]string{30 * 24 * time.Hour: "30d", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h", 10 * time.Minute: "10m", 20 * time.Second: "20s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
