package dryrun

import "testing"

// --dry-run accepts none, client and server; the bare flag means client.
func TestDryRunStrategyValues(t *testing.T) {
	d := &Recorder{}
	v := value{d}
	for _, bad := range []string{"", "true", "false", "Client"} {
		if err := v.Set(bad); err == nil {
			t.Errorf("--dry-run=%q accepted", bad)
		}
	}
	for _, good := range Strategies {
		if err := v.Set(good); err != nil || string(d.Strategy) != good {
			t.Errorf("--dry-run=%s: %v", good, err)
		}
	}
}
