package resource

import (
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string // identities
	}{
		{"empty", "", nil},
		{"only separators and comments", "---\n# Source: c/templates/empty.yaml\n---\n\n---\n", nil},
		{
			name: "helm release manifest",
			manifest: `---
# Source: app/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
  namespace: ns
---
# Source: app/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
---
# Source: app/templates/crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: shirts.stable.example.com
`,
			want: []string{"ServiceAccount/ns/app", "Deployment.apps/app", "CustomResourceDefinition.apiextensions.k8s.io/shirts.stable.example.com"},
		},
		{
			name:     "no leading separator, trailing spaces after separator",
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---   \napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
			want:     []string{"ConfigMap/a", "ConfigMap/b"},
		},
		{
			name:     "document that is only null",
			manifest: "---\n~\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
			want:     []string{"ConfigMap/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseManifest(tt.manifest)
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, IdentityOf(o).String())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("ParseManifest = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseManifestErrors(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string // substrings of the error
	}{
		{
			name:     "missing name",
			manifest: "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n",
			want:     []string{"app/templates/cm.yaml", "ConfigMap has no metadata.name"},
		},
		{
			name:     "missing kind",
			manifest: "---\n# Source: app/templates/x.yaml\napiVersion: v1\nmetadata:\n  name: x\n",
			want:     []string{"app/templates/x.yaml", "no kind"},
		},
		{
			name:     "missing apiVersion without source",
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: ConfigMap\nmetadata:\n  name: b\n",
			want:     []string{"document 2", "no apiVersion"},
		},
		{
			name:     "invalid YAML",
			manifest: "---\n# Source: app/templates/bad.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n",
			want:     []string{"app/templates/bad.yaml", "is not valid YAML"},
		},
		{
			name:     "not a mapping",
			manifest: "---\n# Source: app/templates/list.yaml\n- a\n- b\n",
			want:     []string{"app/templates/list.yaml", "is not valid YAML"},
		},
		{
			name:     "kind not a string",
			manifest: "---\n# Source: app/templates/k.yaml\napiVersion: v1\nkind: 3\nmetadata:\n  name: a\n",
			want:     []string{"app/templates/k.yaml", "has a kind that is not a string"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifest(tt.manifest)
			if err == nil {
				t.Fatal("ParseManifest succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSplitManifestSource(t *testing.T) {
	docs := SplitManifest("---\n# Source: a/templates/one.yaml\n# another comment\nkind: A\n---\nkind: B\n# Source: not/a/header.yaml\n")
	if len(docs) != 2 {
		t.Fatalf("SplitManifest returned %d documents, want 2", len(docs))
	}
	if docs[0].Source != "a/templates/one.yaml" || docs[0].Index != 1 {
		t.Errorf("first document = %+v", docs[0])
	}
	if docs[1].Source != "" || docs[1].String() != "document 2" {
		t.Errorf("second document = %+v, want no source", docs[1])
	}
}
