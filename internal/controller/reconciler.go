package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/controller/remotes"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// Finalizer holds a Release until its release is uninstalled.
const Finalizer = "berth.dev/uninstall"

// retryAfter is when a Release that the controller could not act on for a reason that may go
// away by itself (a chart repository down, a lease held by someone else) is looked at again.
const retryAfter = 30 * time.Second

// Reconciler drives each Release's release through berth's lifecycle.
type Reconciler struct {
	// Client reads Releases and writes their metadata and status, with the controller's rights.
	Client client.Client
	// Config is the controller's client configuration; operations run with a copy that
	// impersonates the Release's ServiceAccount.
	Config   *rest.Config
	Recorder events.EventRecorder
	Charts   *Charts
	// Uncached reads past the cache what must be current: a Release's ServiceAccount before
	// acting as it when Accounts does not hold it, and the Release again once its operation
	// holds the lease; nil reads with Client.
	Uncached client.Reader
	// Accounts reads the metadata of ServiceAccounts from a cache; nil reads them with
	// Uncached.
	Accounts client.Reader
	// Releases reads the Releases of a namespace for their dependsOn: the cache, or the API
	// server when the controller serves a shard (the Releases depended on may be in another
	// shard, which the cache does not hold); nil reads with Client.
	Releases client.Reader
	// DefaultServiceAccount is the account a Release that names none acts as; empty means its
	// namespace's default account.
	DefaultServiceAccount string
	// StatusChartOutput lets status.blockers[].logTail show what a chart's own code output (the
	// end of a failed hook's logs, a template's fail or required message), which can carry the
	// release's values; without it the controller writes none of it anywhere.
	StatusChartOutput bool
	// RequireVerified refuses every Release whose chart is not verified (VerificationRequired).
	RequireVerified bool
	// Signers is who may have signed a verified chart (--allowed-signer, --allowed-issuer).
	Signers SignerPolicy
	// CloudKMS lets valuesFrom's SOPS documents be decrypted with the cloud KMS keys of the
	// controller's own cloud identity, beside the age keys of a Release's Secret.
	CloudKMS bool
	// KubeConfigReach is what a Release's kubeconfig may make the controller do beyond
	// connecting over verified TLS straight to its server.
	KubeConfigReach inputs.KubeConfigReach
	// Holder names the controller in the leases and journals of its operations.
	Holder release.Holder
	// MaxTimeout is the longest spec.timeout granted: a Release asking for more runs with it
	// (ConditionTimeoutCapped); 0 grants any.
	MaxTimeout time.Duration
	// RecordExpansion bounds what a release's record, its parts and its journal expand to once
	// decompressed: a tenant may write a Secret shaped like a record.
	RecordExpansion release.Expansion
	// Encoder encodes the records of every reconcile, one bulky record at a time, each
	// reconcile through a fork of its own (Encoder.Fork); nil encodes each alone.
	Encoder *release.Encoder
	// Driver is where the releases' records are kept, as HELM_DRIVER names it for helm: ""
	// and release.DriverSecret in Secrets, release.DriverConfigMap in ConfigMaps.
	Driver release.Driver
	// Templates runs the templates of every render of a tenant's chart: a *chart.Sandbox, whose
	// renderers are cut at their budget and at the operation's deadline. nil renders in this
	// process (tests of the controller's own logic).
	Templates chart.TemplateRunner

	// Leading says whether the controller still leads its shard's leader election: a status
	// written after it lost it would overwrite what the replica that leads now says. nil: the
	// controller runs without leader election, and always leads.
	Leading func() bool

	// View is what the controller watches of what a preflight reads (clusterview.go); nil when
	// it watches none of it, and each preflight reads as its Release's account.
	View *clusterView
	// remotes keeps the clients of the clusters of Releases with a spec.kubeConfig.
	remotes remotes.Cache
}

// Reconcile reads the Release and what it asks for, classifies the release with lifecycle.Next
// (decide), acts on the decision and records the outcome in its status. Every reconcile ends:
// its work (ctx: reading what the Release needs, and its operation) at the Release's timeout, at
// most MaxTimeout, and the reconcile as a whole (bound: what the operation writes after its
// deadline, and the status) lifecycle.Grace later (reconcileBounds).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rel v1alpha1.Release
	if err := r.Client.Get(ctx, req.NamespacedName, &rel); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	bound, ctx, cancel := reconcileBounds(ctx, timeoutOf(rel.Spec, r.MaxTimeout))
	defer cancel()
	if !rel.DeletionTimestamp.IsZero() {
		return r.finalize(bound, ctx, &rel)
	}
	if rel.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	in, res, err := r.read(ctx, req, &rel)
	if in == nil {
		return res, err
	}
	if in.d.Remote != nil {
		// The next reconcile asks a remote cluster's discovery again (reach): it is not kept
		// between reconciles, so that the clusters whose clients are kept cost no more than
		// their connections.
		defer in.clients.Mapper.Reset()
	}
	// From here on, what the reconcile writes and logs goes without the release's values, and
	// so does the error controller-runtime logs.
	ctx, bound = status.Redacting(ctx, in.redact), status.Redacting(bound, in.redact)
	res, err = r.next(bound, ctx, in)
	return res, in.redact.RedactError(err)
}

// next acts on what lifecycle.Next decides for the release in: its work under ctx, what it
// writes after under bound (see Reconcile).
func (r *Reconciler) next(bound, ctx context.Context, in *reconciliation) (ctrl.Result, error) {
	if in.d.RollbackTo != nil {
		return r.holdAt(bound, ctx, in)
	}
	acts, wait, err := decide(in.rel, in.state, in.d, in.version(), time.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	switch a := acts[0]; a {
	case lifecycle.ActWait:
		// The failed attempt stands: only the health of what it left is looked at.
		r.checkHealth(ctx, in.rel, in.d, in.clients)
		return ctrl.Result{RequeueAfter: cmp.Or(wait, in.d.Interval)}, r.patchStatus(ctx, in.orig, in.rel)
	case lifecycle.ActNone, lifecycle.ActReport, lifecycle.ActReportReleased:
		return r.report(ctx, in, a)
	}
	return r.act(bound, ctx, in, acts)
}

// reconciliation is what a reconcile read of a Release, its release and what it asks for.
type reconciliation struct {
	rel *v1alpha1.Release
	// orig is rel as its status was last written.
	orig    *v1alpha1.Release
	d       *desired
	clients *kube.Clients
	ch      *fetched
	// state is what the release's newest record says.
	state lifecycle.State
	// redact removes the release's values from what the reconcile writes.
	redact *status.ValueRedactor
}

// version is the chart version the spec resolves to.
func (in *reconciliation) version() string { return in.ch.chart.Metadata.Version }

// read reads what rel asks for (its spec, the chart and values), the clients it acts with and
// the state of its release. A Release that cannot be acted on now has its status say why: read
// then returns no reconciliation, and what the reconcile returns.
func (r *Reconciler) read(ctx context.Context, req ctrl.Request, rel *v1alpha1.Release) (*reconciliation, ctrl.Result, error) {
	orig := rel.DeepCopy()
	takeRequest(rel)
	d, err := desiredOf(rel)
	if err != nil {
		// Nothing happens until the spec changes: no requeue.
		markFailed(rel, reasonOf(err, ReasonInvalidSpec), err, true)
		return nil, ctrl.Result{}, r.patchStatus(ctx, orig, rel)
	}
	if err := r.checkCycle(ctx, rel, d.DependsOn); err != nil {
		var cycle *DependencyError
		if !errors.As(err, &cycle) {
			return nil, ctrl.Result{}, err
		}
		// As a spec error: nothing happens until a dependsOn of the cycle changes.
		markFailed(rel, cycle.Reason, err, true)
		return nil, ctrl.Result{}, r.patchStatus(ctx, orig, rel)
	}
	if !controllerutil.ContainsFinalizer(rel, Finalizer) {
		patch := client.MergeFrom(rel.DeepCopy())
		controllerutil.AddFinalizer(rel, Finalizer)
		if err := r.Client.Patch(ctx, rel, patch); err != nil {
			return nil, ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		orig = rel.DeepCopy()
		takeRequest(rel)
	}
	// After the finalizer's patch, whose answer replaced the status read.
	r.limitEvents(rel, withLimits(rel, d, r.MaxTimeout))
	if err := checkWindows(d, meta.IsStatusConditionTrue(rel.Status.Conditions, ConditionTimeoutCapped)); err != nil {
		// As a spec error: nothing happens until the spec changes.
		markFailed(rel, reasonOf(err, ReasonInvalidSpec), err, true)
		return nil, ctrl.Result{}, r.patchStatus(ctx, orig, rel)
	}
	if err := checkVerified(d, r.RequireVerified); err != nil {
		markFailed(rel, ReasonVerificationRequired, err, true)
		return nil, ctrl.Result{}, r.patchStatus(ctx, orig, rel)
	}

	named := d.ServiceAccount != ""
	d.ServiceAccount = r.serviceAccountFor(d.ServiceAccount)
	clients, local, err := r.clientsFor(ctx, d, named)
	if missing := new(AccountNotFoundError); errors.As(err, &missing) {
		// Stalled until the account is created: looked at again soon, with no call made as it.
		markFailed(rel, ReasonServiceAccountNotFound, err, true)
		return nil, ctrl.Result{RequeueAfter: retryAfter}, r.patchStatus(ctx, orig, rel)
	}
	if res, failed := clusterFailed(rel, d, err); failed {
		r.clusterEvent(ctx, orig, rel, err)
		return nil, res, r.patchStatus(ctx, orig, rel)
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	ch, took, err := r.inputs(ctx, req.NamespacedName, d, local)
	if pending := new(FetchPendingError); errors.As(err, &pending) {
		// The fetch goes on off the workers; it reconciles the Release when it ends.
		return nil, ctrl.Result{RequeueAfter: time.Until(pending.Deadline)}, nil
	}
	if err == nil {
		err = r.Signers.allows(ch.proof)
	}
	if err != nil {
		r.warnAuthFailed(rel, err)
		return nil, inputFailed(rel, d, err), r.patchStatus(ctx, orig, rel)
	}
	// The values are known: what is written from here on goes without them.
	redact := status.NewSecretFirstRedactor(d.Values, d.EncryptedValues, rel.Name, rel.Namespace, d.ReleaseName, d.TargetNamespace, d.ServiceAccount, ch.chart.Name())
	ctx = status.Redacting(ctx, redact)
	// spec.timeout bounds the reconcile, the fetch included: the operation has what is left.
	d.Timeout = workLeft(ctx, timeLeft(d.Timeout, took))
	state, err := r.lastRecord(ctx, clients, d.ReleaseName)
	err = unanswered(d, clients, err)
	if res, failed := clusterFailed(rel, d, err); failed {
		r.clusterEvent(ctx, orig, rel, err)
		return nil, res, r.patchStatus(ctx, orig, rel)
	}
	if err != nil {
		markFailed(rel, reasonOf(err, ReasonFailed), err, isForbidden(err) || recordInvalid(err))
		return nil, ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(ctx, orig, rel)
	}
	return &reconciliation{rel: rel, orig: orig, d: d, clients: clients, ch: ch, state: state, redact: redact}, ctrl.Result{}, nil
}

// report says in the status that the release is what the spec asks (lifecycle.ActReport), of
// the revision the controller's interrupted attempt released (lifecycle.ActReportReleased), and
// looks for drift.
func (r *Reconciler) report(ctx context.Context, in *reconciliation, a lifecycle.Action) (ctrl.Result, error) {
	rel, d, last := in.rel, in.d, in.state.Last
	if a == lifecycle.ActReportReleased {
		// The controller released this very spec and stopped before its status said so, perhaps
		// before its operation removed its journal and gave up its lease: recovering removes what
		// is left (and finds nothing else to do, the revision being recorded).
		deps, err := r.depsFor(d, in.clients, nil)
		if err == nil {
			_, err = lifecycle.Recover(ctx, deps, lifecycle.RecoverOptions{
				Name: d.ReleaseName, WaitOptions: lifecycle.WaitOptions{Timeout: d.Timeout},
			})
		}
		if held := new(release.HeldError); errors.As(err, &held) {
			// The stopped operation's lease has not expired yet: the status stays as it is
			// (Reconciling) until it has.
			return ctrl.Result{RequeueAfter: retryAfter}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		rel.Status.Revision = last.Version
		r.recordFootprint(rel, last)
		rel.Status.ChartName, rel.Status.ChartVersion, rel.Status.ChartDigest = in.ch.chart.Name(), in.version(), in.ch.digest
		rel.Status.ChartVerified = chartProof(in.ch.proof)
		rel.Status.ValuesDigest = d.ValuesDigest
	}
	if a != lifecycle.ActNone && !keepTestFailure(rel, d) {
		markReady(rel, reasonFor(last.Version), fmt.Sprintf("release %s revision %d is deployed in namespace %s", d.ReleaseName, last.Version, d.TargetNamespace))
	}
	r.checkDrift(ctx, rel, d, in.clients)
	return ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(ctx, in.orig, rel)
}

// act installs or upgrades the release (acts, as lifecycle.Next decided them: an interrupted
// operation is finished first) once the Releases it depends on are ready, and records the
// outcome. Its work runs under ctx; what it writes after, under bound (see Reconcile).
func (r *Reconciler) act(bound, ctx context.Context, in *reconciliation, acts []lifecycle.Action) (ctrl.Result, error) {
	rel, d, version := in.rel, in.d, in.version()
	if err := r.checkReady(ctx, rel, d.DependsOn); err != nil {
		var waiting *DependencyError
		if !errors.As(err, &waiting) {
			return ctrl.Result{}, err
		}
		// The Releases depended on wake this one when they become Ready; the requeue is a
		// fallback.
		markWaiting(rel, waiting.Reason, err.Error())
		return ctrl.Result{RequeueAfter: retryAfter}, r.patchStatus(ctx, in.orig, rel)
	}

	op := "upgrade"
	if in.state.Installs(acts) {
		op = "install"
	}
	markReconciling(rel, fmt.Sprintf("%s of chart %s %s", op, in.ch.chart.Name(), version))
	rel.Status.CurrentStep = op
	rel.Status.ReleaseName, rel.Status.TargetNamespace = d.ReleaseName, d.TargetNamespace
	startAttempt(rel, version, d.ValuesDigest)
	if err := r.patchStatus(ctx, in.orig, rel); err != nil {
		return ctrl.Result{}, err
	}
	in.orig = rel.DeepCopy()

	start := time.Now()
	seen := 0
	if in.state.Last != nil {
		seen = in.state.Last.Version
	}
	steps := r.operationReporter(ctx, rel, d.watchFor(op), r.journalsOf(in.clients))
	out, runs, err := r.release(bound, ctx, rel, d, in.clients, in.ch, steps.handle, r.stillHolds(rel, d.ReleaseName, seen, version, d.Values))
	steps.stop()
	// What follows the operation is written under the reconcile's bound: the work's has passed
	// when the operation ran out of time.
	if stopping(bound) {
		// The controller is stopping: the operation stopped at a step its journal records, and
		// the next reconcile resumes it.
		return ctrl.Result{}, bound.Err()
	}
	return r.outcome(bound, in, op, start, out, runs, err)
}

// outcome records in the status what the install or upgrade op that began at start did: the
// revision out it recorded, the plans it ran, or its error.
func (r *Reconciler) outcome(ctx context.Context, in *reconciliation, op string, start time.Time, out *release.Release, runs []lifecycle.Run, err error) (ctrl.Result, error) {
	rel, d, version, chartName := in.rel, in.d, in.version(), in.ch.chart.Name()
	if stale := new(StaleError); errors.As(err, &stale) {
		// Another writer acted first; nothing was written. What it did is read again, soon.
		log.FromContext(ctx).V(1).Info("decision outdated under the lease", "reason", stale.Error())
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	// released says revision is deployed; rec is its record, nil when another writer recorded it.
	released := func(revision int, reason string, rec *release.Release) string {
		msg := fmt.Sprintf("release %s revision %d of chart %s %s is deployed in namespace %s", d.ReleaseName, revision, chartName, version, d.TargetNamespace)
		rel.Status.Revision = revision
		r.recordFootprint(rel, rec)
		rel.Status.ChartName, rel.Status.ChartVersion, rel.Status.ChartDigest = chartName, version, in.ch.digest
		rel.Status.ChartVerified = chartProof(in.ch.proof)
		rel.Status.ValuesDigest, rel.Status.Failures = d.ValuesDigest, 0
		setCondition(rel, ConditionReleased, metav1.ConditionTrue, reason, msg)
		markReady(rel, reason, msg)
		return msg
	}
	if done := new(ReleasedError); errors.As(err, &done) {
		// Another writer released what the spec asks for: say so, and release nothing again.
		released(done.Revision, reasonFor(done.Revision), nil)
		healthUnknown(rel, d, fmt.Sprintf("revision %d was deployed by another writer: the next check of the Release says whether its objects are ready", done.Revision))
		return ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(ctx, in.orig, rel)
	}
	revision := 0
	if out != nil {
		revision = out.Version
	}
	// A regression in the watch window is told as such (Degraded), with what was done about it.
	err = r.degraded(ctx, rel, in.clients, d.ReleaseName, op, revision, err)
	addHistory(rel, operationRecord(op, start, time.Now(), revision, version, err))
	if held := new(release.HeldError); !errors.As(err, &held) {
		// What the operation did; an operation refused for another's lease did nothing.
		rel.Status.LastChanges = changeCounts(runs)
	}
	if err != nil {
		var held *release.HeldError
		if errors.As(err, &held) {
			// Someone else (berth's CLI, say) is changing the release: not an attempt.
			rel.Status.LastAttemptedGeneration = 0
			markFailed(rel, ReasonLocked, err, false)
			return ctrl.Result{RequeueAfter: retryAfter}, r.patchStatus(ctx, in.orig, rel)
		}
		failed := ReasonInstallFailed
		if op == "upgrade" {
			failed = ReasonUpgradeFailed
		}
		reason := reasonOf(err, failed)
		requeue := attemptFailed(rel, d, in.state, reason, err)
		setCondition(rel, ConditionReleased, metav1.ConditionFalse, failed, errorLine(err))
		healthUnknown(rel, d, fmt.Sprintf("the %s failed: the next check of the Release, within spec.interval, says whether its objects are ready", op))
		r.event(ctx, rel, corev1.EventTypeWarning, reason, op, status.EventNote(status.RedactorOf(ctx), err))
		return ctrl.Result{RequeueAfter: requeue}, r.patchStatus(ctx, in.orig, rel)
	}
	reason := ReasonInstallSucceeded
	if op == "upgrade" {
		reason = ReasonUpgradeSucceeded
	}
	msg := released(out.Version, reason, out)
	healthAfter(rel, d, out.Version, d.waits(op))
	r.event(ctx, rel, corev1.EventTypeNormal, reason, op, msg)
	steps := r.stepReporter(ctx, rel)
	r.runTests(ctx, rel, d, in.clients, steps.handle, start)
	steps.stop()
	return ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(ctx, in.orig, rel)
}

// release installs or upgrades the release: an upgrade with --install, so that a release
// that exists (installed by berth, Helm or Flux) is adopted and upgraded, not installed again.
// It returns the revision recorded and the plans the operation executed. The operation's
// deadline is d.Timeout; ctx ending stops it as the controller stopping does; what it reads
// before it starts, it reads under work. Its preflight runs unless rel's spec.skipPreflight.
func (r *Reconciler) release(ctx, work context.Context, rel *v1alpha1.Release, d *desired, clients *kube.Clients, ch *fetched, events func(engine.Event),
	precondition func(context.Context, release.Reader) error) (*release.Release, []lifecycle.Run, error) {
	deps, err := r.depsFor(d, clients, events)
	if err != nil {
		return nil, nil, err
	}
	deps.Preflight = r.preflightFor(rel, clients, deps.Store)
	deps.Precondition = func(ctx context.Context) error { return precondition(ctx, deps.Store) }
	caps, err := lifecycle.Capabilities(work, clients)
	if err != nil {
		return nil, nil, discoveryError(clients, d, err)
	}
	install, upgrade := d.Install, d.Upgrade
	// An interrupted install or upgrade of what the spec still asks for is finished, not done
	// again; one of something else is finished and then upgraded (lifecycle.Next). The spec's
	// values are all the release's values: none of an earlier revision's are kept, even when
	// the spec gives none (as Flux's HelmRelease).
	return revisionOf(lifecycle.Upgrade(ctx, deps, lifecycle.UpgradeOptions{
		Name: d.ReleaseName, Namespace: d.TargetNamespace, Chart: ch.chart, Provenance: ch.proof, Values: d.Values, ValuesStrategy: chart.ValuesReset,
		EncryptedValues: d.EncryptedValues,
		Install:         true, HistoryMax: d.HistoryMax, Capabilities: caps,
		WaitOptions: d.wait(upgrade.OperationSpec, d.UpgradeWatch), NoHooks: upgrade.DisableHooks, RollbackOnFailure: upgrade.RollbackOnFailure,
		CreateNamespace: install.CreateNamespace, CRDs: crdPolicy(upgrade.CRDs), ForceReplace: upgrade.Force,
		InstallWith: &lifecycle.InstallSettings{WaitOptions: d.wait(install.OperationSpec, d.InstallWatch), NoHooks: install.DisableHooks,
			RollbackOnFailure: install.RollbackOnFailure, CRDs: crdPolicy(install.CRDs)},
	}))
}

// revisionOf is the revision an operation recorded, and the plans it executed.
func revisionOf(res *lifecycle.Result, err error) (*release.Release, []lifecycle.Run, error) {
	if res == nil {
		return nil, nil, err
	}
	return res.Release, res.Runs, err
}

// finalize uninstalls the release of a deleted Release, then lets the Release go: its work
// under work, what it writes after under bound (see reconcile).
func (r *Reconciler) finalize(bound, work context.Context, rel *v1alpha1.Release) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(rel, Finalizer) {
		return ctrl.Result{}, nil
	}
	if !rel.Spec.Suspend {
		if res, waiting, err := r.waitForDependents(work, rel); waiting || err != nil {
			return res, err
		}
		if res, done, err := r.uninstall(bound, work, rel); !done || err != nil {
			return res, err
		}
	}
	patch := client.MergeFrom(rel.DeepCopy())
	controllerutil.RemoveFinalizer(rel, Finalizer)
	if err := r.Client.Patch(bound, rel, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// uninstall uninstalls the release of rel if it has one; done says it is gone. What it reads
// and the uninstall run under work; what it writes after, under bound.
func (r *Reconciler) uninstall(bound, ctx context.Context, rel *v1alpha1.Release) (ctrl.Result, bool, error) {
	orig := rel.DeepCopy()
	d := &desired{
		ReleaseName: rel.Status.ReleaseName, TargetNamespace: rel.Status.TargetNamespace,
		Namespace: rel.Namespace, ServiceAccount: rel.Spec.ServiceAccountName, Timeout: defaultTimeout,
	}
	withRemote(d, rel.Spec)
	if lettingGo(rel, false) { // never released
		return ctrl.Result{}, true, nil
	}
	named := d.ServiceAccount != ""
	d.ServiceAccount = r.serviceAccountFor(d.ServiceAccount)
	d.Timeout = timeoutOf(rel.Spec, r.MaxTimeout)
	u := v1alpha1.UninstallSpec{}
	if rel.Spec.Uninstall != nil {
		u = *rel.Spec.Uninstall
	}
	clients, err := r.uninstallClients(ctx, rel, d, named)
	if stale := new(StaleAccountError); errors.As(err, &stale) && lettingGo(rel, true) {
		r.letGo(ctx, orig, rel, d, err)
		return ctrl.Result{}, true, nil
	}
	if err != nil {
		return r.uninstallBlocked(ctx, orig, rel, d, err)
	}
	steps := r.stepReporter(ctx, rel)
	defer steps.stop()
	deps, err := r.depsFor(d, clients, steps.handle)
	if err != nil {
		return r.uninstallBlocked(ctx, orig, rel, d, err)
	}
	deps.Preflight = r.preflightFor(rel, clients, deps.Store)
	state, err := r.lastRecord(ctx, clients, d.ReleaseName)
	err = unanswered(d, clients, err)
	if state.Last != nil {
		// The values the release was deployed with are left out of what the uninstall writes.
		redact := status.NewValueRedactor(state.Last.Config, rel.Name, rel.Namespace, d.ReleaseName, d.TargetNamespace)
		ctx, bound = status.Redacting(ctx, redact), status.Redacting(bound, redact)
	}
	if err == nil {
		// Nothing to uninstall (no record and nothing left behind, or uninstalled with its
		// history kept) lets the Release go; anything else is what lifecycle's Uninstall does.
		var acts []lifecycle.Action
		if acts, state, err = finalizing(ctx, deps, rel, state); err == nil && letsGo(acts) {
			return ctrl.Result{}, true, nil
		}
	}
	start := time.Now()
	var runs []lifecycle.Run
	noJournal := false
	if err == nil {
		markReconciling(rel, "uninstall")
		rel.Status.CurrentStep = "uninstall"
		if err := r.patchStatus(ctx, orig, rel); err != nil {
			return ctrl.Result{}, false, err
		}
		orig = rel.DeepCopy()
		var res *lifecycle.UninstallResult
		// The uninstall's deadline is the work's; bound ending stops it as the controller
		// stopping does.
		res, err = lifecycle.Uninstall(bound, deps, lifecycle.UninstallOptions{
			Name:        d.ReleaseName,
			WaitOptions: lifecycle.WaitOptions{Wait: !u.DisableWait, Timeout: workLeft(ctx, d.Timeout), OrderIfDeclared: !u.DisableWait},
			Cascade:     metav1.DeletionPropagation(cascade(u.DeletionPropagation)),
			KeepHistory: u.KeepHistory, NoHooks: u.DisableHooks,
			// A controller that waits for hooks it can no longer create would hold the
			// namespace's deletion forever.
			SkipHooksInTerminatingNamespace: true,
			LeftBehind:                      state.LeftBehind,
		})
		steps.stop()
		if res != nil {
			runs, noJournal = res.Runs, res.NoJournal
		}
		if err == nil && res != nil && len(res.SkippedHooks) > 0 {
			r.reportSkippedHooks(bound, orig, rel, d, res.SkippedHooks)
			orig = rel.DeepCopy()
		}
	}
	// What follows is written under the reconcile's bound: the work's may have passed.
	ctx = bound
	if stopping(ctx) {
		return ctrl.Result{}, false, ctx.Err() // stopping: the next reconcile resumes the uninstall
	}
	if err != nil && d.Remote == nil && r.accountGone(ctx, rel, err) && lettingGo(rel, true) {
		r.letGo(ctx, orig, rel, d, err)
		return ctrl.Result{}, true, nil
	}
	addHistory(rel, operationRecord("uninstall", start, time.Now(), 0, rel.Status.ChartVersion, err))
	if held := new(release.HeldError); !errors.As(err, &held) {
		// What the operation did; an operation refused for another's lease did nothing.
		rel.Status.LastChanges = changeCounts(runs)
	}
	if err != nil {
		reason := reasonOf(err, ReasonUninstallFailed)
		markFailed(rel, reason, err, false)
		r.event(ctx, rel, corev1.EventTypeWarning, reason, "uninstall", status.EventNote(status.RedactorOf(ctx), err))
		return ctrl.Result{RequeueAfter: uninstallBackoff(rel.Status.History)}, false, r.patchStatus(ctx, orig, rel)
	}
	msg := fmt.Sprintf("release %s uninstalled from namespace %s", d.ReleaseName, d.TargetNamespace)
	if noJournal {
		msg += ", without a journal: the namespace, being deleted, refused it"
	}
	r.event(ctx, rel, corev1.EventTypeNormal, "UninstallSucceeded", "uninstall", msg)
	return ctrl.Result{}, true, nil
}

// waitForDependents holds the uninstall of a deleted Release while Releases that depend on it
// exist; waiting says it does, and the status says which.
func (r *Reconciler) waitForDependents(ctx context.Context, rel *v1alpha1.Release) (res ctrl.Result, waiting bool, err error) {
	if rel.Status.ReleaseName == "" { // never released: nothing to uninstall
		return ctrl.Result{}, false, nil
	}
	dependents, err := r.dependentsOf(ctx, rel)
	if err != nil || len(dependents) == 0 {
		return ctrl.Result{}, false, err
	}
	orig := rel.DeepCopy()
	msg := fmt.Sprintf("uninstall waits until the Releases that depend on this one are gone: %s", strings.Join(dependents, ", "))
	markWaiting(rel, ReasonDependentsExist, msg)
	rel.Status.Blockers = nil
	for _, name := range dependents {
		rel.Status.Blockers = append(rel.Status.Blockers, v1alpha1.Blocker{
			Kind: "dependents", Object: fmt.Sprintf("Release/%s/%s", rel.Namespace, name),
			Message: fmt.Sprintf("Release %s depends on %s (spec.dependsOn) and is uninstalled first", name, rel.Name),
			Next:    fmt.Sprintf("delete Release %s, or remove %s from its spec.dependsOn", name, rel.Name),
		})
	}
	if c := meta.FindStatusCondition(orig.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonDependentsExist || c.Message != msg {
		r.event(ctx, rel, corev1.EventTypeNormal, ReasonDependentsExist, "uninstall", msg)
	}
	// The dependents' deletion wakes this Release; the requeue is a fallback.
	return ctrl.Result{RequeueAfter: retryAfter}, true, r.patchStatus(ctx, orig, rel)
}

// maxUninstallBackoff bounds the wait before a failed uninstall is tried again.
const maxUninstallBackoff = 5 * time.Minute

// uninstallBackoff is the wait before a failed uninstall is tried again: retryAfter, doubled
// for each failed uninstall before it in a row (history, newest first), up to
// maxUninstallBackoff.
func uninstallBackoff(history []v1alpha1.OperationRecord) time.Duration {
	wait := retryAfter
	for i, h := range history {
		if h.Operation != "uninstall" || h.Outcome == "Succeeded" {
			break
		}
		if i > 0 {
			wait *= 2
		}
		if wait >= maxUninstallBackoff {
			return maxUninstallBackoff
		}
	}
	return wait
}

// cascade is the deletion propagation of uninstall.deletionPropagation.
func cascade(p string) string {
	switch p {
	case "background":
		return string(metav1.DeletePropagationBackground)
	case "orphan":
		return string(metav1.DeletePropagationOrphan)
	default:
		return string(metav1.DeletePropagationForeground)
	}
}

// patchStatus writes rel's status when it differs from orig's: a reconcile that changes
// nothing writes nothing. The write is made within the lifecycle's grace even when ctx has ended
// (statusContext): the status says what held the Release, and the Release's timeout is what ends
// its work. A controller that no longer leads (Leading) writes nothing: the one that leads now
// looks at the Release again.
func (r *Reconciler) patchStatus(ctx context.Context, orig, rel *v1alpha1.Release) error {
	status.Redact(rel, r.StatusChartOutput, status.RedactorOf(ctx))
	if equality.Semantic.DeepEqual(orig.Status, rel.Status) {
		return nil
	}
	if r.Leading != nil && !r.Leading() {
		log.FromContext(ctx).Info("status not written: the controller no longer leads", "release", client.ObjectKeyFromObject(rel).String())
		return nil
	}
	ctx, cancel := statusContext(ctx)
	defer cancel()
	if err := r.Client.Status().Patch(ctx, rel, client.MergeFrom(orig)); err != nil {
		log.FromContext(ctx).Error(err, "patch status")
		return client.IgnoreNotFound(err)
	}
	return nil
}
