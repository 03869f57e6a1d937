package resource

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func annotated(kind, name string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("batch/v1")
	obj.SetKind(kind)
	obj.SetNamespace("ns")
	obj.SetName(name)
	if annotations != nil {
		obj.SetAnnotations(annotations)
	}
	return obj
}

func TestParseHook(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		wantHook    bool
		want        Hook
	}{
		{name: "no annotations"},
		{name: "other annotations", annotations: map[string]string{"a": "b"}},
		{
			name:        "defaults",
			annotations: map[string]string{HookAnnotation: "pre-install"},
			wantHook:    true,
			want:        Hook{Events: []HookEvent{HookPreInstall}, DeletePolicies: []DeletePolicy{BeforeHookCreation}},
		},
		{
			name: "everything, spaced and in capitals",
			annotations: map[string]string{
				HookAnnotation:          " Pre-Install, post-upgrade ,test-success",
				HookWeightAnnotation:    " -5 ",
				HookDeleteAnnotation:    "hook-succeeded, Hook-Failed",
				HookOutputLogAnnotation: "hook-failed",
			},
			wantHook: true,
			want: Hook{
				Events:            []HookEvent{HookPreInstall, HookPostUpgrade, HookTest},
				Weight:            -5,
				DeletePolicies:    []DeletePolicy{HookSucceeded, HookFailed},
				OutputLogPolicies: []OutputLogPolicy{OutputOnFailed},
			},
		},
		{
			name:        "all events",
			annotations: map[string]string{HookAnnotation: "pre-install,post-install,pre-delete,post-delete,pre-upgrade,post-upgrade,pre-rollback,post-rollback,test"},
			wantHook:    true,
			want: Hook{
				Events: []HookEvent{
					HookPreInstall, HookPostInstall, HookPreDelete, HookPostDelete, HookPreUpgrade,
					HookPostUpgrade, HookPreRollback, HookPostRollback, HookTest,
				},
				DeletePolicies: []DeletePolicy{BeforeHookCreation},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := annotated("Job", "migrate", tt.annotations)
			h, ok, err := ParseHook(obj)
			if err != nil {
				t.Fatalf("ParseHook: %v", err)
			}
			if ok != tt.wantHook {
				t.Fatalf("ParseHook ok = %v, want %v", ok, tt.wantHook)
			}
			if !ok {
				return
			}
			wantID := Identity{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate"}
			if h.Identity != wantID || h.Object != obj {
				t.Errorf("hook identity = %v, object %p; want %v, %p", h.Identity, h.Object, wantID, obj)
			}
			if !slices.Equal(h.Events, tt.want.Events) || h.Weight != tt.want.Weight ||
				!slices.Equal(h.DeletePolicies, tt.want.DeletePolicies) ||
				!slices.Equal(h.OutputLogPolicies, tt.want.OutputLogPolicies) {
				t.Errorf("hook = %+v, want %+v", h, tt.want)
			}
		})
	}
}

func TestParseHookErrors(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"bad weight", map[string]string{HookAnnotation: "pre-install", HookWeightAnnotation: "first"}, `helm.sh/hook-weight: "first" is not an integer`},
		{"unknown event", map[string]string{HookAnnotation: "pre-install,pre-party"}, `unknown hook event "pre-party"`},
		{"empty event", map[string]string{HookAnnotation: " , "}, "no hook event"},
		{"unknown delete policy", map[string]string{HookAnnotation: "test", HookDeleteAnnotation: "never"}, `unknown delete policy "never"`},
		{"unknown log policy", map[string]string{HookAnnotation: "test", HookOutputLogAnnotation: "always"}, `unknown output log policy "always"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseHook(annotated("Job", "migrate", tt.annotations))
			if err == nil {
				t.Fatal("ParseHook succeeded, want an error")
			}
			for _, w := range []string{"Job.batch/ns/migrate", tt.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestHooksFor(t *testing.T) {
	mk := func(name string, weight int, events ...HookEvent) Hook {
		return Hook{Identity: Identity{Kind: "Job", Name: name}, Weight: weight, Events: events}
	}
	hooks := []Hook{
		mk("c", 0, HookPreInstall), mk("b", 0, HookPreInstall, HookPreUpgrade), mk("a", 5, HookPreInstall),
		mk("z", -1, HookPreInstall), mk("up", -10, HookPreUpgrade),
	}
	var got []string
	for _, h := range HooksFor(hooks, HookPreInstall) {
		got = append(got, h.Identity.Name)
	}
	if want := []string{"z", "b", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("HooksFor(pre-install) = %v, want %v", got, want)
	}
}

func TestIsKept(t *testing.T) {
	tests := []struct {
		value string
		set   bool
		want  bool
	}{
		{set: false, want: false},
		{value: "keep", set: true, want: true},
		{value: " Keep ", set: true, want: true},
		{value: "delete", set: true, want: false},
	}
	for _, tt := range tests {
		var a map[string]string
		if tt.set {
			a = map[string]string{ResourcePolicyAnnotation: tt.value}
		}
		if got := IsKept(annotated("ConfigMap", "c", a)); got != tt.want {
			t.Errorf("IsKept(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

func TestOwnership(t *testing.T) {
	obj := annotated("ConfigMap", "c", map[string]string{"keep": "me"})
	obj.SetLabels(map[string]string{"app": "x"})
	if _, _, ok := OwnedBy(obj); ok {
		t.Fatal("OwnedBy reported an owner before SetOwnership")
	}
	SetOwnership(obj, "web", "prod")
	rel, ns, ok := OwnedBy(obj)
	if !ok || rel != "web" || ns != "prod" {
		t.Errorf("OwnedBy = %q, %q, %v; want web, prod, true", rel, ns, ok)
	}
	if obj.GetLabels()["app"] != "x" || obj.GetAnnotations()["keep"] != "me" {
		t.Errorf("SetOwnership dropped existing metadata: labels %v annotations %v", obj.GetLabels(), obj.GetAnnotations())
	}
	if obj.GetLabels()[ManagedByLabel] != "Helm" {
		t.Errorf("managed-by label = %q, want Helm", obj.GetLabels()[ManagedByLabel])
	}
	labels := obj.GetLabels()
	labels[ManagedByLabel] = "kubectl"
	obj.SetLabels(labels)
	if _, _, ok := OwnedBy(obj); ok {
		t.Error("OwnedBy accepted an object not managed by Helm")
	}
}
