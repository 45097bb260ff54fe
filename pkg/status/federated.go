package status

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A federated identity holds nothing to check, so it is proven the way it is used: a token of the
// consumer's ServiceAccount is minted now, for the pairing's audience, and the provider is asked who that
// is (a SelfSubjectReview: exactly the pairing's user, in no group but system:authenticated) and what it
// may do (the rights every pairing's identity is checked for). The token is used for the proof only and
// expires by itself.

// SettingServiceAccount is the consumer's ServiceAccount of a federated identity, in its status settings.
const SettingServiceAccount = "service account"

// ProveFederated (consumer) proves a federated identity this cluster holds: the provider authenticates a
// token minted now as the pairing's user, and authorizes it for what a pairing's identity is for.
func ProveFederated(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity) *CredentialCheck {
	return checkFederated(ctx, c, &CredentialState{RemoteClusterID: id.Spec.ClusterID, Role: member.RoleConsumer, Kind: KindControlPlane,
		Credential: v1alpha1.CredentialFederated, User: id.Spec.Federated.User, Namespace: id.Spec.Namespace, federated: id})
}

func checkFederated(ctx context.Context, c *member.Cluster, s *CredentialState) *CredentialCheck {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	kc, _, err := handshake.MintedKubeconfig(ctx, c, s.federated)
	if err != nil {
		state := CheckUnreachable
		if errors.Is(err, credential.ErrServiceAccountReplaced) {
			state = CheckUntrusted
		}
		return &CredentialCheck{State: state, Error: "minting a token on this cluster: " + err.Error()}
	}
	as, err := handshake.Dial(c, kc)
	if err != nil {
		return &CredentialCheck{State: CheckUnreachable, Error: err.Error()}
	}
	r, err := as.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return &CredentialCheck{State: CheckUntrusted, Error: "the provider does not authenticate this cluster's tokens (401 Unauthorized): its API server has no working authenticator entry for this pairing"}
	case err != nil:
		return failedCheck(err)
	}
	u := r.Status.UserInfo
	if u.Username != s.User {
		return &CredentialCheck{State: CheckUntrusted, User: u.Username,
			Error: fmt.Sprintf("the provider takes this cluster's token for %q, not the pairing's user %q: the authenticator entry installed is not the pairing's", member.Truncate(u.Username), s.User)}
	}
	if extra := slices.DeleteFunc(slices.Clone(u.Groups), func(g string) bool { return g == "system:authenticated" }); len(extra) > 0 {
		return &CredentialCheck{State: CheckUntrusted, User: u.Username,
			Error: fmt.Sprintf("the provider puts this cluster's token in groups %v: the authenticator entry installed maps groups, the pairing's maps none", extra)}
	}
	return checkThrough(ctx, as, s)
}
