package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

// conversionCRD is CRD %[1]s of group %[2]s and kind %[7]s (plural %[5]s, singular %[6]s)
// whose conversion webhook is service converter in namespace %[3]s; %[4]s are its versions
// (crdVersion entries).
const conversionCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s}
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: %[5]s, singular: %[6]s, kind: %[7]s, listKind: %[7]sList}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {namespace: %[3]s, name: converter, path: /convert}}
  versions:%[4]s
`

// crdVersion is one entry of a CRD's versions.
func crdVersion(name string, storage bool) string {
	return fmt.Sprintf("\n  - {name: %s, served: true, storage: %t, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}", name, storage)
}

// applyCRD creates a CRD from manifest, waits until it is Established, and when the test ends
// deletes it and waits until it is gone, so that no later test's doctor finds it.
func applyCRD(t *testing.T, env *testenv.Env, name, manifest string) {
	t.Helper()
	env.Apply(t, manifest)
	crds := env.Resource(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
	t.Cleanup(func() {
		ctx := context.Background()
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", name, err)
			return
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("waiting until CRD %s is gone: %v", name, err)
		}
	})
	eventually(t, "CRD "+name+" is Established", func(ctx context.Context) (bool, error) {
		c, err := crds.Get(ctx, name, metav1.GetOptions{})
		return err == nil && hasCondition(c, "Established", "True"), nil
	})
}

// TestConversionWebhookWithoutEndpoints: a CRD of two versions whose conversion webhook is a
// service without endpoints cannot serve its objects in the version they are not stored in, and
// doctor names it as a blocker. A CRD of one version with the same webhook never converts (its
// objects are read and written as they are), and doctor says nothing of it. (CRDs are
// cluster-wide, so not in parallel with the other tests.)
func TestConversionWebhookWithoutEndpoints(t *testing.T) {
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	env.Apply(t, `{apiVersion: v1, kind: Service, metadata: {name: converter}, spec: {selector: {app: converter}, ports: [{port: 443}]}}`)

	twoVersions := "widgets." + group
	applyCRD(t, env, twoVersions, fmt.Sprintf(conversionCRD, twoVersions, group, env.Namespace,
		crdVersion("v1", true)+crdVersion("v2", false), "widgets", "widget", "Widget"))
	oneVersion := "gadgets." + group
	applyCRD(t, env, oneVersion, fmt.Sprintf(conversionCRD, oneVersion, group, env.Namespace,
		crdVersion("v1", true), "gadgets", "gadget", "Gadget"))

	// What doctor says is so: a Widget is written in v1, and cannot be read in v2.
	widget := env.Apply(t, fmt.Sprintf(`{apiVersion: %s/v1, kind: Widget, metadata: {name: w}, spec: {size: 1}}`, group))
	widgets := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(env.Namespace)
	t.Cleanup(func() { _ = widgets.Delete(context.Background(), widget.GetName(), metav1.DeleteOptions{}) })
	v2 := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "widgets"}).Namespace(env.Namespace)
	if _, err := v2.Get(t.Context(), "w", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "conversion webhook") {
		t.Fatalf("reading a v1 Widget in v2 through a conversion webhook without endpoints: %v, want a conversion error", err)
	}
	// A Gadget, of one version only, is written and read without the webhook.
	env.Apply(t, fmt.Sprintf(`{apiVersion: %s/v1, kind: Gadget, metadata: {name: g}, spec: {size: 1}}`, group))
	gadgets := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(env.Namespace)
	if l, err := gadgets.List(t.Context(), metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("listing Gadgets, which are never converted: %v", err)
	}

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "conversion", twoVersions)
	want := resource.Identity{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: twoVersions}
	if len(got) != 1 || got[0].Severity != doctor.Blocker || got[0].Object != want ||
		got[0].Problem != fmt.Sprintf("its conversion webhook service %s/converter (no ready endpoints) cannot answer", env.Namespace) ||
		!strings.HasPrefix(got[0].Breaks, "reading or writing widgets in any version but the stored one fails") {
		t.Errorf("findings about CRD %s: %+v", twoVersions, got)
	}
	if got := find(rep, "conversion", oneVersion); len(got) != 0 {
		t.Errorf("doctor reports the conversion webhook of CRD %s, which has one version and never converts: %+v", oneVersion, got)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
}

// notPEM is a caBundle that holds no PEM block at all; unparsable is one whose PEM certificate
// is not a certificate.
var (
	notPEM     = []byte("this is not a certificate")
	unparsable = []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
)

// urlWebhooks creates a ValidatingWebhookConfiguration named name of hooks, each calling w's URL
// (with w's CA unless it has a caBundle of its own, failurePolicy Fail unless it has another)
// for requests in the test's namespace, and deletes it when the test ends.
func urlWebhooks(t *testing.T, env *testenv.Env, name string, w *testenv.Webhook, hooks ...admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	for i := range hooks {
		h := &hooks[i]
		h.ClientConfig.URL = &w.URL
		if h.ClientConfig.CABundle == nil {
			h.ClientConfig.CABundle = w.CABundle
		}
		if h.FailurePolicy == nil {
			h.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
		}
		h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: env.Namespace}}
		h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNone)
		h.AdmissionReviewVersions = []string{"v1"}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	configs := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := configs.Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = configs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// onCreate is a rule of CREATE of core resources.
func onCreate(resources ...string) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{testenv.Rule(
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create}, []string{""}, []string{"v1"}, resources)}
}

// TestWebhookBadCABundle: a webhook whose caBundle holds no PEM certificate, and one whose PEM
// certificate does not parse, cannot be called by the API server even though their backend
// answers; doctor names each as a blocker of what it intercepts. A webhook whose caBundle holds
// its CA and, besides, a certificate that does not parse is called (the API server skips what
// does not parse), and doctor says nothing of it.
func TestWebhookBadCABundle(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	w := testenv.StartWebhook(t, testenv.Allow())
	noPEMName, unparsableName := "nopem-"+env.Namespace, "badcert-"+env.Namespace
	urlWebhooks(t, env, noPEMName, w, admissionregistrationv1.ValidatingWebhook{
		Name: "nopem.berth.example.com", Rules: onCreate("configmaps"), ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: notPEM}})
	urlWebhooks(t, env, unparsableName, w, admissionregistrationv1.ValidatingWebhook{
		Name: "badcert.berth.example.com", Rules: onCreate("secrets"), ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: unparsable}})

	// What doctor says is so: the API server fails the requests either webhook intercepts.
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, "the API server fails a ConfigMap's CREATE on webhook nopem.berth.example.com", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "nopem.berth.example.com"`), nil
	})
	eventually(t, "the API server fails a Secret's CREATE on webhook badcert.berth.example.com", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Secrets(env.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "badcert.berth.example.com"`), nil
	})
	if n := w.Requests(); n != 0 {
		t.Errorf("the backend received %d requests; the API server should not have reached it", n)
	}
	mixed, mixedName := testenv.StartWebhook(t, testenv.Allow()), "mixed-"+env.Namespace
	urlWebhooks(t, env, mixedName, mixed, admissionregistrationv1.ValidatingWebhook{
		Name: "mixed.berth.example.com", Rules: onCreate("serviceaccounts"),
		ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: append(append([]byte{}, unparsable...), mixed.CABundle...)}})
	eventually(t, "the API server calls webhook mixed.berth.example.com", func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		if err != nil {
			return false, fmt.Errorf("a ServiceAccount's CREATE through webhook mixed.berth.example.com: %w", err)
		}
		return mixed.Requests() > 0, nil
	})

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	for _, c := range []struct{ config, webhook, bad, resource string }{
		{noPEMName, "nopem.berth.example.com", "holds no PEM certificate", "configmaps"},
		{unparsableName, "badcert.berth.example.com", "holds a certificate that does not parse", "secrets"},
	} {
		got := find(rep, "webhook", c.config)
		want := resource.Identity{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: c.config}
		if len(got) != 1 || got[0].Severity != doctor.Blocker || got[0].Object != want ||
			!strings.HasPrefix(got[0].Problem, fmt.Sprintf("webhook %q (failurePolicy Fail): its caBundle %s", c.webhook, c.bad)) ||
			got[0].Breaks != fmt.Sprintf("every CREATE of %s in namespaces labelled kubernetes.io/metadata.name=%s fails", c.resource, env.Namespace) ||
			!strings.Contains(got[0].Fix, "caBundle") {
			t.Errorf("findings about webhook configuration %s: %+v", c.config, got)
		}
	}
	if got := find(rep, "webhook", mixedName); len(got) != 0 {
		t.Errorf("doctor reports webhook configuration %s, which the API server calls: %+v", mixedName, got)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
}

// TestWebhookLongTimeout: of three webhooks whose backend answers, the one with failurePolicy
// Fail and timeoutSeconds 15 is a warning; the one that waits the API server's default of 10 s
// and the one with failurePolicy Ignore are not reported.
func TestWebhookLongTimeout(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	w := testenv.StartWebhook(t, testenv.Allow())
	name := "slow-" + env.Namespace
	urlWebhooks(t, env, name, w,
		admissionregistrationv1.ValidatingWebhook{Name: "slow.berth.example.com", Rules: onCreate("configmaps"), TimeoutSeconds: ptr.To[int32](15)},
		admissionregistrationv1.ValidatingWebhook{Name: "prompt.berth.example.com", Rules: onCreate("configmaps"), TimeoutSeconds: ptr.To[int32](10)},
		admissionregistrationv1.ValidatingWebhook{Name: "lenient.berth.example.com", Rules: onCreate("configmaps"), TimeoutSeconds: ptr.To[int32](30),
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore)},
	)

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "webhook", name)
	want := doctor.Finding{
		Severity: doctor.Warning, Check: "webhook",
		Object:  resource.Identity{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: name},
		Problem: fmt.Sprintf(`webhook "slow.berth.example.com" (failurePolicy Fail) waits up to 15s for %s (accepts connections)`, w.URL),
		Breaks: fmt.Sprintf("every CREATE of configmaps in namespaces labelled kubernetes.io/metadata.name=%s fails after waiting that long when the backend is slow",
			env.Namespace),
		Fix: "lower the webhook's timeoutSeconds to 10 or less",
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("findings about webhook configuration %s:\n%+v\nwant only\n%+v", name, got, want)
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d (warnings only): %+v", code, cli.ExitDoctorWarnings, rep.Findings)
	}
}

// TestCannotListIsAWarning: a user (berth doctor --kube-as-user) who may read the test's
// namespace and, cluster-wide, validating webhook configurations, APIServices and namespaces, but
// not CRDs nor mutating webhook configurations, gets a permission warning for each of those two
// naming what it may not list and how to fix that, and nothing else; berth doctor exits 1.
func TestCannotListIsAWarning(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	user := "doctor-" + env.Namespace
	env.ApplyAll(t, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
- {apiGroups: [admissionregistration.k8s.io], resources: [validatingwebhookconfigurations], verbs: [get, list]}
- {apiGroups: [apiregistration.k8s.io], resources: [apiservices], verbs: [get, list]}
- {apiGroups: [""], resources: [namespaces, services], verbs: [get, list]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
`, user))
	t.Cleanup(func() {
		rbac := env.Client.RbacV1()
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	eventually(t, "the user's rights are in effect", func(ctx context.Context) (bool, error) {
		for _, a := range []authorizationv1.ResourceAttributes{
			{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
			{Verb: "list", Resource: "secrets", Namespace: env.Namespace},
		} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}
			out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil || !out.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	})

	rep, code := runDoctor(t, env, "-n", env.Namespace, "--kube-as-user", user)
	want := []doctor.Finding{
		cannotList(user, "apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions"),
		cannotList(user, "admissionregistration.k8s.io", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
	}
	if len(rep.Findings) != len(want) {
		t.Fatalf("findings of doctor as %s: %+v, want %d", user, rep.Findings, len(want))
	}
	for _, w := range want {
		found := false
		for _, f := range rep.Findings {
			found = found || (f.Severity == w.Severity && f.Check == w.Check && f.Object == w.Object && f.Fix == w.Fix &&
				strings.HasPrefix(f.Problem, w.Problem) && f.Breaks == w.Breaks)
		}
		if !found {
			t.Errorf("no finding like %+v in %+v", w, rep.Findings)
		}
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorWarnings)
	}
}

// cannotList is the finding that user may not list resource of group: its Problem is the start
// of the finding's, which goes on with the API server's words.
func cannotList(user, group, kind, resourceName string) doctor.Finding {
	return doctor.Finding{
		Severity: doctor.Warning, Check: "permission",
		Object:  resource.Identity{Group: group, Kind: kind},
		Problem: fmt.Sprintf("cannot list %s.%s: %s.%s is forbidden: User %q cannot list resource", resourceName, group, resourceName, group, user),
		Breaks:  "what would be found there is not checked",
		Fix:     fmt.Sprintf("run berth doctor as a user who may list %s.%s", resourceName, group),
	}
}

// doctorAt runs doctor's checks of the test's namespace as berth doctor -n does, with the clock
// reading now.
func doctorAt(t *testing.T, env *testenv.Env, now time.Time) doctor.Report {
	t.Helper()
	clients, err := kube.NewClients(env.Config, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	store := release.NewSecretStore(clients.Client.CoreV1(), env.Namespace)
	c := doctor.Cluster{
		Dynamic: clients.Dynamic, Metadata: clients.Metadata, Discovery: clients.Client.Discovery(), Mapper: clients.Mapper,
		Backend:  cluster.New(clients.Dynamic, clients.Mapper).WebhookBackend,
		Releases: func(ns string) release.Reader { return store.In(ns) },
		LeaseHolder: func(ctx context.Context, ns, name string) (*release.Holder, bool, error) {
			return release.NewLeases(clients.Client.CoordinationV1(), ns).Holder(ctx, name)
		},
		Now: func() time.Time { return now },
	}
	return doctor.Run(t.Context(), c, doctor.Options{Namespace: env.Namespace})
}

// TestStuckFinalizerEscalates: an object being deleted that waits on a finalizer is a warning
// while its deletion is younger than a minute, and a blocker from then on. berth doctor, run
// right after the deletion, reports it with the exit code of its severity; doctor's checks with
// their clock set to 59 s and to 1 min after the deletion reach each state.
func TestStuckFinalizerEscalates(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(context.Background(), "held", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	})
	if err := env.Client.CoreV1().ConfigMaps(env.Namespace).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var since time.Time
	eventually(t, "the ConfigMap is being deleted", func(ctx context.Context) (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, "held", metav1.GetOptions{})
		if err != nil || cm.DeletionTimestamp == nil {
			return false, nil
		}
		since = cm.DeletionTimestamp.Time
		return true, nil
	})
	id := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "held"}

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	ran := time.Now()
	got := find(rep, "finalizer", "held")
	if len(got) != 1 || got[0].Object != id || !strings.HasPrefix(got[0].Problem, "1 object(s) being deleted wait on finalizer example.com/hold, the oldest for ") {
		t.Fatalf("findings of berth doctor about ConfigMap held: %+v", rep.Findings)
	}
	wantCode := map[doctor.Severity]int{doctor.Warning: cli.ExitDoctorWarnings, doctor.Blocker: cli.ExitDoctorBlockers}[got[0].Severity]
	if code != wantCode {
		t.Errorf("exit code %d with a %s, want %d", code, got[0].Severity, wantCode)
	}
	if ran.Sub(since) < time.Minute && got[0].Severity != doctor.Warning {
		t.Errorf("berth doctor run %s after the deletion reports a %s, want a warning", ran.Sub(since), got[0].Severity)
	}

	for _, c := range []struct {
		after    time.Duration
		severity doctor.Severity
		age      string
	}{
		{59 * time.Second, doctor.Warning, "59s"},
		{time.Minute, doctor.Blocker, "1m"},
		{3 * time.Hour, doctor.Blocker, "3h"},
	} {
		rep := doctorAt(t, env, since.Add(c.after))
		got := find(rep, "finalizer", "held")
		want := doctor.Finding{
			Severity: c.severity, Check: "finalizer", Object: id,
			Problem: fmt.Sprintf("1 object(s) being deleted wait on finalizer example.com/hold, the oldest for %s: %s", c.age, id),
			Breaks:  "uninstalls wait for these objects to go, and so does the deletion of their namespace",
		}
		if len(got) != 1 || got[0].Severity != want.Severity || got[0].Problem != want.Problem || got[0].Breaks != want.Breaks ||
			!strings.Contains(got[0].Fix, "example.com") {
			t.Errorf("%s after the deletion: findings about ConfigMap held:\n%+v\nwant one like\n%+v", c.after, got, want)
		}
		if worst := rep.Worst(); worst != c.severity {
			t.Errorf("%s after the deletion: worst finding %q, want %q: %+v", c.after, worst, c.severity, rep.Findings)
		}
	}
}

// TestWebhookBackendUnreadable: a webhook whose service has ready endpoints is not reported to a
// user who may read it; to a user who may read the webhook configurations but not the
// EndpointSlices of its service's namespace, doctor cannot tell whether it answers, and says
// that it may not list them (a warning, exit 1) rather than that the webhook cannot answer.
func TestWebhookBackendUnreadable(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	name, user := "guard-"+env.Namespace, "guard-reader-"+env.Namespace
	env.ApplyAll(t, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: guard}
spec: {ports: [{port: 443}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: guard-1, labels: {kubernetes.io/service-name: guard}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1], conditions: {ready: true}}]
ports: [{port: 443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %[1]s}
webhooks:
- name: guard.berth.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[2]s}}
  rules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  clientConfig: {service: {namespace: %[2]s, name: guard}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[3]s}
rules:
- {apiGroups: [admissionregistration.k8s.io], resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations], verbs: [get, list]}
- {apiGroups: [apiregistration.k8s.io], resources: [apiservices], verbs: [get, list]}
- {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [get, list]}
- {apiGroups: [""], resources: [namespaces], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[3]s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]s}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[3]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: core-reader}
rules:
- {apiGroups: [""], resources: ["*"], verbs: [get, list]}
- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: core-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]s}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: core-reader}
`, name, env.Namespace, user))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
	})

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	if len(rep.Findings) != 0 || code != 0 {
		t.Fatalf("doctor of a namespace whose webhook has ready endpoints: exit %d, findings %+v", code, rep.Findings)
	}

	eventually(t, "the user's rights are in effect", func(ctx context.Context) (bool, error) {
		a := authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: env.Namespace}
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}
		out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && out.Status.Allowed, nil
	})
	rep, code = runDoctor(t, env, "-n", env.Namespace, "--kube-as-user", user)
	if got := find(rep, "webhook", name); len(got) != 0 {
		t.Errorf("doctor as a user who may not list EndpointSlices reports webhook configuration %s: %+v", name, got)
	}
	want := doctor.Finding{
		Severity: doctor.Warning, Check: "permission",
		Object:  resource.Identity{Group: "discovery.k8s.io", Kind: "EndpointSlice", Namespace: env.Namespace},
		Problem: fmt.Sprintf("cannot list endpointslices.discovery.k8s.io in namespace %s: endpointslices.discovery.k8s.io is forbidden", env.Namespace),
		Breaks:  "what would be found there is not checked",
		Fix:     "run berth doctor as a user who may list endpointslices.discovery.k8s.io",
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Severity != want.Severity || rep.Findings[0].Check != want.Check || rep.Findings[0].Object != want.Object ||
		!strings.HasPrefix(rep.Findings[0].Problem, want.Problem) || rep.Findings[0].Breaks != want.Breaks || rep.Findings[0].Fix != want.Fix {
		t.Errorf("findings of doctor as %s:\n%+v\nwant only one like\n%+v", user, rep.Findings, want)
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorWarnings)
	}
}

// TestPodInGracePeriodIsNotStuck: a Pod with a finalizer deleted with a grace period of an hour
// waits on its grace period, not yet on its finalizer: doctor reports nothing (exit 0). Once the
// grace period has ended a minute ago and the finalizer is still there, it is a blocker.
func TestPodInGracePeriodIsNotStuck(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.Apply(t, `apiVersion: v1
kind: Pod
metadata:
  name: draining
  finalizers: [example.com/hold]
  annotations: {devcluster.berth.dev/terminate: 2h}
spec:
  terminationGracePeriodSeconds: 3600
  containers: [{name: web, image: example.invalid/web}]
`)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	t.Cleanup(func() {
		_, _ = pods.Patch(context.Background(), "draining", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		_ = pods.Delete(context.Background(), "draining", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	eventually(t, "the Pod is Running", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "draining", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err := pods.Delete(t.Context(), "draining", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(t.Context(), "draining", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the Pod after its deletion: %v, %+v", err, p)
	}

	rep, code := runDoctor(t, env, "-n", env.Namespace)
	if len(rep.Findings) != 0 || code != 0 {
		t.Errorf("doctor of a namespace whose Pod is in its grace period: exit %d, findings %+v", code, rep.Findings)
	}

	id := resource.Identity{Kind: "Pod", Namespace: env.Namespace, Name: "draining"}
	rep = doctorAt(t, env, p.DeletionTimestamp.Add(time.Minute))
	got := find(rep, "finalizer", "draining")
	if len(got) != 1 || got[0].Severity != doctor.Blocker || got[0].Object != id ||
		got[0].Problem != fmt.Sprintf("1 object(s) being deleted wait on finalizer example.com/hold, the oldest for 1m: %s", id) {
		t.Errorf("a minute after the grace period ended: findings about Pod draining: %+v", rep.Findings)
	}
}
