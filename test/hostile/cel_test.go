package hostile_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// celTenReplaces is 'a' replaced ten times by ten of itself: 10 GB if it were evaluated.
const celTenReplaces = "'a'.replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa')" +
	".replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa')" +
	".replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa') == ''"

// celPassword is the password of the Secret the probe reads through a health check.
const celPassword = "hostile-cel-probe-s3cret"

// celRelease is the Release name of chart web 0.3.0 of repoURL, labelled for p's controller,
// acting as the deployer account.
func celRelease(p *controllerProcess, ns, name, repoURL, timeout string) *v1alpha1.Release {
	return p.release(ns, name, `
  serviceAccountName: deployer
  timeout: `+timeout+`
  chart: {repository: "`+repoURL+`", name: web, version: "0.3.0"}`)
}

// celFailed is true of a Release whose Ready condition is False for its generation, after an
// attempt.
func celFailed(rel *v1alpha1.Release) bool {
	r := releasetest.Condition(rel, controller.ConditionReady)
	return r != nil && r.Status == metav1.ConditionFalse && r.Reason != controller.ReasonProgressing &&
		rel.Status.ObservedGeneration == rel.Generation && rel.Status.LastAttemptedGeneration == rel.Generation
}

// TestCELHealthChecksWithinBudget: a health check that would build 10 GB is refused, naming it,
// before it is ever evaluated; one that fails on a Secret's value fails without quoting it
// anywhere a tenant or an operator reads; a chart whose readiness annotation is over its budget
// is refused by name. The controller stays up, within its memory limit.
func TestCELHealthChecksWithinBudget(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	secretChart := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: '{{ .Release.Name }}-creds'}\nstringData: {password: " + celPassword + "}\n",
	}))
	annotatedChart := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}-config'\n" +
			"  annotations: {helm.sh/readiness-success: '[\"{..a..b} == 1\"]'}\ndata: {a: b}\n",
	}))
	p := startController(t, env)
	ns := env.Namespace

	costly := celRelease(p, ns, "costly", secretChart, "1m")
	costly.Spec.HealthChecks = []v1alpha1.HealthCheckExpressions{{APIVersion: "v1", Kind: "Secret", Current: celTenReplaces}}
	probe := celRelease(p, ns, "probe", secretChart, "15s")
	probe.Spec.HealthChecks = []v1alpha1.HealthCheckExpressions{{APIVersion: "v1", Kind: "Secret", Current: "self.data[self.data.password] == 'x'"}}
	annotated := celRelease(p, ns, "annotated", annotatedChart, "1m")
	for _, rel := range []*v1alpha1.Release{costly, probe, annotated} {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}

	got := releasetest.WaitFor(t, c, ns, "costly", "is refused", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	ready := releasetest.Condition(got, controller.ConditionReady)
	if ready == nil {
		t.Fatalf("Release costly has no Ready condition, want it False with reason %s", controller.ReasonInvalidHealthCheck)
	}
	if ready.Status != metav1.ConditionFalse || ready.Reason != controller.ReasonInvalidHealthCheck {
		t.Errorf("Release costly: Ready %s, reason %s (%s), want False, %s", ready.Status, ready.Reason, ready.Message, controller.ReasonInvalidHealthCheck)
	}
	for _, want := range []string{"spec.healthChecks[0].current", celTenReplaces, "estimated cost"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Release costly: Ready message does not say %q: %s", want, ready.Message)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "Secret", "costly-creds")

	got = releasetest.WaitFor(t, c, ns, "annotated", "is refused", celFailed)
	ready = releasetest.Condition(got, controller.ConditionReady)
	for _, want := range []string{"helm.sh/readiness-success", "{..a..b} == 1", "recursive descent"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Release annotated: Ready message does not say %q: %s", want, ready.Message)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "annotated-config")

	got = releasetest.WaitFor(t, c, ns, "probe", "fails its wait", celFailed)
	status, err := json.Marshal(got.Status)
	if err != nil {
		t.Fatal(err)
	}
	// The Event says the expression and what failed: the key is missing, not which.
	events := eventsOnceNamed(t, env, ns, "probe", "self.data[self.data.password] == 'x' (no such key)")
	encoded := base64.StdEncoding.EncodeToString([]byte(celPassword))
	for what, text := range map[string]string{
		"the Release's status": string(status), "an Event": events, "the controller's log": p.Output(),
	} {
		for _, secret := range []string{celPassword, encoded, strings.TrimRight(encoded, "=")} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the Secret's password (%s)", what, secret)
			}
		}
	}
	p.checkUp()
}
