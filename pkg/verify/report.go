package verify

import (
	"cmp"
	"slices"
	"strings"
)

// Checks, one row each per tenant (or per namespace, identity or grant of it); the first four are the
// cluster's own, shared by every tenant.
const (
	CheckAdmission  = "admission"            // the sandbox's admission policies and bindings
	CheckTenantRole = "tenant-role"          // the ClusterRole tenants are bound to
	CheckEngine     = "networkpolicy-engine" // a NetworkPolicy engine runs
	CheckPodRanges  = "pod-ranges"           // the pod address ranges the sandboxes' egress keeps out
	CheckSandbox    = "sandbox"              // a sandbox namespace's own objects, as issuance made them
	CheckEscapes    = "escapes"              // the escape corpus, sent as the identity that works there
	CheckRights     = "rights"               // what an identity is bound to beyond its sandbox
	CheckExchange   = "exchange"             // an exchange grant's reach now, beside what was consented
)

// checkOrder is the order rows are listed in.
var checkOrder = []string{CheckAdmission, CheckTenantRole, CheckEngine, CheckPodRanges, CheckSandbox, CheckRights, CheckEscapes, CheckExchange}

// States of a row and a finding, mildest first.
const (
	StateOK      = "ok"
	StateSkipped = "skipped" // nothing to prove (a revoked tenant)
	StateWarning = "warning" // what verify can only suspect: a NetworkPolicy engine it does not know
	StateError   = "error"   // the check could not be made
	StateDrift   = "drift"   // an object the sandbox owns differs from what init or issuance make
	StateBroken  = "BROKEN"  // an escape admitted, or rights beyond what was bound or consented
)

var severity = map[string]int{StateOK: 0, StateSkipped: 0, StateWarning: 1, StateError: 2, StateDrift: 3, StateBroken: 4}

// Finding is one thing that does not hold, and the object behind it.
type Finding struct {
	State   string `json:"state"`
	Message string `json:"message"`
	// Object is what gives or holds it: "ClusterRoleBinding tenants-edit", "NetworkPolicy ns/federate-sandbox".
	Object string `json:"object,omitempty"`
	// Repairable says verify --repair restores it (with init's or issuance's own code).
	Repairable bool `json:"repairable,omitempty"`
}

// Row is one check of one tenant (RemoteClusterID "" for the cluster's own checks).
type Row struct {
	RemoteClusterID string `json:"remoteClusterID,omitempty"`
	Check           string `json:"check"`
	// Name is what the check is of: a namespace, an identity (pairing, slice NAME), an exchange request.
	Name  string `json:"name,omitempty"`
	State string `json:"state"`
	// Detail says what was proven when the row is ok ("67 attacks refused").
	Detail   string    `json:"detail,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
}

// Result is the row as the table shows it: ok (and what was proven), or each finding with its state.
func (r Row) Result() string {
	if len(r.Findings) == 0 {
		if r.Detail != "" {
			return r.State + " (" + r.Detail + ")"
		}
		return r.State
	}
	parts := make([]string, len(r.Findings))
	for i, f := range r.Findings {
		parts[i] = f.State + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}

// row builds a row whose state is its worst finding's (ok with none).
func row(remote, check, name, detail string, findings []Finding) Row {
	state := StateOK
	for _, f := range findings {
		if severity[f.State] > severity[state] {
			state = f.State
		}
	}
	slices.SortStableFunc(findings, func(a, b Finding) int { return severity[b.State] - severity[a.State] })
	return Row{RemoteClusterID: remote, Check: check, Name: name, State: state, Detail: detail, Findings: findings}
}

// Report is what verify found: a row per tenant and check.
type Report struct {
	ClusterID string `json:"clusterID"`
	Rows      []Row  `json:"rows"`
}

// Holds tells whether everything holds: no row broken, drifted or unchecked (warnings do not count: they
// are what verify cannot tell).
func (r *Report) Holds() bool { return r.Worst() <= severity[StateWarning] }

// Worst is the severity of the worst row.
func (r *Report) Worst() int {
	worst := 0
	for _, row := range r.Rows {
		worst = max(worst, severity[row.State])
	}
	return worst
}

// Failing lists the rows that do not hold, as "remote check name".
func (r *Report) Failing() []Row {
	var out []Row
	for _, row := range r.Rows {
		if severity[row.State] > severity[StateWarning] {
			out = append(out, row)
		}
	}
	return out
}

// IsBroken says whether the state is BROKEN or drift: something that does not hold (error is something
// that could not be checked).
func IsBroken(state string) bool { return severity[state] >= severity[StateDrift] }

func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(strings.Compare(a.RemoteClusterID, b.RemoteClusterID), slices.Index(checkOrder, a.Check)-slices.Index(checkOrder, b.Check),
			strings.Compare(a.Name, b.Name))
	})
}
