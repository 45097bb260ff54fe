// Package sandbox is what a provider gives a tenant to run in, enforced by the API server alone: the
// namespace with its Pod Security labels, quota, limits, network policy and ServiceAccount, the admission
// policies and tenant role that init installs and every issuance keeps current, the quota total carved
// into a consumer's grants, and the probes that prove it all holds before anything is bound to it. It
// builds on packages member and credential and knows nothing of the handshake that uses it.
//
// One job per file:
//
//	sandbox.go    the tenant sandbox: namespace, quota, limits, network policy, ServiceAccount, its owner
//	podranges.go  the cluster's pod address ranges, which the sandbox's egress keeps its pods out of
//	admission.go  the sandbox's ValidatingAdmissionPolicies, the cordon's among them
//	rbac.go       the tenant ClusterRole and its RoleBinding
//	install.go    init: federate-system, CRDs, the tenant ClusterRole, the sandbox admission policies
//	reconcile.go  restore or upgrade the sandbox policies, bindings and tenant role this version installs
//	quota.go      one quota total per consumer, carved into its grants, recorded in the Tenant
//	enforce.go    prove that the API server enforces a sandbox before anything is bound to it (its cordon too); access reviews
//	stop.go       stop what runs in a sandbox and the tokens it could use: revoke, drain, a grant taken back
//	impersonation.go  detect constrained impersonation on a provider, never assume it
package sandbox
