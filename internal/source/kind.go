package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Kind is why fetching a chart or talking to a registry failed, as far as berth tells causes
// apart.
type Kind int

// The kinds of Error and RegistryError.
const (
	// KindUnknown is any other cause; Err says what it was.
	KindUnknown Kind = iota
	// KindUnreachable: no connection to the server (unknown host, refused, timed out).
	KindUnreachable
	// KindTLS: the server's certificate was not trusted (unknown authority, wrong host, expired).
	KindTLS
	// KindPlainHTTP: the server speaks plain HTTP and the client spoke TLS.
	KindPlainHTTP
	// KindNoCredentials: the registry asks for credentials and none were given or stored.
	KindNoCredentials
	// KindUnauthorized: the registry refused the credentials given or stored.
	KindUnauthorized
	// KindNotFound: the repository, tag, version or digest does not exist.
	KindNotFound
	// KindDigestMismatch: the digest asked for is not that of the version or content fetched.
	KindDigestMismatch
	// KindNotChart: what was fetched or found is not a chart that loads (for a registry: the
	// artifact is not a Helm chart).
	KindNotChart
	// KindNoChart: the reference is no chart on disk, and not REPO/CHART of a repository in the
	// user's repositories.yaml, a URL or an oci:// reference.
	KindNoChart
	// KindNotIndexed: REPO/CHART, or the version asked for, is not in the repository's index as
	// cached on this machine, or no index of the repository is cached.
	KindNotIndexed
	// KindNotInRepository: the repository given by URL, freshly read, has no such chart or no
	// version matching the constraint.
	KindNotInRepository
	// KindMissing: a chart repository's server answered that the URL does not exist (404).
	KindMissing
	// KindUnverified: the chart's provenance file is missing or does not verify against the
	// keyring.
	KindUnverified
	// KindTimeout: the server took the connection but did not answer in time (TimeoutError
	// names it).
	KindTimeout
	// KindTooLarge: an index, a manifest or a chart is larger than the fetch allows
	// (TooLargeError).
	KindTooLarge
	// KindCanceled: the fetch was canceled before it ended.
	KindCanceled
	// KindNoGetter: the reference's URL scheme is served by no getter, Helm's or an installed
	// getter plugin's (NoGetterError).
	KindNoGetter
	// KindNotServed: the registry named the digest of the chart (a tag's, or the one asked for)
	// but did not serve its content (NotServedError).
	KindNotServed
)

var kindNames = map[Kind]string{
	KindUnknown: "failed", KindUnreachable: "unreachable", KindTLS: "TLS failure", KindPlainHTTP: "plain HTTP",
	KindNoCredentials: "no credentials", KindUnauthorized: "unauthorized", KindNotFound: "not found",
	KindDigestMismatch: "digest mismatch", KindNotChart: "not a chart", KindNoChart: "no such chart",
	KindNotIndexed: "not in the cached index", KindNotInRepository: "not in the repository", KindMissing: "missing",
	KindUnverified: "provenance check failed", KindTimeout: "timed out", KindTooLarge: "too large", KindCanceled: "canceled",
	KindNoGetter: "no getter for its scheme", KindNotServed: "content not served",
}

func (k Kind) String() string { return kindNames[k] }

// classify returns the kind of err, an error of Helm's registry client, of its chart
// downloader or of the network; withCredentials says whether credentials were sent.
//
// Helm returns some causes as plain errors: those are recognised by Helm's own wording.
func classify(err error, withCredentials bool) Kind {
	var (
		resp      *errcode.ErrorResponse
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		dns       *net.DNSError
		op        *net.OpError
	)
	if err == nil {
		return KindUnknown
	}
	msg := err.Error()
	switch {
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return KindTLS
	case errors.As(err, &record), strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return KindPlainHTTP
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return KindNoCredentials
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		if withCredentials {
			return KindUnauthorized
		}
		return KindNoCredentials
	case strings.Contains(msg, "digest mismatch"), errors.Is(err, content.ErrMismatchedDigest):
		return KindDigestMismatch
	case strings.Contains(msg, "manifest does not contain"), strings.Contains(msg, "could not load config with mediatype"):
		return KindNotChart
	case errors.Is(err, errdef.ErrNotFound), errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound,
		strings.Contains(msg, "could not locate a version matching"), strings.Contains(msg, "unable to locate any tags"):
		return KindNotFound
	case errors.As(err, &dns), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &op) && op.Op == "dial":
		return KindUnreachable
	default:
		return KindUnknown
	}
}

// hasCredentials reports whether credentials for host are given in opts or stored where Helm's
// registry client looks for them: the registry config file, then Docker's.
func hasCredentials(ctx context.Context, settings *helmcli.EnvSettings, host string, opts RegistryOptions) bool {
	if opts.Username != "" || opts.Password != "" {
		return true
	}
	store, err := credentials.NewStore(settings.RegistryConfig, credentials.StoreOptions{})
	if err != nil {
		return false
	}
	var s credentials.Store = store
	if docker, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
		s = credentials.NewStoreWithFallbacks(store, docker)
	}
	cred, err := credentials.Credential(s)(ctx, host)
	return err == nil && cred != auth.EmptyCredential
}
