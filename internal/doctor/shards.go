package doctor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/resource"
)

var (
	berthReleaseGVR = v1alpha1.GroupVersion.WithResource("releases")
	leaseGVR        = coordinationv1.SchemeGroupVersion.WithResource("leases")
)

// liveController is a berth controller that runs: what its leader election Lease, renewed while
// its leader runs, says it serves.
type liveController struct {
	// namespace is the one namespace it serves, "" for every one.
	namespace string
	// selector selects the Releases it serves; text is as the controller wrote it.
	selector labels.Selector
	text     string
	// requireVerified says it releases only verified charts (--require-verified).
	requireVerified bool
	// signers and issuers are its allowed signers and keyless issuers (--allowed-signer,
	// --allowed-issuer), anchored; empty allows any.
	signers, issuers []*regexp.Regexp
}

func (c liveController) String() string {
	s := c.text
	if s == "" {
		s = "every Release"
	}
	if c.namespace != "" {
		s += " of namespace " + c.namespace
	}
	return s
}

func (c liveController) serves(namespace string, l map[string]string) bool {
	return (c.namespace == "" || c.namespace == namespace) && c.selector.Matches(labels.Set(l))
}

// liveControllers are the controllers of the Leases that a leader renewed within their duration,
// by now. A Lease whose selector does not parse is no controller's.
func liveControllers(leases []coordinationv1.Lease, now time.Time) []liveController {
	var out []liveController
	for _, l := range leases {
		s := l.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
			continue
		}
		if now.After(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)) {
			continue
		}
		text := l.Annotations[v1alpha1.WatchLabelSelectorAnnotation]
		sel, err := labels.Parse(text)
		if err != nil {
			continue
		}
		out = append(out, liveController{namespace: l.Annotations[v1alpha1.WatchNamespaceAnnotation], selector: sel, text: text,
			requireVerified: l.Annotations[v1alpha1.RequireVerifiedAnnotation] == "true",
			signers:         anchoredList(l.Annotations[v1alpha1.AllowedSignersAnnotation]),
			issuers:         anchoredList(l.Annotations[v1alpha1.AllowedIssuersAnnotation])})
	}
	return out
}

// unserved are the Releases no controller of ctrls serves.
func unserved(rels []metav1.PartialObjectMetadata, ctrls []liveController) []metav1.PartialObjectMetadata {
	var out []metav1.PartialObjectMetadata
	for _, rel := range rels {
		if !slices.ContainsFunc(ctrls, func(c liveController) bool { return c.serves(rel.Namespace, rel.Labels) }) {
			out = append(out, rel)
		}
	}
	return out
}

// shards finds the Releases (berth.dev) that no running controller serves: labelled for a shard
// no controller runs for, or of no shard while only shards run, or with no controller at all.
func (r *run) shards(ctx context.Context) {
	if r.opts.Release != "" {
		return // a release of berth or helm, not a Release object
	}
	l, err := r.Metadata.Resource(berthReleaseGVR).Namespace(r.opts.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return // no Release CRD: nothing for a controller to serve
	}
	if apierrors.IsForbidden(err) {
		// Releases the user may not see are none of theirs to run: not a finding for every
		// user of berth's commands with rights narrower than the controller's tenants.
		return
	}
	if err != nil {
		r.unreadable(berthReleaseGVR, "Release", r.opts.Namespace, err)
		return
	}
	if len(l.Items) == 0 {
		return
	}
	ctrls, ok := r.liveControllers(ctx)
	if !ok {
		return
	}
	left := unserved(l.Items, ctrls)
	if len(ctrls) == 0 {
		r.add(noController(r.opts.Namespace, left))
		return
	}
	for _, rel := range left {
		r.add(unservedFinding(rel, ctrls))
	}
	r.unverified(ctx, ctrls)
}

// unverified finds the Releases that run a chart that was not verified while a controller that
// requires verification serves them.
func (r *run) unverified(ctx context.Context, ctrls []liveController) {
	if !slices.ContainsFunc(ctrls, func(c liveController) bool { return c.requireVerified }) {
		return
	}
	l, err := r.Dynamic.Resource(berthReleaseGVR).Namespace(r.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.unreadable(berthReleaseGVR, "Release", r.opts.Namespace, err)
		return
	}
	rels := make([]v1alpha1.Release, 0, len(l.Items))
	for _, item := range l.Items {
		var rel v1alpha1.Release
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &rel); err == nil {
			rels = append(rels, rel)
		}
	}
	for _, rel := range runningUnverified(rels, ctrls) {
		r.add(unverifiedFinding(rel))
	}
	for _, rel := range runningUnallowed(rels, ctrls) {
		r.add(unallowedFinding(rel))
	}
}

// runningUnverified are the Releases of rels that run a chart (a revision is deployed) that was
// not verified, while a controller of ctrls that requires verification serves them.
func runningUnverified(rels []v1alpha1.Release, ctrls []liveController) []v1alpha1.Release {
	var out []v1alpha1.Release
	for _, rel := range rels {
		if rel.Status.Revision == 0 || rel.Status.ChartVerified != nil {
			continue
		}
		if slices.ContainsFunc(ctrls, func(c liveController) bool { return c.requireVerified && c.serves(rel.Namespace, rel.Labels) }) {
			out = append(out, rel)
		}
	}
	return out
}

// unverifiedFinding names a Release that runs an unverified chart under a controller that
// requires verification.
func unverifiedFinding(rel v1alpha1.Release) Finding {
	return Finding{
		Severity: Warning, Check: "verification",
		Object: resource.Identity{Group: berthReleaseGVR.Group, Kind: "Release", Namespace: rel.Namespace, Name: rel.Name},
		Problem: fmt.Sprintf("it runs revision %d of chart %s %s, which was not verified (no status.chartVerified), and the controller that serves it releases only verified charts (--require-verified)",
			rel.Status.Revision, rel.Status.ChartName, rel.Status.ChartVersion),
		Breaks: "the controller refuses it (VerificationRequired): it is neither upgraded nor corrected until its chart is verified",
		Fix:    fmt.Sprintf("set spec.chart.verify of Release %s/%s: provider cosign with the Secret of its signer's key (or keyless: its identity, issuer and trusted root) for a chart of an OCI registry, or a keyring Secret for a chart served with its provenance file", rel.Namespace, rel.Name),
	}
}

// liveControllers lists the controllers' leader election Leases in every namespace.
func (r *run) liveControllers(ctx context.Context) ([]liveController, bool) {
	l, err := r.Dynamic.Resource(leaseGVR).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ControllerLabel})
	if err != nil {
		r.unreadable(leaseGVR, "Lease", "", err)
		return nil, false
	}
	leases := make([]coordinationv1.Lease, 0, len(l.Items))
	for _, item := range l.Items {
		var lease coordinationv1.Lease
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &lease); err == nil {
			leases = append(leases, lease)
		}
	}
	return liveControllers(leases, r.Now()), true
}

func releaseIdentity(rel metav1.PartialObjectMetadata) resource.Identity {
	return resource.Identity{Group: berthReleaseGVR.Group, Kind: "Release", Namespace: rel.Namespace, Name: rel.Name}
}

// noController is the one finding when no controller runs at all.
func noController(namespace string, rels []metav1.PartialObjectMetadata) Finding {
	names := make([]string, len(rels))
	for i, rel := range rels {
		names[i] = rel.Namespace + "/" + rel.Name
	}
	return Finding{
		Severity: Warning, Check: "shard",
		Object: resource.Identity{Group: berthReleaseGVR.Group, Kind: "Release", Namespace: namespace},
		Problem: fmt.Sprintf("no berth controller is running (none renews a leader election Lease labelled %s), so nothing reconciles %s: %s",
			v1alpha1.ControllerLabel, plural(len(rels), "Release"), list(names, 5)),
		Breaks: "no Release is installed, upgraded or uninstalled; a deleted Release waits on its finalizer",
		Fix:    "install the berth-controller chart, or run berth controller --leader-elect",
	}
}

// unservedFinding names a Release that no running controller serves, and the shard to deploy.
func unservedFinding(rel metav1.PartialObjectMetadata, ctrls []liveController) Finding {
	running := make([]string, len(ctrls))
	for i, c := range ctrls {
		running[i] = c.String()
	}
	slices.Sort(running)
	running = slices.Compact(running)
	f := Finding{
		Severity: Warning, Check: "shard",
		Object: releaseIdentity(rel),
		Breaks: "nothing reconciles it: its spec is not installed or upgraded, and its deletion waits on its finalizer",
	}
	key, ok := rel.Labels[v1alpha1.ShardKeyLabel]
	if !ok {
		f.Problem = fmt.Sprintf("it has no %s label and no running controller serves it; the running controllers serve: %s",
			v1alpha1.ShardKeyLabel, strings.Join(running, "; "))
		f.Fix = fmt.Sprintf("run a controller for the Releases of no shard (the berth-controller chart's main controller, --watch-label-selector '!%s'), or label the Release with a running shard's key: kubectl label release -n %s %s %s=SHARD",
			v1alpha1.ShardKeyLabel, rel.Namespace, rel.Name, v1alpha1.ShardKeyLabel)
		return f
	}
	f.Problem = fmt.Sprintf("it is of shard %q (%s=%s) and no running controller serves it; the running controllers serve: %s",
		key, v1alpha1.ShardKeyLabel, key, strings.Join(running, "; "))
	f.Fix = fmt.Sprintf("deploy a shard for %s (add it to the berth-controller chart's sharding.shards, or run berth controller --watch-label-selector %s=%s), or fix the label: kubectl label release -n %s %s %s=SHARD --overwrite",
		key, v1alpha1.ShardKeyLabel, key, rel.Namespace, rel.Name, v1alpha1.ShardKeyLabel)
	return f
}
