package doctor

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// longWebhookTimeout is a webhook timeout above the API server's default of 10 s.
const longWebhookTimeout = 10

var (
	validatingGVR  = admissionv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
	mutatingGVR    = admissionv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	apiServiceGVR  = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	crdGVR         = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	namespaceGVR   = corev1.SchemeGroupVersion.WithResource("namespaces")
	pdbGVR         = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	argoHookFinal  = "argocd.argoproj.io/hook-finalizer"
	jobGVR         = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	podGVR         = corev1.SchemeGroupVersion.WithResource("pods")
	namespaceKind  = schema.GroupKind{Kind: "Namespace"}
	webhookConfigs = []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{validatingGVR, "ValidatingWebhookConfiguration"}, {mutatingGVR, "MutatingWebhookConfiguration"}}
)

// listAll lists gvr in namespace ("" for all), recording a finding when it may not. A list
// read ahead (prefetch) is taken as it was read.
func (r *run) listAll(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace string) ([]unstructured.Unstructured, bool) {
	var l *unstructured.UnstructuredList
	var err error
	if got, ok := r.listsRead[gvr]; ok && namespace == "" {
		l, err = got.list, got.err
	} else {
		l, err = r.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		r.unreadable(gvr, kind, namespace, err)
		return nil, false
	}
	return l.Items, true
}

// missingService says whether a webhook's service, or its namespace, does not exist.
func (r *run) missingService(ctx context.Context, s *admissionv1.ServiceReference) string {
	if s == nil {
		return ""
	}
	if _, err := r.Dynamic.Resource(namespaceGVR).Get(ctx, s.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "; namespace " + s.Namespace + " does not exist"
	}
	services := corev1.SchemeGroupVersion.WithResource("services")
	if _, err := r.Dynamic.Resource(services).Namespace(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "; the service does not exist"
	}
	return ""
}

// endpointsUnreadable says whether the EndpointSlices of a webhook's service may not be listed,
// and records that as a finding (once per namespace): whether the webhook answers is then
// unknown, not known to be false.
func (r *run) endpointsUnreadable(ctx context.Context, s *admissionv1.ServiceReference) bool {
	if s == nil {
		return false
	}
	gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	_, err := r.Dynamic.Resource(gvr).Namespace(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name, Limit: 1,
	})
	if err == nil {
		return false
	}
	r.unreadable(gvr, "EndpointSlice", s.Namespace, err)
	return true
}

// badCABundle says what is wrong with a webhook's caBundle, "" when nothing is (an empty one
// leaves the API server to its own roots). The API server trusts the certificates of the bundle
// that parse and skips the rest, as x509.CertPool.AppendCertsFromPEM does; only a bundle with
// none it can use is wrong.
func badCABundle(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	bad := "holds no PEM certificate"
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) != 0 {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			bad = "holds a certificate that does not parse (" + err.Error() + ")"
			continue
		}
		return ""
	}
	return bad
}

// apiServices finds aggregated APIServices that are not Available.
func (r *run) apiServices(ctx context.Context) {
	items, _ := r.listAll(ctx, apiServiceGVR, "APIService", "")
	for _, item := range items {
		svcNS, _, _ := unstructured.NestedString(item.Object, "spec", "service", "namespace")
		svcName, _, _ := unstructured.NestedString(item.Object, "spec", "service", "name")
		if svcName == "" {
			continue // served by the API server itself
		}
		group, _, _ := unstructured.NestedString(item.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(item.Object, "spec", "version")
		available, reason := availability(&item)
		if available {
			continue
		}
		gv := group + "/" + version
		svc := svcNS + "/" + svcName
		f := Finding{
			Severity: Blocker, Check: "apiservice",
			Object:  resource.Identity{Group: apiServiceGVR.Group, Kind: "APIService", Name: item.GetName()},
			Problem: fmt.Sprintf("not Available (%s); it is served by service %s", reason, svc),
			Breaks:  fmt.Sprintf("discovery of %s fails for every client, and no namespace can finish deleting while it does", gv),
			Fix:     fmt.Sprintf("bring service %s back, or delete the APIService %s if %s is gone for good", svc, item.GetName(), gv),
		}
		if r.opts.planned && !r.meetsAPIService(&item, gv, &f) {
			continue
		}
		r.add(f)
	}
}

// availability says whether an APIService's Available condition is True, and why, as its
// condition says.
func availability(item *unstructured.Unstructured) (bool, string) {
	available, reason := false, "no Available condition yet"
	conds, _, _ := unstructured.NestedSlice(item.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			available = m["status"] == "True"
			reason = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return available, reason
}

// meetsAPIService says whether the operation's requests meet an APIService that is not
// Available, and rewrites its finding f to say how: a blocker when the operation creates,
// changes or deletes objects of its group and version, or deletes a namespace (which cannot
// finish deleting while discovery fails); a warning that discovery fails otherwise. The release
// that owns the APIService is never stopped by it: its upgrade is how it is repaired.
func (r *run) meetsAPIService(item *unstructured.Unstructured, gv string, f *Finding) bool {
	if rel, ns, ok := resource.OwnedBy(item); ok && rel == r.opts.Release && ns == r.opts.Namespace {
		return false
	}
	var touched, namespaces []string
	for _, q := range r.opts.requests {
		switch {
		case q.Object.GetAPIVersion() == gv || q.Object.GetAPIVersion() == strings.TrimPrefix(gv, "/"):
			touched = append(touched, string(q.Operation)+" of "+q.Subject())
		case q.Operation == admissionv1.Delete && q.Object.GroupVersionKind().GroupKind() == namespaceKind:
			namespaces = append(namespaces, q.Object.GetName())
		}
	}
	switch {
	case len(touched) > 0:
		f.Breaks = fmt.Sprintf("the operation's %s %s while %s is not served", list(touched, maxNamed), verb(len(touched), "fails", "fail"), gv)
	case len(namespaces) > 0:
		f.Breaks = fmt.Sprintf("namespace %s cannot finish deleting while discovery of %s fails", list(namespaces, maxNamed), gv)
	default:
		f.Severity = Warning
		f.Breaks = fmt.Sprintf("discovery of %s fails for every client (listing what it serves, and deleting namespaces); this operation makes no request of it", gv)
	}
	return true
}

// conversionWebhooks finds CRDs whose conversion webhook cannot answer.
func (r *run) conversionWebhooks(ctx context.Context) {
	items, _ := r.listAll(ctx, crdGVR, "CustomResourceDefinition", "")
	for _, item := range items {
		var crd apiextensionsv1.CustomResourceDefinition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &crd) != nil {
			continue
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || !converts(&crd) {
			continue
		}
		cc := conv.Webhook.ClientConfig
		acc := admissionv1.WebhookClientConfig{URL: cc.URL, CABundle: cc.CABundle}
		if s := cc.Service; s != nil {
			acc.Service = &admissionv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
		}
		backend, ok := r.Backend(ctx, acc)
		if ok || r.endpointsUnreadable(ctx, acc.Service) {
			continue
		}
		r.add(Finding{
			Severity: Blocker, Check: "conversion",
			Object:  resource.Identity{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition", Name: crd.Name},
			Problem: fmt.Sprintf("its conversion webhook %s cannot answer", backend),
			Breaks:  fmt.Sprintf("reading or writing %s in any version but the stored one fails, and so do listing and deleting them", crd.Spec.Names.Plural),
			Fix:     "bring the conversion webhook's backend up",
		})
	}
}

// converts reports whether the API server may call a CRD's conversion webhook: only when its
// objects can be asked for or stored in more than one version (those served, the storage one
// and those its objects are still stored in); between a version and itself it never converts.
func converts(crd *apiextensionsv1.CustomResourceDefinition) bool {
	versions := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if v.Served || v.Storage {
			versions[v.Name] = true
		}
	}
	for _, v := range crd.Status.StoredVersions {
		versions[v] = true
	}
	return len(versions) > 1
}

// namespaces finds namespaces stuck Terminating, with what the namespace controller says is left.
func (r *run) namespaces(ctx context.Context) {
	var items []unstructured.Unstructured
	if r.opts.Namespace != "" {
		ns, err := r.namespace(ctx, r.opts.Namespace)
		if err != nil {
			return
		}
		items = []unstructured.Unstructured{*ns}
	} else {
		items, _ = r.listAll(ctx, namespaceGVR, "Namespace", "")
	}
	for _, item := range items {
		var ns corev1.Namespace
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &ns) != nil || ns.Status.Phase != corev1.NamespaceTerminating {
			continue
		}
		problem := "Terminating"
		if t := ns.DeletionTimestamp; t != nil {
			problem += " for " + r.age(t.Time)
		}
		var why []string
		for _, f := range cluster.Finalizers(&item) {
			if f.Holder == cluster.HeldByNamespaceController {
				why = append(why, fmt.Sprintf("finalizer %s is removed by %s", f.Name, cluster.HolderName(f.Holder, f.Domain)))
			}
		}
		for _, c := range ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Message != "" {
				why = append(why, fmt.Sprintf("condition %s (%s): %s", c.Type, c.Reason, c.Message))
			}
		}
		if len(why) > 0 {
			problem += ": " + strings.Join(why, "; ")
		}
		r.add(Finding{
			Severity: Blocker, Check: "namespace",
			Object:  resource.Identity{Kind: "Namespace", Name: ns.Name},
			Problem: problem,
			Breaks:  "nothing can be created in it (hooks, new objects) and its releases cannot be installed or upgraded",
			Fix:     "let the controllers of the finalizers named run (see the finalizer findings), or remove those finalizers if their controllers are gone for good",
		})
	}
}

// releases finds releases left pending (or uninstalling) with no live operation holding them.
func (r *run) releases(ctx context.Context) {
	rels, err := r.Releases(r.opts.Namespace).List(ctx, release.ListOptions{
		AllNamespaces: r.opts.Namespace == "",
		Statuses: []release.Status{release.StatusPendingInstall, release.StatusPendingUpgrade,
			release.StatusPendingRollback, release.StatusUninstalling},
	})
	if err != nil {
		r.unreadable(corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", r.opts.Namespace, err)
		return
	}
	for _, rel := range rels {
		if r.opts.Release != "" && rel.Name != r.opts.Release {
			continue
		}
		holder, live, err := r.LeaseHolder(ctx, rel.Namespace, rel.Name)
		if err == nil && live {
			continue // an operation is under way
		}
		problem := fmt.Sprintf("revision %d is %s and no operation holds it", rel.Version, rel.Info.Status)
		if holder != nil {
			problem += fmt.Sprintf(" (the last holder, %s, let its lease expire)", holder)
		}
		fix := fmt.Sprintf("berth recover %s -n %s (finishes it; --rollback undoes it)", rel.Name, rel.Namespace)
		if rel.Info.Status == release.StatusUninstalling {
			fix = fmt.Sprintf("berth uninstall %s -n %s (finishes the uninstall)", rel.Name, rel.Namespace)
		}
		r.add(Finding{
			Severity: Blocker, Check: "release",
			Object:  resource.Identity{Kind: "Release", Namespace: rel.Namespace, Name: rel.Name},
			Problem: problem,
			Breaks:  "helm refuses every operation on it (\"another operation is in progress\"); berth finishes it first",
			Fix:     fix,
		})
	}
}

// pdbs finds PodDisruptionBudgets that allow no disruption of the Pods they cover.
func (r *run) pdbs(ctx context.Context) {
	items, _ := r.listAll(ctx, pdbGVR, "PodDisruptionBudget", r.opts.Namespace)
	for _, item := range items {
		var pdb policyv1.PodDisruptionBudget
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &pdb) != nil {
			continue
		}
		if pdb.Status.ExpectedPods == 0 || pdb.Status.DisruptionsAllowed > 0 || pdb.Status.ObservedGeneration < pdb.Generation {
			continue
		}
		r.add(Finding{
			Severity: Warning, Check: "pdb",
			Object:  resource.Identity{Group: policyv1.GroupName, Kind: "PodDisruptionBudget", Namespace: pdb.Namespace, Name: pdb.Name},
			Problem: fmt.Sprintf("allows 0 disruptions of its %d Pod(s) (%d healthy, %d desired)", pdb.Status.ExpectedPods, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy),
			Breaks:  "evicting any of its Pods (a node drain, an upgrade that evicts) waits until it allows one",
			Fix:     "scale the workload up or relax the budget's minAvailable/maxUnavailable before draining or upgrading",
		})
	}
}
