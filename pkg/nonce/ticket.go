package nonce

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A Ticket is what the provider's administrator hands to the consumer's: the nonce together with the
// provider's cluster ID and the consumer ID it was made for. With the IDs in the same text as the nonce,
// the consumer's step needs no ID typed by hand, and a cluster that was never initialized can take the ID
// it was invited as instead of one derived on the spot, which the provider would then refuse.
//
// Its text form is one line, so that it still fits a shell variable, a CI secret and a file:
//
//	federate-nonce.v1.<provider>.<consumer>.<nonce>.<mac>
//
// Cluster IDs are DNS labels and base64url has no dot, so the dots split it unambiguously. The MAC is an
// HMAC-SHA256 keyed from the nonce, truncated to 128 bits: the IDs cannot be changed without the change
// showing, unless by someone who holds the nonce, who could ask for any identity the nonce allows anyway
// (the provider checks the consumer ID against the nonce it stored, whatever the ticket says).
type Ticket struct {
	ProviderID string // empty for a bare nonce
	ConsumerID string // empty for a bare nonce
	Nonce      string
}

// ticketPrefix marks a ticket, and its version, in front of everything else.
const ticketPrefix = "federate-nonce.v1."

// ticketMACContext separates the ticket's MAC key from every other use of the nonce.
const ticketMACContext = "kubectl-federate nonce ticket v1"

// ticketMACLen is the MAC's length in bytes: 128 bits are ample to show an edit, and keep the line short.
const ticketMACLen = 16

// Bare tells whether the ticket holds a nonce only, with no cluster IDs (the text of an older
// kubectl federate, or a nonce typed by hand).
func (t Ticket) Bare() bool { return t.ProviderID == "" && t.ConsumerID == "" }

// String is the ticket's text form; a bare ticket is its nonce.
func (t Ticket) String() string {
	if t.Bare() {
		return t.Nonce
	}
	return ticketPrefix + t.ProviderID + "." + t.ConsumerID + "." + t.Nonce + "." + encoding.EncodeToString(t.mac())
}

func (t Ticket) mac() []byte {
	m := hmac.New(sha256.New, []byte(t.Nonce))
	// Each part with its length, so that no two ID pairs give one message.
	fmt.Fprintf(m, "%s\n%d:%s\n%d:%s\n", ticketMACContext, len(t.ProviderID), t.ProviderID, len(t.ConsumerID), t.ConsumerID)
	return m.Sum(nil)[:ticketMACLen]
}

// ErrTicketChanged means a ticket's cluster IDs do not match its MAC.
var ErrTicketChanged = errors.New("its cluster IDs do not match its MAC: the text was changed after the provider printed it")

// ParseTicket reads a ticket's text form, or a bare nonce (Bare then tells). As with Parse, the caller
// trims the white space a file or a terminal adds.
func ParseTicket(s string) (Ticket, error) {
	rest, ok := strings.CutPrefix(s, ticketPrefix)
	if !ok {
		if strings.HasPrefix(s, "federate-nonce.") {
			return Ticket{}, fmt.Errorf("nonce %q: unknown version; this kubectl federate reads %q (upgrade it to read newer ones)", truncate(s), strings.TrimSuffix(ticketPrefix, "."))
		}
		if len(s) != EncodedLen {
			// Neither a ticket nor a bare nonce: say what is expected in the form it is printed today.
			if strings.HasPrefix(s, "nonce/") {
				return Ticket{}, fmt.Errorf("%q is create nonce's result line, not the nonce: the line to hand over is what kubectl federate get nonce --remote-cluster-id CONSUMER prints on the provider", truncate(s))
			}
			return Ticket{}, fmt.Errorf("not a nonce: want the one line kubectl federate get nonce prints (%sPROVIDER.CONSUMER.NONCE.MAC), got %d characters", ticketPrefix, len(s))
		}
		n, err := Parse(s)
		return Ticket{Nonce: n}, err
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return Ticket{}, fmt.Errorf("nonce %q: want %sPROVIDER.CONSUMER.NONCE.MAC, one line as the provider printed it", truncate(s), ticketPrefix)
	}
	t := Ticket{ProviderID: parts[0], ConsumerID: parts[1]}
	for _, id := range []struct{ what, v string }{{"provider", t.ProviderID}, {"consumer", t.ConsumerID}} {
		if errs := validation.IsDNS1123Label(id.v); len(errs) > 0 {
			return Ticket{}, fmt.Errorf("nonce: the %s cluster ID %q is not a DNS label", id.what, truncate(id.v))
		}
	}
	n, err := Parse(parts[2])
	if err != nil {
		return Ticket{}, err
	}
	t.Nonce = n
	mac, err := encoding.DecodeString(parts[3])
	if err != nil || !hmac.Equal(mac, t.mac()) {
		return Ticket{}, fmt.Errorf("nonce for consumer %q from provider %q: %w", t.ConsumerID, t.ProviderID, ErrTicketChanged)
	}
	return t, nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
