package controller

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/source"
)

// Reasons of a repository or registry whose credentials or TLS material cannot be had or used.
const (
	// ReasonCredentialsMissing: the credentials or tls Secret, or one of its keys, is not there.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonInvalidCredentials: the Secret's content is not credentials or TLS material.
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonAuthenticationFailed: the repository or registry refused the credentials (401/403).
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonVerificationFailed: the chart has no provenance file, or it does not verify against
	// the keyring of spec.chart.verify, or its cosign signature does not verify as
	// spec.chart.verify.cosign asks.
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonVerificationRequired: the controller requires every chart to be verified
	// (--require-verified), and the Release's is not, or its signer is not one the controller
	// allows (--allowed-signer, --allowed-issuer).
	ReasonVerificationRequired = "VerificationRequired"
)

// VerificationRequiredError says the controller requires every chart to be verified before it
// is released, and the Release's chart cannot be: it names no keyring (spec.chart.verify), or it
// comes from a ConfigMap or Secret, which carries no signature.
type VerificationRequiredError struct {
	// InCluster says the chart comes from a ConfigMap or Secret.
	InCluster bool
}

func (e *VerificationRequiredError) Error() string {
	if e.InCluster {
		return "this controller releases only charts verified before they are released (--require-verified), and a chart held in a ConfigMap or Secret carries no signature: serve it from a repository or registry with its provenance file, and set spec.chart.verify"
	}
	return "this controller releases only charts verified before they are released (--require-verified): set spec.chart.verify to the Secret holding the keyring of the chart's signer, or, for a chart of an OCI registry, to provider cosign with its signer's key or keyless identity, or to provider notation with the Secret of its trust policy and trust store"
}

// checkVerified refuses, when required, a Release whose chart d is not verified.
func checkVerified(d *desired, required bool) error {
	switch {
	case !required:
		return nil
	case d.ChartIn != nil:
		return &VerificationRequiredError{InCluster: true}
	case !d.Chart.verified():
		return &VerificationRequiredError{}
	}
	return nil
}

// chartAccess is how a fetch reaches a repository or registry: its credentials and TLS
// material, as read from the Release's Secrets. It is never printed.
type chartAccess struct {
	Username, Password string
	TLS                source.TLSData
	// Keyring is the public keyring of spec.chart.verify, nil when the chart is not verified.
	Keyring []byte
	// Cosign is the cosign verification of spec.chart.verify.cosign, with its key or trusted
	// root; nil when it asks for none.
	Cosign *provenance.CosignOptions
	// Notation is the notation verification of spec.chart.verify.notation, with its trust
	// policy and trust store; nil when it asks for none.
	Notation *provenance.NotationOptions
}

// The keys of the credentials and tls Secrets.
const (
	keyUsername = "username"
	keyPassword = "password"
	keyCA       = "ca.crt"
	keyCert     = corev1.TLSCertKey
	keyKey      = corev1.TLSPrivateKeyKey
	// keyKeyring is the default key of the verify Secret, gpg's name for a public keyring.
	keyKeyring = "pubring.gpg"
)

// ChartAccessError says that a credentials or tls Secret holds something berth cannot use. It
// names the Secret and the key, never their content.
type ChartAccessError struct {
	Namespace, Name, Key string
	// Field is the spec field that names the Secret.
	Field string
	Err   error
}

func (e *ChartAccessError) Error() string {
	return fmt.Sprintf("Secret/%s/%s key %s (spec.%s): %v", e.Namespace, e.Name, e.Key, e.Field, e.Err)
}

func (e *ChartAccessError) Unwrap() error { return e.Err }

func (e *ChartAccessError) conditionReason() string { return ReasonInvalidCredentials }

// ChartAuthError is a repository or registry that refused the credentials of a Release's
// credentials Secret, or asked for credentials the Release gives none of.
type ChartAuthError struct {
	// Host is the server's HOST[:PORT].
	Host string
	// Secret is Secret/NAMESPACE/NAME of the credentials, empty when the Release gives none.
	Secret string
	Err    error
}

func (e *ChartAuthError) Error() string {
	if e.Secret == "" {
		return fmt.Sprintf("authentication to %s failed: it asks for credentials: name a Secret with them in spec.chart.credentials: %v", e.Host, e.Err)
	}
	return fmt.Sprintf("authentication to %s failed with the credentials of %s: fix them there: %v", e.Host, e.Secret, e.Err)
}

func (e *ChartAuthError) Unwrap() error { return e.Err }

func (e *ChartAuthError) conditionReason() string { return ReasonAuthenticationFailed }

// authFailed returns err, a fetch's, as a ChartAuthError when the server refused the
// credentials of ref (or asked for some).
func authFailed(err error, ref chartRef, namespace string) error {
	var srcErr *source.Error
	if !errors.As(err, &srcErr) || srcErr.Kind != source.KindUnauthorized && srcErr.Kind != source.KindNoCredentials {
		return err
	}
	host := srcErr.Host
	var authErr *source.AuthError
	if errors.As(err, &authErr) {
		host = authErr.Host
	}
	if host == "" {
		host = hostOfRef(ref)
	}
	e := &ChartAuthError{Host: host, Err: err}
	if ref.Credentials != "" {
		e.Secret = fmt.Sprintf("Secret/%s/%s", namespace, ref.Credentials)
	}
	return e
}

// VerificationError is a chart that failed the provenance check of spec.chart.verify: it has no
// provenance file, or its signature is not by a key of the keyring, or the chart is not the one
// signed. The chart is not released.
type VerificationError struct {
	// Chart is the chart's reference (and version constraint).
	Chart string
	// Keyring is Secret/NAMESPACE/NAME key KEY of the keyring.
	Keyring string
	Err     error
}

func (e *VerificationError) Error() string {
	return fmt.Sprintf("chart %s failed verification against the keyring of %s: %s", e.Chart, e.Keyring, e.why())
}

// why says what of the provenance check failed, in words, then Helm's error.
func (e *VerificationError) why() string {
	var prov *source.ProvenanceError
	msg := oneLine(e.Err)
	if errors.As(e.Err, &prov) {
		msg = oneLine(prov.Err)
	}
	switch {
	case prov != nil && prov.Missing:
		return "no provenance file (.prov): " + msg
	case strings.Contains(msg, "unknown entity"), strings.Contains(msg, "unknown issuer"):
		return "signed by a key not in the keyring: " + msg
	case strings.Contains(msg, "sum does not match"):
		return "the chart is not the one signed (digest mismatch): " + msg
	case strings.Contains(msg, "openpgp:"):
		return "signature invalid: " + msg
	}
	return msg
}

func (e *VerificationError) Unwrap() error { return e.Err }

func (e *VerificationError) conditionReason() string { return ReasonVerificationFailed }

// verificationFailed returns err, a fetch's, as a VerificationError when the chart of ref
// failed its provenance check.
func verificationFailed(err error, ref chartRef, namespace string) error {
	var srcErr *source.Error
	if !ref.verified() || !errors.As(err, &srcErr) || srcErr.Kind != source.KindUnverified {
		return err
	}
	chart := ref.Ref
	if ref.RepoURL != "" {
		chart = fmt.Sprintf("%s of %s", ref.Ref, ref.RepoURL)
	}
	if ref.Version != "" {
		chart = fmt.Sprintf("%s version %q", chart, ref.Version)
	}
	var sigErr *provenance.Error
	if ref.Cosign != nil && errors.As(err, &sigErr) {
		return &CosignVerificationError{Chart: chart, Against: ref.Cosign.against(namespace), Sig: sigErr}
	}
	if ref.Notation != "" && errors.As(err, &sigErr) {
		return &CosignVerificationError{Chart: chart, Against: fmt.Sprintf("the trust policy and trust store of Secret/%s/%s", namespace, ref.Notation), Sig: sigErr}
	}
	return &VerificationError{Chart: chart, Keyring: fmt.Sprintf("Secret/%s/%s key %s", namespace, ref.Verify, ref.VerifyKey), Err: err}
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// hostOfRef is the HOST[:PORT] of the repository or registry of ref.
func hostOfRef(ref chartRef) string {
	u := cmp.Or(ref.RepoURL, ref.Ref)
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	}
	host, _, _ := strings.Cut(u, "/")
	return host
}

// readChartAccess reads, with r, the credentials and TLS material of ref's Secrets.
func readChartAccess(ctx context.Context, r inputs.KeyReader, ref chartRef) (chartAccess, error) {
	var a chartAccess
	if ref.Credentials != "" {
		s, err := r.Secret(ctx, ref.Credentials, keyUsername)
		if err != nil {
			return a, credentialsMissing(err, "chart.credentials")
		}
		if a.Username, a.Password, err = credentialsIn(s, r.Namespace, hostOfRef(ref)); err != nil {
			return a, credentialsMissing(err, "chart.credentials")
		}
	}
	if ref.TLS != "" {
		s, err := r.Secret(ctx, ref.TLS, keyCA)
		if err != nil {
			return a, credentialsMissing(err, "chart.tls")
		}
		if a.TLS, err = tlsIn(s, r.Namespace); err != nil {
			return a, credentialsMissing(err, "chart.tls")
		}
	}
	if ref.Verify != "" {
		k, err := r.Read(ctx, "Secret", ref.Verify, ref.VerifyKey)
		if err != nil {
			return a, credentialsMissing(err, "chart.verify")
		}
		if err := source.CheckKeyring(k); err != nil {
			return a, &ChartAccessError{Namespace: r.Namespace, Name: ref.Verify, Key: ref.VerifyKey, Field: "chart.verify", Err: err}
		}
		a.Keyring = k
	}
	if ref.Cosign != nil {
		var err error
		if a.Cosign, err = readCosign(ctx, r, *ref.Cosign); err != nil {
			return a, err
		}
	}
	if ref.Notation != "" {
		var err error
		if a.Notation, err = readNotation(ctx, r, ref.Notation); err != nil {
			return a, err
		}
	}
	return a, nil
}

// credentialsMissing gives an inputs.MissingError of a credentials or tls Secret its reason and what to
// do; other errors pass as they are.
func credentialsMissing(err error, field string) error {
	var missing *inputs.MissingError
	if !errors.As(err, &missing) {
		return err
	}
	missing.Reason = ReasonCredentialsMissing
	switch field {
	case "chart.credentials":
		missing.Next = fmt.Sprintf("give the Secret keys username and password (kubectl create secret generic %s --from-literal=username=USER --from-literal=password=PASSWORD), or make it a kubernetes.io/dockerconfigjson Secret for an OCI registry, or fix spec.%s", missing.Name, field)
	case "chart.verify":
		missing.Next = fmt.Sprintf("put the public keyring there (kubectl create secret generic %s --from-file=%s=PUBRING.gpg), or fix spec.%s", missing.Name, missing.Key, field)
	case "chart.verify.cosign.key":
		missing.Next = fmt.Sprintf("put the cosign public key there (kubectl create secret generic %s --from-file=%s=cosign.pub), or fix spec.%s", missing.Name, missing.Key, field)
	case "chart.verify.notation":
		missing.Next = fmt.Sprintf("put notation's trust policy and trust store there (kubectl create secret generic %s --from-file=trustpolicy.oci.json --from-file=ca.STORE.root.crt=ROOT.crt), or fix spec.%s", missing.Name, field)
	case "chart.verify.cosign.trustedRoot":
		missing.Next = fmt.Sprintf("put the Sigstore trusted root there (kubectl create secret generic %s --from-file=%s=trusted_root.json), or fix spec.%s", missing.Name, missing.Key, field)
	default:
		missing.Next = fmt.Sprintf("give the Secret key ca.crt, and tls.crt with tls.key for a client certificate (kubectl create secret generic %s --from-file=ca.crt=CA.pem), or fix spec.%s", missing.Name, field)
	}
	return missing
}

// credentialsIn returns the username and password that the credentials Secret s (of namespace
// ns) holds for host: its keys username and password, or its .dockerconfigjson's entry for host.
func credentialsIn(s *corev1.Secret, ns, host string) (string, string, error) {
	missing := func(key string) error {
		return &inputs.MissingError{Kind: "Secret", Namespace: ns, Name: s.Name, Key: key}
	}
	if s.Type == corev1.SecretTypeDockerConfigJson {
		data, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return "", "", missing(corev1.DockerConfigJsonKey)
		}
		u, p, err := source.DockerConfigCredentials(data, host)
		if err != nil {
			return "", "", &ChartAccessError{Namespace: ns, Name: s.Name, Key: corev1.DockerConfigJsonKey, Field: "chart.credentials", Err: err}
		}
		return u, p, nil
	}
	u, ok := s.Data[keyUsername]
	if !ok {
		return "", "", missing(keyUsername)
	}
	p, ok := s.Data[keyPassword]
	if !ok {
		return "", "", missing(keyPassword)
	}
	return string(u), string(p), nil
}

// tlsIn returns the TLS material of the tls Secret s (of namespace ns), checked.
func tlsIn(s *corev1.Secret, ns string) (source.TLSData, error) {
	d := source.TLSData{CA: s.Data[keyCA], Cert: s.Data[keyCert], Key: s.Data[keyKey]}
	fail := func(key string, err error) error {
		return &ChartAccessError{Namespace: ns, Name: s.Name, Key: key, Field: "chart.tls", Err: err}
	}
	missing := func(key string) error {
		return &inputs.MissingError{Kind: "Secret", Namespace: ns, Name: s.Name, Key: key}
	}
	switch {
	case len(d.Cert) > 0 && len(d.Key) == 0:
		return d, missing(keyKey)
	case len(d.Key) > 0 && len(d.Cert) == 0:
		return d, missing(keyCert)
	case len(d.CA) == 0 && len(d.Cert) == 0:
		return d, missing(keyCA)
	}
	if len(d.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(d.CA) {
		return d, fail(keyCA, errors.New("holds no PEM certificate"))
	}
	if len(d.Cert) > 0 {
		if _, err := tls.X509KeyPair(d.Cert, d.Key); err != nil {
			// tls's errors say what is wrong without quoting the key.
			return d, fail(keyCert+" and "+keyKey, fmt.Errorf("are not a certificate and its key: %w", err))
		}
	}
	return d, nil
}

// warnAuthFailed records a Warning event when err is a repository or registry that refused the
// Release's credentials, and its Ready condition did not say so already: once per failure, not
// at every look.
func (r *Reconciler) warnAuthFailed(rel *v1alpha1.Release, err error) {
	var authErr *ChartAuthError
	if !errors.As(err, &authErr) {
		return
	}
	if c := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady); c != nil && c.Reason == ReasonAuthenticationFailed {
		return
	}
	r.Recorder.Eventf(rel, nil, corev1.EventTypeWarning, ReasonAuthenticationFailed, "fetch", "%s", status.EventNote(nil, err))
}
