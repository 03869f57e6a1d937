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
	// Host is the registry's HOST[:PORT] of an oci:// reference.
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
