package rollouts

import (
	"encoding/json"
	"errors"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
)

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func wc(name, secret, values string) v1alpha1.WaveCluster {
	c := v1alpha1.WaveCluster{Name: name, KubeConfig: v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: secret}}}
	if values != "" {
		c.Values = raw(values)
	}
	return c
}

func testRollout() *v1alpha1.Rollout {
	return &v1alpha1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "fleet"},
		Spec: v1alpha1.RolloutSpec{
			Template: v1alpha1.ReleaseTemplate{Spec: v1alpha1.ReleaseSpec{Values: raw(`{"a": 1, "m": {"x": 1, "y": 1}}`)}},
			Waves: []v1alpha1.Wave{
				{Name: "one", Clusters: []v1alpha1.WaveCluster{wc("", "eu-1", "")}},
				{Name: "two", Values: raw(`{"m": {"y": 2}}`), Clusters: []v1alpha1.WaveCluster{wc("us", "us-1", `{"m": {"x": 3}}`), wc("", "eu-1", "")}},
			},
		},
	}
}

func TestResolve(t *testing.T) {
	p, err := resolve(t.Context(), testRollout(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.waves) != 2 || len(p.waves[0]) != 1 || len(p.waves[1]) != 1 {
		t.Fatalf("waves %+v, want eu-1 in the first only and us in the second", p.waves)
	}
	eu, us := p.waves[0][0], p.waves[1][0]
	if eu.name != "eu-1" || eu.release != "web-eu-1" || us.name != "us" || us.release != "web-us" {
		t.Errorf("clusters %s/%s and %s/%s", eu.name, eu.release, us.name, us.release)
	}
	if us.spec.KubeConfig.SecretRef.Name != "us-1" || us.spec.ReleaseName != "web" {
		t.Errorf("spec of us: kubeConfig %+v, releaseName %q", us.spec.KubeConfig, us.spec.ReleaseName)
	}
	var values map[string]any
	if err := json.Unmarshal(us.spec.Values.Raw, &values); err != nil {
		t.Fatal(err)
	}
	if m := values["m"].(map[string]any); values["a"] != 1.0 || m["x"] != 3.0 || m["y"] != 2.0 {
		t.Errorf("values of us %v, want the template's under the wave's under the cluster's", values)
	}

	// The target is the template with every values; the waves' rules are not in it.
	ro := testRollout()
	ro.Spec.Waves[1].MaxParallel, ro.Spec.Waves[1].Approval = 1, true
	if q, _ := resolve(t.Context(), ro, nil); q.target != p.target {
		t.Error("the waves' rules changed the target")
	}
	ro.Spec.Waves[1].Clusters[0].Values = raw(`{"m": {"x": 4}}`)
	if q, _ := resolve(t.Context(), ro, nil); q.target == p.target {
		t.Error("a cluster's values did not change the target")
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		change      func(*v1alpha1.Rollout)
	}{
		{"a kubeConfig in the template", "template.spec.kubeConfig", func(ro *v1alpha1.Rollout) {
			ro.Spec.Template.Spec.KubeConfig = &v1alpha1.KubeConfigReference{}
		}},
		{"a rollbackTo in the template", "template.spec.rollbackTo", func(ro *v1alpha1.Rollout) {
			ro.Spec.Template.Spec.RollbackTo = &v1alpha1.RollbackRequest{Revision: 1}
		}},
		{"a cluster twice in a wave", "waves[1].clusters[1]", func(ro *v1alpha1.Rollout) {
			ro.Spec.Waves[1].Clusters[1] = wc("us", "us-2", "")
		}},
		{"values that are not a map", "waves[1].values", func(ro *v1alpha1.Rollout) {
			ro.Spec.Waves[1].Values = raw(`[1]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := testRollout()
			tc.change(ro)
			_, err := resolve(t.Context(), ro, nil)
			var spec *SpecError
			if !errors.As(err, &spec) || spec.Field != tc.field {
				t.Fatalf("resolve = %v, want a SpecError of %s", err, tc.field)
			}
		})
	}
}
