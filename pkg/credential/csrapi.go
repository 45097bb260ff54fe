package credential

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	certv1 "k8s.io/api/certificates/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// IssuedSlack is how much later than asked a certificate may expire: clock skew between this CLI's view of
// the API server's clock (one-second Date headers) and the signer's, and the time the signer took.
const IssuedSlack = 2 * time.Minute

// CreateCSR submits the consumer's CSR to the kube-apiserver-client signer under a name the API server
// generates, so that nobody can pre-create "our" CSR: the run approves exactly the object this call
// returns, never one it finds.
// labels carry at least TenantLabels(consumerID), which unauthenticate removes CSRs by.
func CreateCSR(ctx context.Context, c *member.Cluster, consumerID string, labels map[string]string, csrPEM []byte, expiration time.Duration) (*certv1.CertificateSigningRequest, error) {
	seconds := int32(min(expiration/time.Second, 1<<31-1)) //nolint:gosec // bounded just before
	obj, err := c.Kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "federate-" + consumerID + "-", Labels: labels},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:           csrPEM,
			SignerName:        certv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: &seconds,
			Usages:            []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a CertificateSigningRequest: %w", err)
	}
	return obj, nil
}

// DeleteCSR removes the run's CSR, best effort, also when issuance failed, with a fresh context so that an
// expired --timeout still cleans up; the UID precondition makes sure it is the object this run created.
func DeleteCSR(ctx context.Context, c *member.Cluster, obj *certv1.CertificateSigningRequest) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	_ = c.Kube.CertificatesV1().CertificateSigningRequests().Delete(dctx, obj.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &obj.UID},
	})
}

// RemoveStaleCSRs deletes this consumer's CSRs that the same operator created in runs that died before
// they could delete theirs. It runs only once this run holds the nonce, so no live run's CSR is among them:
// a concurrent run for the same nonce has lost, and deletes only its own.
func RemoveStaleCSRs(ctx context.Context, c *member.Cluster, consumerID string, ours *certv1.CertificateSigningRequest) error {
	csrs := c.Kube.CertificatesV1().CertificateSigningRequests()
	list, err := TenantCSRsRead(c, consumerID).Take(ctx, c)
	if err != nil {
		return fmt.Errorf("listing stale CertificateSigningRequests: %w", err)
	}
	var errs []error
	for i := range list.Items {
		old := &list.Items[i]
		if old.UID == ours.UID || old.Spec.Username != ours.Spec.Username {
			continue
		}
		err := csrs.Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// approveAndWait approves the CSR this run created (the update carries its resourceVersion, so it applies
// to that very object, unchanged since) and watches for the certificate for at most signerTimeout
// (0: DefaultSignerTimeout): past it, ErrNoCertificate. The watch starts from the version this run created,
// at the same time as the approval: the certificate is seen one round trip after the request, not two.
func approveAndWait(ctx context.Context, c *member.Cluster, obj *certv1.CertificateSigningRequest, signerTimeout time.Duration) ([]byte, error) {
	if signerTimeout <= 0 {
		signerTimeout = DefaultSignerTimeout
	}
	if c.DryRun {
		name := obj.Name
		if name == "" {
			name = obj.GenerateName + "*" // a client dry run: the server never named it
		}
		return nil, &member.DryRunStop{At: "the approval of CertificateSigningRequest " + name,
			Why: "a dry run creates no CertificateSigningRequest, so no signer issues the certificate the next steps need"}
	}
	csrs := c.Kube.CertificatesV1().CertificateSigningRequests()
	name := obj.Name
	approved := obj.DeepCopy()
	approved.Status.Conditions = append(approved.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlFederateApproved",
		Message: "Verified by kubectl federate: nonce, signature and exact subject",
	})
	var cert []byte
	wctx, cancel := context.WithTimeout(ctx, signerTimeout)
	defer cancel()
	watched := make(chan error, 1)
	go func() {
		watched <- c.WaitFor(wctx, csrs, name, obj.ResourceVersion, func(ev watch.Event) (bool, error) {
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("CertificateSigningRequest %s was deleted before it was signed", name)
			}
			o, ok := ev.Object.(*certv1.CertificateSigningRequest)
			if !ok {
				return false, nil
			}
			for _, cond := range o.Status.Conditions {
				if cond.Type == certv1.CertificateDenied || cond.Type == certv1.CertificateFailed {
					return false, fmt.Errorf("CertificateSigningRequest %s: %s: %s", name, cond.Reason, cond.Message)
				}
			}
			cert = o.Status.Certificate
			return len(cert) > 0, nil
		})
	}()
	if _, err := csrs.UpdateApproval(ctx, name, approved, metav1.UpdateOptions{}); err != nil {
		cancel()
		if werr := <-watched; werr != nil && !errors.Is(werr, context.Canceled) {
			err = errors.Join(err, werr)
		}
		return nil, fmt.Errorf("approving CertificateSigningRequest %s: %w", name, err)
	}
	err := <-watched
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		// Our bound, not the command's --timeout: the signer is silent, which is a fact about the cluster.
		return nil, fmt.Errorf("%w: CertificateSigningRequest %s was approved, but no certificate came within %s. "+
			"No controller seems to sign %s on this cluster (EKS never does; a kube-controller-manager whose list of controllers leaves out csrsigning does not)",
			ErrNoCertificate, name, signerTimeout, certv1.KubeAPIServerClientSignerName)
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for the certificate: %w", err)
	}
	return cert, nil
}

// checkIssued refuses a certificate that is not exactly what was asked: the request's public key and
// subject, valid for client authentication, and expiring no later than latest.
func checkIssued(certPEM []byte, req *x509.CertificateRequest, latest time.Time) (*x509.Certificate, error) {
	cert, err := ParseCertificate("issued certificate", certPEM)
	if err != nil {
		return nil, err
	}
	switch {
	case !SamePublicKey(cert.PublicKey, req.PublicKey):
		return nil, errors.New("issued certificate: certifies another public key than the request's")
	case cert.Subject.CommonName != req.Subject.CommonName || !slices.Equal(cert.Subject.Organization, req.Subject.Organization):
		return nil, fmt.Errorf("issued certificate: subject %q differs from the request's %q", cert.Subject.String(), req.Subject.String())
	case !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth):
		return nil, errors.New("issued certificate: is not valid for client authentication")
	case cert.NotAfter.After(latest):
		return nil, fmt.Errorf("issued certificate: expires at %s, later than asked (%s)", cert.NotAfter.UTC().Format(time.RFC3339), latest.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

// TenantCSRsRead lists the CSRs of a consumer's pairing identity: not a slice's (LabelSlice) nor an
// exchange credential's (LabelExchange), which belong to other issuances.
func TenantCSRsRead(c *member.Cluster, consumerID string) member.Read[*certv1.CertificateSigningRequestList] {
	return member.NewRead[*certv1.CertificateSigningRequestList]("CSRs/"+consumerID, func(ctx context.Context) (*certv1.CertificateSigningRequestList, error) {
		return c.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(member.TenantLabels(consumerID)).String() + ",!" + member.LabelSlice + ",!" + member.LabelExchange})
	})
}
