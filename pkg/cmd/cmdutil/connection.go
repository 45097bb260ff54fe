package cmdutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
)

// ConnectionError says that a cluster named by a flag could not be reached, in the user's terms: which
// flag, which server and context, and the likely cause, instead of a dial error from deep in the stack.
type ConnectionError struct {
	Flag    string // --kubeconfig or --remote-kubeconfig
	Server  string
	Context string
	Cause   string
	Err     error
	// Next is what the command can do about it (unauthenticate's --force), said after the cause.
	Next string
}

func (e *ConnectionError) Error() string {
	where := e.Server
	if e.Context != "" {
		where += ", context " + e.Context
	}
	msg := fmt.Sprintf("cannot reach the cluster of %s (%s): %s", e.Flag, where, e.Cause)
	if e.Next != "" {
		msg += "; " + e.Next
	}
	return msg
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// connectionError turns a transport error of this factory's cluster into a ConnectionError.
func (f *Factory) connectionError(r *http.Request, err error) error {
	ctxName := deref(f.Flags.Context)
	return &ConnectionError{Flag: "--" + f.prefix + "kubeconfig", Server: r.URL.Scheme + "://" + r.URL.Host, Context: ctxName, Cause: cause(err), Err: err}
}

// errUnauthorized stands for a 401 answer to the kubeconfig's own credentials.
var errUnauthorized = errors.New("401 Unauthorized")

// cause names what most likely went wrong, and what to check.
func cause(err error) string {
	if errors.Is(err, errUnauthorized) {
		return "401 Unauthorized: the server does not accept the kubeconfig's credentials (expired, revoked, or for another cluster)"
	}
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens at that address (is the API server up, and is this the right kubeconfig?)"
	case errors.As(err, &dns):
		return fmt.Sprintf("DNS: the host name %q does not resolve (check the server URL in the kubeconfig)", dns.Name)
	case errors.As(err, &unknownCA), errors.As(err, &verify):
		return "certificate: the server's certificate is not signed by the kubeconfig's certificate authority (another cluster, or a stale kubeconfig?)"
	case errors.As(err, &hostname):
		return "certificate: the server's certificate is for another host name than the kubeconfig's server URL"
	case errors.As(err, &invalid):
		return "certificate: the server's certificate is not valid (" + invalid.Error() + ")"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out: the server does not answer (a firewall, or the wrong address?)"
	}
	return err.Error()
}
