package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/plugins"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/yamlbound"
)

// Error is a chart reference that could not be resolved, fetched or loaded. Kind says what
// went wrong; Err is Helm's error. The caller words what to do from them.
type Error struct {
	// Ref is the reference as given.
	Ref string
	// Repo is the repository URL given with the reference (--repo), if any.
	Repo string
	// RepoName is the name of the repository in the user's repositories.yaml that REPO/CHART
	// names, if any.
	RepoName string
	// Version is the version constraint asked for; empty means the latest stable version.
	Version string
	// Kind is the cause, KindUnknown when it is none berth tells apart.
	Kind Kind
	// Host is the registry's HOST[:PORT] of an oci:// reference. A chart repository that
	// timed out is named by the TimeoutError in Err.
	Host string
	Err  error
}

func (e *Error) Error() string {
	what := e.Ref
	if e.Repo != "" {
		what = fmt.Sprintf("%s in repository %s", e.Ref, e.Repo)
	}
	if e.Version != "" {
		what = fmt.Sprintf("%s version %q", what, e.Version)
	}
	return fmt.Sprintf("chart %s: %s: %v", what, e.Kind, oneLine(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// oneLine is err's message on one line.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// KindOf classifies an error of Helm's getters, downloader and repository packages. Helm's
// HTTP getter reports an HTTP status only in its message ("failed to fetch URL : 401
// Unauthorized"), so statuses are read from there.
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		recordHeader     tls.RecordHeaderError
		alert            tls.AlertError
		urlErr           *url.Error
		netErr           net.Error
		opErr            *net.OpError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname),
		errors.As(err, &verification), errors.As(err, &recordHeader), errors.As(err, &alert),
		strings.Contains(msg, "x509: "), strings.Contains(msg, "tls: "):
		return KindTLS
	case strings.Contains(msg, " 401 Unauthorized"), strings.Contains(msg, " 403 Forbidden"),
		strings.Contains(msg, "unauthorized"), strings.Contains(msg, "basic credential not found"):
		return KindUnauthorized
	case strings.Contains(msg, " 404 Not Found"):
		return KindMissing
	case errors.Is(err, repo.ChartNotFoundError{}):
		return KindNotInRepository
	case errors.As(err, &opErr), errors.As(err, &netErr), errors.As(err, &urlErr):
		return KindUnreachable
	}
	return KindUnknown
}

// RegistryOp is an operation on an OCI registry other than fetching a chart.
type RegistryOp string

// The operations of RegistryError.
const (
	OpLogin  RegistryOp = "log in to"
	OpLogout RegistryOp = "log out of"
	OpPush   RegistryOp = "push to"
)

// RegistryError is a registry login, logout or push that failed. Err is Helm's error.
type RegistryError struct {
	Op RegistryOp
	// Host is the registry's HOST[:PORT].
	Host string
	// Ref is the oci:// reference pushed to, for OpPush.
	Ref  string
	Kind Kind
	Err  error
}

func (e *RegistryError) Error() string {
	target := e.Host
	if e.Ref != "" {
		target = e.Ref
	}
	return fmt.Sprintf("%s %s: %v", e.Op, target, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// TimeoutStep is what took too long in a fetch that timed out.
type TimeoutStep string

// The steps of TimeoutError.
const (
	// StepConnect: the TCP connection (FetchOptions.DialTimeout).
	StepConnect TimeoutStep = "connecting"
	// StepTLSHandshake: the TLS handshake (FetchOptions.TLSHandshakeTimeout).
	StepTLSHandshake TimeoutStep = "the TLS handshake"
	// StepResponseHeaders: the wait for the response's headers once the request was sent
	// (FetchOptions.ResponseHeaderTimeout).
	StepResponseHeaders TimeoutStep = "waiting for the response"
	// StepRequest: one request as a whole, its body included (FetchOptions.RequestTimeout).
	StepRequest TimeoutStep = "the request"
	// StepFetch: the fetch as a whole, within the deadline of its context (a Release's
	// spec.timeout, in the controller).
	StepFetch TimeoutStep = "the fetch"
)

// TimeoutError is a chart repository or OCI registry that took the connection (or did not
// refuse it) and did not answer in time, or answered too slowly to finish in time.
type TimeoutError struct {
	// Host is the server's HOST[:PORT].
	Host string
	// URL is the request that was under way, when one is known.
	URL  string
	Step TimeoutStep
	// After is the time the step was given; 0 when it is not known.
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("host %s did not answer in time: %s timed out", e.Host, e.Step)
	if e.After > 0 {
		msg += " after " + e.After.String()
	}
	if e.URL != "" {
		msg += " (" + e.URL + ")"
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, as net.Error's timeouts do.
func (e *TimeoutError) Timeout() bool { return true }

// TooLargeError is a response larger than a fetch takes: a repository index above
// FetchOptions.MaxIndexBytes, a chart above MaxChartBytes.
type TooLargeError struct {
	// What is what was fetched: "repository index", "chart", "provenance file", "manifest",
	// "tag list".
	What string
	URL  string
	// Limit is the most bytes allowed.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s %s is larger than the %d bytes allowed", e.What, e.URL, e.Limit)
}

// ExpansionError is a document (a repository index, a chart's values file) whose YAML aliases
// would expand it past a limit (Err, a *yamlbound.ExpansionError, says which), refused before
// anything expands them.
type ExpansionError struct {
	// What is what the document is: "repository index".
	What string
	// Where names it: the index's URL or file.
	Where string
	Err   error
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.What, e.Where, e.Err)
}

func (e *ExpansionError) Unwrap() error { return e.Err }

// LoadIndexFile loads the repository index at path as Helm's repo.LoadIndexFile does, once what
// its YAML aliases add is within yamlbound.Local: a cached index is what a repository served.
func LoadIndexFile(path string) (*repo.IndexFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return repo.LoadIndexFile(path) // Helm's words for a missing or unreadable index
	}
	if err := yamlbound.Check(data, yamlbound.Local); err != nil {
		return nil, &ExpansionError{What: "repository index", Where: path, Err: err}
	}
	return repo.LoadIndexFile(path)
}

// InsecureCredentialsError is a request that would carry credentials over plain HTTP, which a
// fetch for many tenants (FetchOptions.ManyTenants) refuses before sending it: an http:// URL,
// or a redirect from https:// to one.
type InsecureCredentialsError struct {
	Host, URL string
	// Redirect says it was a redirect.
	Redirect bool
}

func (e *InsecureCredentialsError) Error() string {
	if e.Redirect {
		return fmt.Sprintf("redirect to %s refused: it would carry the credentials over plain HTTP to %s", e.URL, e.Host)
	}
	return fmt.Sprintf("request to %s refused: it would carry the credentials over plain HTTP to %s", e.URL, e.Host)
}

// DigestError is a download whose content is not the digest its index gives.
type DigestError struct {
	URL       string
	Want, Got string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("digest mismatch: %s has digest %s, its repository's index says %s", e.URL, e.Got, e.Want)
}

// AuthError is a chart repository that refused a request: 401 Unauthorized or 403 Forbidden.
// It names the server and whether credentials were sent, never the credentials.
type AuthError struct {
	// Host is the server's HOST[:PORT].
	Host string
	// URL is the request refused.
	URL string
	// Status is the HTTP status line, 401 Unauthorized or 403 Forbidden.
	Status string
	// WithCredentials says whether the request carried credentials.
	WithCredentials bool
}

func (e *AuthError) Error() string {
	if !e.WithCredentials {
		return fmt.Sprintf("host %s asks for credentials and none were sent: authentication failed (%s) for %s", e.Host, e.Status, e.URL)
	}
	return fmt.Sprintf("host %s refused the credentials: authentication failed (%s) for %s", e.Host, e.Status, e.URL)
}

// TLSError is a TLS connection to a chart repository that failed: a certificate the client does
// not trust (no CA given, or the wrong one), a client certificate the server refused.
type TLSError struct {
	// Host is the server's HOST[:PORT].
	Host string
	URL  string
	Err  error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("host %s: TLS handshake failed (give the CA that signed its certificate, or the client certificate it asks for): %v", e.Host, e.Err)
}

func (e *TLSError) Unwrap() error { return e.Err }

// ProvenanceError is a chart that failed its provenance check: its provenance file could not
// be had (Missing), or does not verify against the keyring (a signature by a key not in it, a
// chart whose digest is not the one signed).
type ProvenanceError struct {
	// Chart is the archive checked, NAME-VERSION.tgz; empty when Missing.
	Chart string
	// Missing says the provenance file could not be fetched.
	Missing bool
	Err     error
}

func (e *ProvenanceError) Error() string { return e.Err.Error() }

func (e *ProvenanceError) Unwrap() error { return e.Err }

// NotServedError is an OCI registry that named a chart's manifest digest (for a tag, or the
// digest asked for) and then did not serve the content of that digest: no manifest, no chart
// layer, or content of another digest. What another fetch put into the content cache under that
// digest is not served in its stead.
type NotServedError struct {
	// Host is the registry's HOST[:PORT].
	Host string
	// Ref is the oci:// reference fetched.
	Ref string
	// Digest is the manifest digest the registry named.
	Digest string
	Err    error
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("registry %s names digest %s for %s but does not serve its content: %v", e.Host, e.Digest, e.Ref, oneLine(e.Err))
}

func (e *NotServedError) Unwrap() error { return e.Err }

// notServed reports whether err, of kind, is a registry that did not serve the content of a
// digest it named, rather than a failure of its own kind (credentials, TLS, time, size).
func notServed(err error, kind Kind) bool {
	switch kind {
	case KindUnknown, KindNotFound, KindMissing, KindDigestMismatch:
		return errors.As(err, new(*NotServedError))
	}
	return false
}

// fetchKind is the kind of the errors berth's own fetch makes (timeouts, sizes, digests,
// cancellation); ok is false for others.
func fetchKind(err error) (Kind, bool) {
	var (
		timeout   *TimeoutError
		large     *TooLargeError
		digest    *DigestError
		authErr   *AuthError
		tlsErr    *TLSError
		provErr   *ProvenanceError
		getterErr *plugins.GetterError
	)
	var sigErr *provenance.Error
	switch {
	case errors.As(err, &provErr):
		return KindUnverified, true
	case errors.As(err, &sigErr):
		return signatureKind(sigErr)
	case errors.As(err, &authErr):
		if authErr.WithCredentials {
			return KindUnauthorized, true
		}
		return KindNoCredentials, true
	case errors.As(err, &tlsErr):
		return KindTLS, true
	case errors.As(err, new(*InsecureCredentialsError)):
		return KindPlainHTTP, true
	case errors.As(err, &timeout), errors.As(err, &getterErr) && getterErr.Timeout > 0:
		return KindTimeout, true
	case errors.As(err, new(*NoGetterError)):
		return KindNoGetter, true
	case errors.As(err, &large):
		return KindTooLarge, true
	case errors.As(err, &digest):
		return KindDigestMismatch, true
	case errors.Is(err, context.Canceled):
		return KindCanceled, true
	}
	return KindUnknown, false
}

// DeadlineError is the TimeoutError of a fetch from repoURL that was given after and did not end
// within it, when which request was under way is not known.
func DeadlineError(repoURL string, after time.Duration) *TimeoutError {
	return &TimeoutError{Host: hostOf(repoURL), Step: StepFetch, After: after, Err: context.DeadlineExceeded}
}

// signatureKind is the kind of a signature's failed verification: unverified, unless what
// failed was reading the registry (its own kind) or a signature beyond the limits.
func signatureKind(e *provenance.Error) (Kind, bool) {
	switch e.Reason {
	case provenance.ReasonRegistry:
		if k, ok := fetchKind(e.Err); ok {
			return k, true
		}
		return KindUnknown, false
	case provenance.ReasonBoundsExceeded:
		return KindTooLarge, true
	}
	return KindUnverified, true
}
