package diff

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// configPreview is an upgrade of a ConfigMap and a Deployment from live to applied (either may
// be empty: created, or unchanged when both are the same).
func configPreview(t *testing.T, live, applied []string) *lifecycle.Preview {
	var desired []*unstructured.Unstructured
	liveObjs, appliedObjs := byID(), byID()
	var steps []plan.Step
	for i, a := range applied {
		o := obj(t, a)
		desired = append(desired, o)
		appliedObjs[resource.IdentityOf(o)] = o
		steps = append(steps, plan.Step{ID: "apply/" + o.GetKind(), Action: plan.Apply, Objects: []resource.Identity{resource.IdentityOf(o)}})
		if i < len(live) && live[i] != "" {
			l := obj(t, live[i])
			liveObjs[resource.IdentityOf(l)] = l
		}
	}
	return &lifecycle.Preview{Operation: release.OpUpgrade, Release: &release.Release{Name: "demo", Namespace: "demo", Version: 2},
		Plan: &plan.Plan{Steps: steps}, Objects: records(desired, liveObjs, appliedObjs)}
}

const (
	cmOld  = `{apiVersion: v1, kind: ConfigMap, metadata: {name: db, namespace: demo}, data: {url: "postgres://app:Hunter2-old@db:5432/app", mode: fast, short: abc}}`
	cmNew  = `{apiVersion: v1, kind: ConfigMap, metadata: {name: db, namespace: demo}, data: {url: "postgres://app:Hunter2-new@db:5432/app", mode: fast, short: abc}}`
	depOld = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: demo}, spec: {template: {spec: {containers: [{name: web, env: [{name: TOKEN, value: s3cr3t-token}], ports: [{containerPort: 54321}]}]}}}}`
)

func TestMaskEncryptedValues(t *testing.T) {
	secrets := []string{"Hunter2-old", "Hunter2-new", "s3cr3t-token", "54321"}
	tests := []struct {
		name        string
		live, apply []string
		show        bool
		want        []string // in the text
		absent      []string
		change      Change
	}{
		{name: "a changed secret is masked on both sides and said to change", live: []string{cmOld}, apply: []string{cmNew},
			want:   []string{"-  url: postgres://app:(masked, before)@db:5432/app", "+  url: postgres://app:(masked, changed)@db:5432/app", "short: abc"},
			absent: []string{"Hunter2"}, change: plan.Configured},
		{name: "an unchanged secret is masked and unchanged", live: []string{cmOld}, apply: []string{cmOld},
			absent: []string{"Hunter2"}, change: plan.Unchanged},
		{name: "a created object is masked: strings and numbers", live: []string{""}, apply: []string{depOld},
			want:   []string{"+          value: (masked)", "+        - containerPort: (masked)"},
			absent: []string{"s3cr3t", "54321"}, change: plan.Created},
		{name: "--show-secrets shows them", live: []string{cmOld}, apply: []string{cmNew}, show: true,
			want: []string{"-  url: postgres://app:Hunter2-old@db:5432/app", "+  url: postgres://app:Hunter2-new@db:5432/app"}, change: plan.Configured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Secrets, o.ShowSecrets = secrets, tt.show
			r, err := Compute(configPreview(t, tt.live, tt.apply), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Objects[0].Change; got != tt.change {
				t.Errorf("change = %s, want %s", got, tt.change)
			}
			js, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			text := r.Text(false)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("the diff does not say %q:\n%s", w, text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(text, a) || strings.Contains(string(js), a) {
					t.Errorf("the diff shows %q:\n%s\n%s", a, text, js)
				}
			}
		})
	}
}
