package provenance

import "fmt"

// Reason says why a chart's signature did not verify. Callers branch on it (the CLI picks its words,
// the controller its condition message); it is stable and safe to show.
type Reason string

const (
	// ReasonNoSignature: no signature of the asked provider refers to the digest, or none that
	// parses.
	ReasonNoSignature Reason = "NoSignature"
	// ReasonWrongIdentity: a keyless signature verified, but its certificate names another signer; or a
	// notation signature is anchored in the trust store, but the trust policy's trusted identities do
	// not name its signer.
	ReasonWrongIdentity Reason = "WrongIdentity"
	// ReasonWrongIssuer: a keyless signature verified, but its identity was issued by another OIDC
	// issuer.
	ReasonWrongIssuer Reason = "WrongIssuer"
	// ReasonNotInLog: a keyless signature has no transparency log entry, or its inclusion proof
	// does not hold against the trusted root.
	ReasonNotInLog Reason = "NotInLog"
	// ReasonUntrusted: a signature was found but does not verify against the given key, its
	// certificate does not chain to the trusted root or trust store, it has expired or been revoked,
	// its envelope is not intact, it needs a verification plugin, or it signs another digest.
	ReasonUntrusted Reason = "Untrusted"
	// ReasonBoundsExceeded: the registry or the tenant's material is larger than the limits allow
	// (a manifest, a bundle, too many signatures).
	ReasonBoundsExceeded Reason = "BoundsExceeded"
	// ReasonInvalidOptions: the options themselves are unusable (no provider or two, an unparsable
	// key, trusted root, trust policy, certificate or regular expression, a trust policy without a
	// statement for the repository or whose statement does not enforce authenticity).
	ReasonInvalidOptions Reason = "InvalidOptions"
	// ReasonRegistry: the registry could not be read (network, authentication, cancellation).
	ReasonRegistry Reason = "RegistryError"
)

// Error is every error Verify returns. It names the chart's reference and digest, the provider, the
// reason, and a detail that holds no secret (no key material, no token).
type Error struct {
	Reason    Reason
	Provider  Provider
	Reference string
	Digest    string
	Detail    string
	Err       error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s@%s: %s verification: %s", e.Reference, e.Digest, e.Provider, e.Reason)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Reason: ReasonX}) match any Error with that reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason && t.Reference == "" && t.Digest == ""
}

// BoundsError is wrapped by an Error with ReasonBoundsExceeded: what was too large, its limit.
type BoundsError struct {
	What  string
	Limit int64
}

func (e *BoundsError) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %d; raise the limit or ask the publisher for a smaller one", e.What, e.Limit)
}
