// Package controller reconciles berth.dev/v1alpha1 Releases: it installs, upgrades and
// uninstalls each release through berth's lifecycle package, the one the CLI uses, acting as the
// Release's ServiceAccount, and reports in the Release's status what it did and what blocks it.
package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/source"
)

const (
	defaultInterval   = 10 * time.Minute
	defaultTimeout    = 5 * time.Minute
	defaultHistoryMax = 10
)

// desired is what a Release's spec asks for, checked and with its defaults.
type desired struct {
	ReleaseName, TargetNamespace string
	// Namespace and ServiceAccount are the Release's namespace and the account that acts
	// (spec.serviceAccountName; the reconciler fills in its default when it is empty).
	Namespace, ServiceAccount string
	Chart                     chartRef
	// ChartIn, when set, is the ConfigMap or Secret that holds the packaged chart.
	ChartIn *chartObject
	// Values are spec.values, then the values merged from ValuesFrom and spec.values once
	// resolveValues read them; ValuesDigest is theirs.
	Values       map[string]any
	ValuesDigest string
	ValuesFrom   []v1alpha1.ValuesReference
	// EncryptedValues are the paths of the values that valuesFrom's SOPS documents held
	// encrypted, once resolveValues decrypted them: the release records them, and berth
	// masks what is there where it shows values.
	EncryptedValues   [][]string
	Interval, Timeout time.Duration
	Install           v1alpha1.InstallSpec
	Upgrade           v1alpha1.UpgradeSpec
	Uninstall         v1alpha1.UninstallSpec
	HistoryMax        int
	Test              testRules
	Drift             driftRules
	// Remote, when set, is the cluster the release is in (spec.kubeConfig); nil: the
	// controller's own.
	Remote *remoteRef
	// DependsOn are the names of the Releases of Namespace this one depends on.
	DependsOn []string
	// RollbackTo, when set, holds the release at an earlier revision (spec.rollbackTo).
	RollbackTo *v1alpha1.RollbackRequest
	// HealthChecks are spec.healthChecks, compiled; nil when there are none.
	HealthChecks *readiness.Checks
	// InstallWatch and UpgradeWatch are the watch windows of spec.install and spec.upgrade,
	// with their defaults; For is 0 when there is none.
	InstallWatch, UpgradeWatch lifecycle.WatchOptions
}

// chartRef is a chart to fetch: Ref with Options as Helm's CLI takes them (CHART --repo URL
// --version V, or oci://HOST/PATH[@DIGEST] --version V).
type chartRef struct {
	Ref, RepoURL, Version string
	// Credentials and TLS name the Secrets of the Release's namespace with the credentials and
	// TLS material of the repository or registry, if any.
	Credentials, TLS string
	// PlainHTTP reaches an OCI registry over plain HTTP; PassCredentials sends the credentials
	// to a chart URL on another host than the repository's.
	PlainHTTP, PassCredentials bool
	// Verify and VerifyKey name the Secret of the Release's namespace, and its key, with the
	// public keyring the chart's provenance is checked against; Verify is empty when it is not.
	Verify, VerifyKey string
	// Cosign, when set, is how the chart's cosign signature is verified (provider cosign).
	Cosign *cosignRef
	// Notation names the Secret with the trust policy and trust store the chart's notation
	// signature is verified with (provider notation); empty when it is not.
	Notation string
}

// SpecError says what in a Release's spec the controller cannot act on, and what to change.
// Acting on the Release again without changing it would fail the same way.
type SpecError struct {
	// Reason is InvalidSpec, or InvalidHealthCheck for spec.healthChecks.
	Reason string
	Field  string
	Msg    string
}

func (e *SpecError) Error() string { return fmt.Sprintf("spec.%s: %s", e.Field, e.Msg) }

const ReasonInvalidSpec = "InvalidSpec"

// ReasonInsecureCredentials is a Release that would send its chart credentials over plain HTTP.
const ReasonInsecureCredentials = "InsecureCredentials"

// insecureCredentials is a SpecError of credentials the controller will not send in clear.
func insecureCredentials(field, format string, args ...any) *SpecError {
	return &SpecError{Reason: ReasonInsecureCredentials, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func invalid(field, format string, args ...any) *SpecError {
	return &SpecError{Reason: ReasonInvalidSpec, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// desiredOf checks rel's spec and returns what it asks for.
func desiredOf(rel *v1alpha1.Release) (*desired, error) {
	s := rel.Spec
	d := &desired{
		ReleaseName: s.ReleaseName, TargetNamespace: s.TargetNamespace,
		Namespace: rel.Namespace, ServiceAccount: s.ServiceAccountName,
		Interval: defaultInterval, Timeout: defaultTimeout, HistoryMax: defaultHistoryMax,
	}
	if d.ReleaseName == "" {
		d.ReleaseName = rel.Name
	}
	if d.TargetNamespace == "" {
		d.TargetNamespace = rel.Namespace
	}
	withRemote(d, s)
	if st := rel.Status; st.ReleaseName != "" && (st.ReleaseName != d.ReleaseName || st.TargetNamespace != d.TargetNamespace) {
		return nil, invalid("releaseName", "the release is %s in namespace %s and cannot move to %s in namespace %s: put releaseName and targetNamespace back, or delete this Release (which uninstalls it) and create another",
			st.ReleaseName, st.TargetNamespace, d.ReleaseName, d.TargetNamespace)
	}
	var err error
	if d.DependsOn, err = dependsOnOf(rel); err != nil {
		return nil, err
	}
	if r := s.RollbackTo; r != nil {
		if r.Revision < 1 {
			return nil, invalid("rollbackTo.revision", "is %d: give a revision of the release's history, 1 or more", r.Revision)
		}
		d.RollbackTo = r
	}
	if d.Chart, d.ChartIn, err = chartSourceOf(s.Chart); err != nil {
		return nil, err
	}
	if d.Values, d.ValuesDigest, err = valuesOf(s); err != nil {
		return nil, err
	}
	if d.ValuesFrom, err = valuesFromOf(s.ValuesFrom); err != nil {
		return nil, err
	}
	if s.Interval != nil {
		if s.Interval.Duration <= 0 {
			return nil, invalid("interval", "must be positive, like 10m")
		}
		d.Interval = s.Interval.Duration
	}
	if s.Timeout != nil {
		if s.Timeout.Duration <= 0 {
			return nil, invalid("timeout", "must be positive, like 5m")
		}
		d.Timeout = s.Timeout.Duration
	}
	if s.Install != nil {
		d.Install = *s.Install
	}
	if s.Upgrade != nil {
		d.Upgrade = *s.Upgrade
		if s.Upgrade.HistoryMax != nil {
			d.HistoryMax = int(*s.Upgrade.HistoryMax)
		}
	}
	if s.Uninstall != nil {
		d.Uninstall = *s.Uninstall
	}
	if d.Test, err = testOf(s.Test); err != nil {
		return nil, err
	}
	if d.Drift, err = driftOf(s.Drift); err != nil {
		return nil, err
	}
	if d.HealthChecks, err = healthChecksOf(s.HealthChecks); err != nil {
		return nil, err
	}
	if d.InstallWatch, err = watchOf("install", d.Install.WatchSpec); err != nil {
		return nil, err
	}
	if d.UpgradeWatch, err = watchOf("upgrade", d.Upgrade.WatchSpec); err != nil {
		return nil, err
	}
	if err := checkRetries("install", d.Install.OperationSpec); err != nil {
		return nil, err
	}
	if err := checkRetries("upgrade", d.Upgrade.OperationSpec); err != nil {
		return nil, err
	}
	return d, nil
}

// chartRefOf checks a chart source that names a Helm repository or an OCI reference.
func chartRefOf(c v1alpha1.ChartSource) (chartRef, error) {
	ref, err := chartLocationOf(c)
	if err != nil {
		return chartRef{}, err
	}
	oci := strings.HasPrefix(ref.Ref, "oci://")
	switch {
	case c.PlainHTTP && !oci:
		return chartRef{}, invalid("chart.plainHTTP", "applies to OCI registries (oci://) only: a Helm repository's URL says http:// or https:// itself")
	case c.PassCredentials && oci:
		return chartRef{}, invalid("chart.passCredentials", "applies to Helm repositories only: remove it")
	case c.Credentials != nil && c.Credentials.Name == "":
		return chartRef{}, invalid("chart.credentials.name", "is required: name the Secret, in the Release's namespace, with the credentials")
	case c.TLS != nil && c.TLS.Name == "":
		return chartRef{}, invalid("chart.tls.name", "is required: name the Secret, in the Release's namespace, with ca.crt (and tls.crt and tls.key)")
	case c.Credentials != nil && oci && c.PlainHTTP:
		return chartRef{}, insecureCredentials("chart.plainHTTP", "would send the credentials of Secret %s over plain HTTP to %s: serve the registry over HTTPS (with chart.tls for its CA) and remove plainHTTP, or remove chart.credentials",
			c.Credentials.Name, source.OCIHost(ref.Ref))
	case c.Credentials != nil && strings.HasPrefix(ref.RepoURL, "http://"):
		return chartRef{}, insecureCredentials("chart.repository", "%s is plain HTTP and would carry the credentials of Secret %s in clear: serve the repository over HTTPS (https://, with chart.tls for its CA), or remove chart.credentials",
			ref.RepoURL, c.Credentials.Name)
	}
	if c.Verify != nil {
		if err := verifyOf(c.Verify, oci, &ref); err != nil {
			return chartRef{}, err
		}
	}
	if c.Credentials != nil {
		ref.Credentials = c.Credentials.Name
	}
	if c.TLS != nil {
		ref.TLS = c.TLS.Name
	}
	ref.PlainHTTP, ref.PassCredentials = c.PlainHTTP, c.PassCredentials
	return ref, nil
}

// chartLocationOf checks where a chart source that names a Helm repository or an OCI reference
// points.
func chartLocationOf(c v1alpha1.ChartSource) (chartRef, error) {
	repo := strings.TrimSuffix(c.Repository, "/")
	switch {
	case repo == "":
		return chartRef{}, invalid("chart.repository", "is required: give the URL of a Helm repository (https://...) or an OCI reference (oci://...)")
	case strings.HasPrefix(repo, "oci://"):
		ref := repo
		if c.Name != "" {
			ref += "/" + c.Name
		}
		if strings.ContainsAny(strings.TrimPrefix(ref, "oci://"), "@") {
			return chartRef{}, invalid("chart.repository", "%q holds a digest: give it in chart.digest", c.Repository)
		}
		if c.Digest != "" {
			ref += "@" + c.Digest
		}
		return chartRef{Ref: ref, Version: c.Version}, nil
	case strings.HasPrefix(repo, "https://") || strings.HasPrefix(repo, "http://"):
		if c.Name == "" {
			return chartRef{}, invalid("chart.name", "is required with a Helm repository: give the chart's name in %s", c.Repository)
		}
		if c.Digest != "" {
			return chartRef{}, invalid("chart.digest", "applies to OCI references only: remove it, or pin chart.version")
		}
		return chartRef{Ref: c.Name, RepoURL: repo, Version: c.Version}, nil
	default:
		return chartRef{}, invalid("chart.repository", "%q is neither a Helm repository URL (https://...) nor an OCI reference (oci://...)", c.Repository)
	}
}

// valuesOf returns the spec's values and their digest.
func valuesOf(s v1alpha1.ReleaseSpec) (map[string]any, string, error) {
	vals := map[string]any{}
	if s.Values != nil && len(s.Values.Raw) > 0 {
		if err := json.Unmarshal(s.Values.Raw, &vals); err != nil || vals == nil {
			return nil, "", invalid("values", "must be a map of values, as in a values file")
		}
	}
	digest, err := inputs.DigestOf(vals)
	if err != nil {
		return nil, "", invalid("values", "%v", err)
	}
	return vals, digest, nil
}

// wait are the wait options of an operation, with its watch window w: a window implies the wait.
func (d *desired) wait(op v1alpha1.OperationSpec, w lifecycle.WatchOptions) lifecycle.WaitOptions {
	// A chart that declares an order (HIP-0025's resource groups and subchart dependencies) is
	// applied in it, batch by batch, unless waiting is disabled.
	wait := !op.DisableWait || w.For > 0
	return lifecycle.WaitOptions{Wait: wait, WaitForJobs: op.WaitForJobs, Timeout: d.Timeout, OrderIfDeclared: wait, Watch: w}
}
