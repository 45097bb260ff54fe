package lifecycle

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

func federatedPair(t *testing.T) (*v1alpha1.Tenant, *v1alpha1.Identity) {
	t.Helper()
	f := &v1alpha1.FederatedRequest{Issuer: "https://edge-1.example:6443",
		ServiceAccount: v1alpha1.ServiceAccountRef{Namespace: "ci", Name: "deployer", UID: "0b5c9a2e-7f31-4c8e-9d40-1a2b3c4d5e6f"}}
	n := credential.NameFederated("gpu-farm", "edge-1", credential.ExpectedUser("edge-1", "nonce"))
	tenant := &v1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Namespace: "federate-tenant-edge-1"},
		Spec:       v1alpha1.TenantSpec{ClusterID: "edge-1", ProviderClusterID: "gpu-farm", Federated: f},
		Status:     v1alpha1.TenantStatus{Credential: v1alpha1.CredentialFederated, User: n.User(f.ServiceAccount), Audience: n.Audience},
	}
	id := &v1alpha1.Identity{Spec: v1alpha1.IdentitySpec{ClusterID: "gpu-farm", ConsumerClusterID: "edge-1",
		Federated: &v1alpha1.FederatedIdentity{ServiceAccount: f.ServiceAccount, Audience: n.Audience, User: tenant.Status.User}}}
	return tenant, id
}

// TestFinishFederatedDryRun: a dry run that issued a federated identity gets the provider's entry (the
// Tenant's own) and proves nothing; a run that issued another kind of identity has nothing to finish.
func TestFinishFederatedDryRun(t *testing.T) {
	tenant, id := federatedPair(t)
	want, err := handshake.Authenticator(tenant)
	if err != nil {
		t.Fatal(err)
	}
	consumer := &member.Cluster{DryRun: true}
	res := &handshake.Imported{}
	if err := finishFederated(context.Background(), consumer, nil, tenant, id, res, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Authenticator, want) {
		t.Fatalf("entry %+v, want the Tenant's %+v", res.Authenticator, want)
	}
	plain := &handshake.Imported{}
	if err := finishFederated(context.Background(), consumer, nil, tenant, &v1alpha1.Identity{}, plain, nil); err != nil || plain.Authenticator != nil {
		t.Fatalf("a non-federated identity: error %v, entry %+v", err, plain.Authenticator)
	}
	bad := *id.Spec.Federated
	bad.User = "system:admin"
	badID := &v1alpha1.Identity{Spec: v1alpha1.IdentitySpec{Federated: &bad}}
	if err := finishFederated(context.Background(), consumer, nil, tenant, badID, &handshake.Imported{}, nil); err == nil {
		t.Fatal("an identity for user system:admin was given an entry")
	}
}

// TestNotTrustedError: the message names the provider, what the check found, the diagnosis and the
// findings, in that order.
func TestNotTrustedError(t *testing.T) {
	e := &NotTrustedError{ProviderID: "gpu-farm", Check: &status.CredentialCheck{State: status.CheckUntrusted, Error: "token not authenticated"},
		Diagnosis: "no authenticator", Findings: []string{"no structured authentication"}}
	want := `the federated pairing with provider "gpu-farm" is set up but not ready: token not authenticated; no authenticator; no structured authentication`
	if got := e.Error(); got != want {
		t.Fatalf("error %q\nwant  %q", got, want)
	}
	e.Diagnosis, e.Findings = "", nil
	if got := e.Error(); strings.Contains(got, ";") {
		t.Fatalf("error %q has parts that were not given", got)
	}
}
