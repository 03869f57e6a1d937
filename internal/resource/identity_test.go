package resource

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestIdentityString(t *testing.T) {
	tests := []struct {
		id   Identity
		want string
	}{
		{Identity{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, "ConfigMap/ns/a"},
		{Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, "Deployment.apps/ns/web"},
		{Identity{Kind: "Namespace", Name: "team"}, "Namespace/team"},
		{Identity{Group: "stable.example.com", Kind: "Shirt", Namespace: "ns", Name: "s"}, "Shirt.stable.example.com/ns/s"},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.id, got, tt.want)
		}
		back, err := ParseIdentity(tt.want)
		if err != nil || back != tt.id {
			t.Errorf("ParseIdentity(%q) = %#v, %v; want %#v", tt.want, back, err, tt.id)
		}
	}
}

func TestParseIdentityRejects(t *testing.T) {
	for _, s := range []string{"", "ConfigMap", "/ns/a", "ConfigMap//a", "ConfigMap/ns/", "a/b/c/d"} {
		if _, err := ParseIdentity(s); err == nil {
			t.Errorf("ParseIdentity(%q): no error", s)
		}
	}
}

func TestIdentityIgnoresVersion(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName("x")
		return u
	}
	if IdentityOf(obj("apps/v1beta1", "Deployment")) != IdentityOf(obj("apps/v1", "Deployment")) {
		t.Error("versions of one group are different identities")
	}
	if IdentityOf(obj("stable.example.com/v1", "Shirt")) == IdentityOf(obj("beta.example.com/v1", "Shirt")) {
		t.Error("the same kind in two groups is one identity")
	}
}

func TestCompare(t *testing.T) {
	ids := []Identity{
		{Group: "stable.example.com", Kind: "Shirt", Namespace: "ns", Name: "s"},
		{Kind: "ConfigMap", Namespace: "ns", Name: "b"},
		{Group: "beta.example.com", Kind: "Shirt", Namespace: "ns", Name: "s"},
		{Kind: "ConfigMap", Namespace: "ns", Name: "a"},
	}
	slices.SortFunc(ids, Compare)
	want := []string{"ConfigMap/ns/a", "ConfigMap/ns/b", "Shirt.beta.example.com/ns/s", "Shirt.stable.example.com/ns/s"}
	for i, id := range ids {
		if id.String() != want[i] {
			t.Errorf("sorted[%d] = %s, want %s", i, id, want[i])
		}
	}
}
