package hostile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// redactPassword is the tenant's database password, in a Secret read by valuesFrom: a value that
// is also YAML syntax (an alias), so that a template that writes it unquoted is invalid YAML.
const redactPassword = "*Hunter2-s3cr3t-db-password"

// TestT2SecretValueNeverQuoted: a password from a Secret (valuesFrom) that reaches an error's
// text, by a rendered manifest that does not parse, or by an admission policy whose denial quotes
// the object's field, is in no condition, status history, Event or line of the controller's log;
// the messages still name the template and the policy. Another namespace's Release becomes Ready
// meanwhile.
func TestT2SecretValueNeverQuoted(t *testing.T) {
	env, c, p, q := attacked(t)
	ns := env.Namespace
	repoURL := releasetest.ServeCharts(t,
		berthtest.PackageNewChart(t, "unquoted", "0.1.0", map[string]string{
			"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unquoted}\ndata: {key: {{ .Values.password }}}\n",
		}),
		berthtest.PackageNewChart(t, "quoted", "0.1.0", map[string]string{
			"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: denied}\ndata: {key: {{ .Values.password | quote }}}\n",
		}))
	denyKeys(t, env)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		StringData: map[string]string{"values.yaml": "password: '" + redactPassword + "'\n"},
	}
	if err := c.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"unquoted", "quoted"} {
		rel := p.release(ns, name, `
  serviceAccountName: deployer
  timeout: 1m
  chart: {repository: "`+repoURL+`", name: `+name+`, version: "0.1.0"}
  valuesFrom: [{kind: Secret, name: db}]`)
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	q.bystander(t)

	// What names the failure: in the Ready condition for the template; in the status' blockers
	// and the Event for the policy (the condition has the first line of the failure).
	for name, want := range map[string][]string{
		"unquoted": {"templates/config.yaml"},
		"quoted":   {"ValidatingAdmissionPolicy 'redact-probe-" + ns, "the key [redacted] is not allowed"},
	} {
		rel := releasetest.WaitFor(t, c, ns, name, "failed its install", celFailed)
		ready := releasetest.Condition(rel, "Ready")
		if len(rel.Status.History) == 0 || rel.Status.History[0].Outcome != "Failed" {
			t.Errorf("Release %s: status history %+v, want the failed install first", name, rel.Status.History)
		}
		status, err := json.Marshal(rel.Status)
		if err != nil {
			t.Fatal(err)
		}
		notes := releaseWarnings(t, env, name)
		for _, w := range want {
			if name == "unquoted" && !strings.Contains(ready.Message, w) {
				t.Errorf("Release %s: Ready (%s) does not say %q: %s", name, ready.Reason, w, ready.Message)
			}
			if !strings.Contains(string(status), w) || !strings.Contains(notes, w) {
				t.Errorf("Release %s: its status or its Events do not say %q:\n%s\n%s", name, w, status, notes)
			}
		}
		for what, text := range map[string]string{
			"the Release's status": string(status), "its Events": notes, "the controller's log": p.Output(),
		} {
			if strings.Contains(text, "Hunter2") {
				t.Errorf("Release %s: %s quote the password:\n%s", name, what, text)
			}
		}
	}
}

// denyKeys makes the API server refuse, in the test's namespace, a ConfigMap whose data key is
// not "allowed", by a ValidatingAdmissionPolicy whose message quotes the key's value, as a
// platform's policy would; it waits until the API server applies it.
func denyKeys(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx, adm := t.Context(), env.Client.AdmissionregistrationV1()
	forbidden := metav1.StatusReasonForbidden
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "redact-probe-" + env.Namespace},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression:        "!has(object.data) || !('key' in object.data) || object.data['key'] == 'allowed'",
				MessageExpression: "'the key ' + object.data['key'] + ' is not allowed'",
				Reason:            &forbidden,
			}},
		},
	}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": env.Namespace},
			}},
		},
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = adm.ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"key": "probe"}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("the API server does not apply ValidatingAdmissionPolicy %s: %v", policy.Name, err)
	}
}

// releaseWarnings waits until the Release name of the test's namespace has a Warning Event
// (events.k8s.io), and returns every Event's reason and note about it.
func releaseWarnings(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	var text strings.Builder
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "regarding.kind=Release,regarding.name=" + name,
		})
		if err != nil {
			return false, err
		}
		text.Reset()
		warned := false
		for _, e := range list.Items {
			text.WriteString(e.Type + " " + e.Reason + " " + e.Note + "\n")
			warned = warned || e.Type == corev1.EventTypeWarning
		}
		return warned, nil
	})
	if err != nil {
		t.Fatalf("Release %s has no Warning Event: %v\n%s", name, err, text.String())
	}
	return text.String()
}
