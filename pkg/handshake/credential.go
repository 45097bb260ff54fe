package handshake

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// CredentialSource names a credential this (consumer) cluster holds, as a credential plugin hands it out:
// the pairing's or a slice's as stored in federate-system, or the one in a Secret holding a kubeconfig
// (an export's, in the format of the reference kubeconfig-secretreader plugin).
type CredentialSource struct {
	ProviderID, Slice string
	Secret            *kubeconfig.SecretRef // with its namespace resolved
}

// HeldCredential reads the credential a source names, now: a plugin reads it every time it runs, so that
// what it hands out is whatever the last renewal stored. Only an inline certificate and key, or a token,
// is handed out.
func HeldCredential(ctx context.Context, c *member.Cluster, src CredentialSource) (kubeconfig.Params, error) {
	var data []byte
	var err error
	context := ""
	switch {
	case src.Secret != nil:
		data, err = secretKubeconfig(ctx, c, *src.Secret)
		context = src.Secret.Context
	case src.Slice != "":
		data, err = GetSliceKubeconfig(ctx, c, src.ProviderID, src.Slice)
	default:
		data, err = GetKubeconfig(ctx, c, src.ProviderID)
	}
	if err != nil {
		return kubeconfig.Params{}, err
	}
	p, err := kubeconfig.ParseInline(data, context)
	if err != nil {
		return kubeconfig.Params{}, fmt.Errorf("the kubeconfig of %s: %w", src.describe(), err)
	}
	return p, nil
}

func (s CredentialSource) describe() string {
	if s.Secret != nil {
		return fmt.Sprintf("Secret %s/%s (key %s)", s.Secret.Namespace, s.Secret.Name, s.Secret.Key)
	}
	return describeCredential(s.ProviderID, s.Slice)
}

func secretKubeconfig(ctx context.Context, c *member.Cluster, ref kubeconfig.SecretRef) ([]byte, error) {
	sec, err := c.Kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s not found on this cluster", ref.Namespace, ref.Name)
	}
	if err != nil {
		return nil, err
	}
	data := sec.Data[ref.Key]
	if len(data) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no %q key", ref.Namespace, ref.Name, ref.Key)
	}
	return data, nil
}
