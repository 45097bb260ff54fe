package handshake

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// RemoveTenant (provider) revokes a consumer: its RoleBinding, Tenant (and with it the pinned key),
// nonce, leftover CSRs and, unless keepNamespace, its tenant namespace, waiting until they are gone. It
// succeeds when there is nothing left to remove.
func (c *Cluster) RemoveTenant(ctx context.Context, consumerID string, keepNamespace bool) error {
	r := c.report()
	ns := TenantNamespace(consumerID)
	return step(r, "Removing tenant "+consumerID, "Tenant "+consumerID+" removed (binding, Tenant, nonce, CSRs"+nsNote(keepNamespace, ns)+")", func() error {
		// The binding goes first: from then on the consumer's certificate grants nothing.
		errs := []error{
			ignoreNotFound(c.Kube.RbacV1().RoleBindings(ns).Delete(ctx, RoleBindingName, metav1.DeleteOptions{})),
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Delete(ctx, consumerID, metav1.DeleteOptions{})),
			c.nonces().Delete(ctx, consumerID),
			ignoreNotFound(c.Kube.CoordinationV1().Leases(SystemNamespace).Delete(ctx, "authenticate-"+consumerID, metav1.DeleteOptions{})),
			ignoreNotFound(c.Kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: labels.SelectorFromSet(PairingLabels(consumerID)).String()})),
		}
		if !keepNamespace {
			errs = append(errs, c.deleteNamespace(ctx, ns))
		}
		return errors.Join(errs...)
	})
}

// RemoveIdentity (consumer) forgets a provider: its Identity, kubeconfig Secret, pending client key and,
// unless keepNamespace, the tenant namespace, waiting until they are gone.
func (c *Cluster) RemoveIdentity(ctx context.Context, providerID string, keepNamespace bool) error {
	r := c.report()
	ns := TenantNamespace(providerID)
	return step(r, "Removing identity for "+providerID, "Identity for "+providerID+" removed (Identity, kubeconfig, keys"+nsNote(keepNamespace, ns)+")", func() error {
		secrets := c.Kube.CoreV1().Secrets(ns)
		errs := []error{
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(ns).Delete(ctx, IdentityName(providerID), metav1.DeleteOptions{})),
			ignoreNotFound(secrets.Delete(ctx, KubeconfigSecretName(providerID), metav1.DeleteOptions{})),
			ignoreNotFound(secrets.Delete(ctx, PendingKeySecretName(providerID), metav1.DeleteOptions{})),
		}
		if !keepNamespace {
			errs = append(errs, c.deleteNamespace(ctx, ns))
		}
		return errors.Join(errs...)
	})
}

func nsNote(keep bool, ns string) string {
	if keep {
		return "; namespace " + ns + " kept"
	}
	return ", namespace " + ns
}

// deleteNamespace deletes a namespace and watches until the namespace controller has finished with it.
func (c *Cluster) deleteNamespace(ctx context.Context, name string) error {
	delete(c.ensured, name)
	nss := c.Kube.CoreV1().Namespaces()
	if err := nss.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return ignoreNotFound(err)
	}
	ns, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.waitDeleted(ctx, nss, name, ns.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	return nil
}

// ignoreNotFound treats "already gone" as success, and a missing CRD (never initialized) likewise.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
