package source

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"helm.sh/helm/v4/pkg/repo/v1"
)

// Kind says what went wrong with a chart reference, so that callers can say what to do.
type Kind int

const (
	// Failed is a failure of no kind below; Err says what it was.
	Failed Kind = iota
	// NotFound: the reference is no chart on disk, and not REPO/CHART of a repository in the
	// user's repositories.yaml, a URL or an oci:// reference.
	NotFound
	// NotIndexed: REPO/CHART, or the version asked for, is not in the repository's index as
	// cached on this machine, or no index of the repository is cached.
	NotIndexed
	// NotInRepository: the repository given by URL, freshly read, has no such chart or no
	// version matching the constraint.
	NotInRepository
	// Unreachable: the server did not answer (no such host, connection refused, timeout).
	Unreachable
	// Unauthorized: the server refused the credentials given, or asked for some (401, 403).
	Unauthorized
	// Missing: the server answered that the URL does not exist (404).
	Missing
	// TLS: the server's certificate could not be verified, or the TLS handshake failed.
	TLS
	// Unverified: the chart's provenance file is missing or does not verify against the keyring.
	Unverified
	// NotAChart: what was fetched or found is not a chart that loads.
	NotAChart
)

var kindNames = map[Kind]string{
	Failed: "failed", NotFound: "not found", NotIndexed: "not in the cached index", NotInRepository: "not in the repository",
	Unreachable: "unreachable", Unauthorized: "unauthorized", Missing: "missing", TLS: "TLS failure",
	Unverified: "provenance check failed", NotAChart: "not a chart",
}

func (k Kind) String() string { return kindNames[k] }

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
	Kind    Kind
	Err     error
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
		return Failed
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
		return TLS
	case strings.Contains(msg, " 401 Unauthorized"), strings.Contains(msg, " 403 Forbidden"),
		strings.Contains(msg, "unauthorized"), strings.Contains(msg, "basic credential not found"):
		return Unauthorized
	case strings.Contains(msg, " 404 Not Found"):
		return Missing
	case errors.Is(err, repo.ChartNotFoundError{}):
		return NotInRepository
	case errors.As(err, &opErr), errors.As(err, &netErr), errors.As(err, &urlErr):
		return Unreachable
	}
	return Failed
}
