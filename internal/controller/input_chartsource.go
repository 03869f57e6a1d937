package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/source"
)

// Reasons of a chart kept in a ConfigMap or Secret that cannot be used.
const (
	ReasonChartMissing = "ChartMissing"
	ReasonInvalidChart = "InvalidChart"
)

// chartObject is the key of a ConfigMap or Secret of the Release's namespace that holds a
// packaged chart.
type chartObject struct {
	Kind, Name, Key string
	// Field is the spec field that names it.
	Field string
}

// chartSourceOf checks spec.chart: a chart of a repository, or one kept in a Secret or
// ConfigMap.
func chartSourceOf(c v1alpha1.ChartSource) (chartRef, *chartObject, error) {
	var objs []*chartObject
	if r := c.SecretRef; r != nil {
		objs = append(objs, &chartObject{Kind: "Secret", Name: r.Name, Key: r.Key, Field: "chart.secretRef"})
	}
	if r := c.ConfigMapRef; r != nil {
		objs = append(objs, &chartObject{Kind: "ConfigMap", Name: r.Name, Key: r.Key, Field: "chart.configMapRef"})
	}
	if len(objs) == 0 {
		ref, err := chartRefOf(c)
		return ref, nil, err
	}
	o := objs[0]
	switch {
	case len(objs) > 1 || c.Repository != "":
		return chartRef{}, nil, invalid("chart", "set exactly one of repository, secretRef and configMapRef")
	case c.Name != "" || c.Version != "" || c.Digest != "":
		return chartRef{}, nil, invalid("chart", "name, version and digest apply to a chart of a repository, not to one in a %s: remove them", o.Kind)
	case c.Credentials != nil || c.TLS != nil || c.PlainHTTP || c.PassCredentials || c.Verify != nil:
		return chartRef{}, nil, invalid("chart", "credentials, tls, plainHTTP, passCredentials and verify apply to a chart of a repository, not to one in a %s: remove them", o.Kind)
	case o.Name == "":
		return chartRef{}, nil, invalid(o.Field+".name", "is required: name the %s, in the Release's namespace, that holds the packaged chart", o.Kind)
	case o.Key == "":
		return chartRef{}, nil, invalid(o.Field+".key", "is required: name the key of the %s that holds the packaged chart (.tgz)", o.Kind)
	}
	return chartRef{}, o, nil
}

// ChartError says that the content of a ConfigMap or Secret is not a chart berth can release.
type ChartError struct {
	Kind, Namespace, Name, Key string
	Err                        error
}

func (e *ChartError) Error() string {
	return fmt.Sprintf("%s/%s/%s key %s: %v", e.Kind, e.Namespace, e.Name, e.Key, e.Err)
}

func (e *ChartError) Unwrap() error { return e.Err }

// chartIn reads and loads the packaged chart o names, in namespace ns, with r.
func chartIn(ctx context.Context, r inputs.KeyReader, o *chartObject) (*fetched, error) {
	data, err := r.Read(ctx, o.Kind, o.Name, o.Key)
	var missing *inputs.MissingError
	if errors.As(err, &missing) {
		missing.Reason = ReasonChartMissing
		missing.Next = fmt.Sprintf("put the packaged chart there (kubectl create %s %s --from-file=%s=CHART.tgz), or fix spec.%s",
			map[string]string{"Secret": "secret generic", "ConfigMap": "configmap"}[o.Kind], o.Name, o.Key, o.Field)
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s/%s/%s key %s", o.Kind, r.Namespace, o.Name, o.Key)
	ch, err := chart.LoadArchive(name, data, tenantChartBounds())
	if err != nil {
		return nil, &ChartError{Kind: o.Kind, Namespace: r.Namespace, Name: o.Name, Key: o.Key, Err: err}
	}
	sum := sha256.Sum256(data)
	return &fetched{chart: ch, digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// inputs fetches d's chart and reads its valuesFrom, setting d's values to the merged result.
// ConfigMaps and Secrets are read as the Release's ServiceAccount, with clients.
// A chart still being fetched is a FetchPendingError. took is how long the Release has waited
// for its chart.
func (r *Reconciler) inputs(ctx context.Context, rel types.NamespacedName, d *desired, clients *kube.Clients) (ch *fetched, took time.Duration, err error) {
	start := time.Now()
	reader := inputs.KeyReader{Core: clients.Client.CoreV1(), Namespace: d.Namespace}
	if d.ChartIn != nil {
		ch, err = chartIn(ctx, reader, d.ChartIn)
		took = time.Since(start)
	} else {
		ch, took, err = r.fetchChart(ctx, rel, d, reader)
	}
	if pending := new(FetchPendingError); errors.As(err, &pending) {
		return nil, took, err
	}
	if err != nil {
		return nil, took, &inputError{reason: reasonOf(err, ReasonChartUnavailable), err: err}
	}
	fetchedAt := time.Now()
	if err := checkSchemas(ch.chart); err != nil {
		return nil, took, &inputError{reason: ReasonInvalidChart, err: err}
	}
	if err := resolveValues(ctx, reader, d, r.CloudKMS); err != nil {
		return nil, took, &inputError{reason: reasonOf(err, ReasonValuesMissing), err: err}
	}
	return ch, took + time.Since(fetchedAt), nil
}

// fetchChart fetches d's chart within d.Timeout (spec.timeout) of the Release's first ask: a
// repository or registry that does not answer fails the reconcile then, with a
// source.TimeoutError naming it. The fetch runs off the controller's workers: while it is under
// way, fetchChart returns a FetchPendingError, and the Release is reconciled again when it ends.
// took is how long the Release has waited for its chart.
func (r *Reconciler) fetchChart(ctx context.Context, rel types.NamespacedName, d *desired, reader inputs.KeyReader) (ch *fetched, took time.Duration, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	a, err := readChartAccess(ctx, reader, d.Chart)
	if err != nil {
		return nil, time.Since(start), err
	}
	loc, took, err := r.Charts.fetches.get(ctx, rel, fetchKey(d.Chart, a), d.Chart.RepoURL, d.Timeout, func(ctx context.Context) (located, error) {
		return r.Charts.locate(ctx, d.Chart, a)
	})
	took = max(took, time.Since(start))
	if te := new(source.TimeoutError); errors.As(err, &te) {
		return nil, took, &FetchTimeoutError{Host: te.Host, Timeout: d.Timeout, Err: err}
	}
	if errors.As(err, new(*chart.AliasError)) {
		return nil, took, &InvalidChartError{Err: err}
	}
	if err != nil {
		return nil, took, verificationFailed(authFailed(err, d.Chart, d.Namespace), d.Chart, d.Namespace)
	}
	name := d.Chart.Ref
	if d.Chart.RepoURL != "" {
		name = fmt.Sprintf("%s of %s", d.Chart.Ref, d.Chart.RepoURL)
	}
	if ch, err = load(loc.path, name); err == nil {
		ch.proof = loc.proof
	}
	return ch, took, err
}

// FetchTimeoutError is a Release's chart that a repository or registry did not give in time.
// Its message is the same whichever bound ran out first (the Release's timeout, or a limit of
// one request of a fetch shared with other Releases), so that a Release that keeps failing so
// keeps the same condition and its status is not written again at each attempt.
type FetchTimeoutError struct {
	Host    string
	Timeout time.Duration
	Err     error
}

func (e *FetchTimeoutError) Error() string {
	return fmt.Sprintf("host %s did not answer in time: fetching the chart timed out (timeout %s)", e.Host, e.Timeout)
}

func (e *FetchTimeoutError) Unwrap() error { return e.Err }

// timeLeft is what is left of timeout once took has passed: at least a nanosecond, since 0
// would mean the default.
func timeLeft(timeout, took time.Duration) time.Duration {
	return max(timeout-took, time.Nanosecond)
}

// inputError is a chart or values that could not be had, with its condition reason.
type inputError struct {
	reason string
	err    error
}

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// inputFailed says in rel's status why its chart or values could not be had, and when to look
// again: a missing object or an unreachable repository may come back by itself; content that is
// not a chart or values, or a missing permission, waits for a change (of the object, which the
// controller watches, or of the Release).
func inputFailed(rel *v1alpha1.Release, d *desired, err error) ctrl.Result {
	reason := reasonOf(err, ReasonChartUnavailable)
	var chartErr *ChartError
	var valuesErr *inputs.ValuesError
	var accessErr *ChartAccessError
	var authErr *ChartAuthError
	var verifyErr *VerificationError
	stalled := isForbidden(err) || errors.As(err, &chartErr) || errors.As(err, new(*DecryptionError)) || errors.As(err, new(*EncryptedNotDecryptedError)) || errors.As(err, new(*InvalidChartError)) || errors.As(err, &valuesErr) || refusedSchema(err) ||
		errors.As(err, &accessErr) || errors.As(err, &authErr) || errors.As(err, &verifyErr) || errors.As(err, new(*CosignVerificationError)) ||
		errors.As(err, new(*SignerNotAllowedError))
	markFailed(rel, reason, err, stalled)
	if stalled {
		return ctrl.Result{RequeueAfter: d.Interval}
	}
	return ctrl.Result{RequeueAfter: retryAfter}
}

func (e *inputError) conditionReason() string { return e.reason }
func (e *ChartError) conditionReason() string { return ReasonInvalidChart }

// InvalidChartError is a fetched chart whose content the controller refuses to load (a YAML file
// whose aliases expand past yamlbound.Tenant): it waits for a change of the chart or the Release.
type InvalidChartError struct{ Err error }

func (e *InvalidChartError) Error() string           { return e.Err.Error() }
func (e *InvalidChartError) Unwrap() error           { return e.Err }
func (e *InvalidChartError) conditionReason() string { return ReasonInvalidChart }
