package cmdutil

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// A duration flag reads what Go's time.ParseDuration reads and days as well ("30d", "1d12h"), since
// credential lifetimes and expiry windows are counted in days, and holds the range the flag accepts: a
// value outside it is refused when parsed, naming the flag and the range.
type durationValue struct {
	target   *time.Duration
	min, max time.Duration
}

var days = regexp.MustCompile(`(\d+)d`)

// ParseDuration reads a duration with days ("d" is 24h).
func ParseDuration(s string) (time.Duration, error) {
	var extra time.Duration
	rest := days.ReplaceAllStringFunc(s, func(m string) string {
		n, _ := strconv.Atoi(strings.TrimSuffix(m, "d"))
		extra += time.Duration(n) * 24 * time.Hour
		return ""
	})
	if rest == "" && extra > 0 {
		return extra, nil
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (such as 90m, 12h or 30d)", s)
	}
	return d + extra, nil
}

// FormatDuration writes a duration as people read it: whole days as "30d", the rest without trailing
// zero units ("90m", "1h30m").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d *durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if v < d.min || v > d.max {
		return fmt.Errorf("%s is out of range: must be from %s to %s", FormatDuration(v), FormatDuration(d.min), FormatDuration(d.max))
	}
	*d.target = v
	return nil
}

func (d *durationValue) String() string { return FormatDuration(*d.target) }
func (d *durationValue) Type() string   { return "duration" }

// TimeoutFlag registers the --timeout every long-running command has, the same on each: from a second
// to a day, its expiry the exit code 124 (ExitTimeout). what says what it bounds ("the revocation").
func TimeoutFlag(fs *pflag.FlagSet, target *time.Duration, def time.Duration, what string) {
	DurationFlag(fs, target, "timeout", def, time.Second, 24*time.Hour,
		fmt.Sprintf("How long %s may take before it is abandoned (exit code %d)", what, ExitTimeout))
}

// DurationFlag registers a duration flag with days and a range; its help states both.
func DurationFlag(fs *pflag.FlagSet, target *time.Duration, name string, def, minimum, maximum time.Duration, usage string) {
	*target = def
	fs.Var(&durationValue{target: target, min: minimum, max: maximum}, name,
		fmt.Sprintf("%s (a duration such as 90m, 12h or 30d; from %s to %s)", usage, FormatDuration(minimum), FormatDuration(maximum)))
}
