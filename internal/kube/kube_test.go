package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/internal/yamlbound"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example.com"}}
- {name: b, cluster: {server: "https://b.example.com"}}
users: [{name: u, user: {token: t}}]
contexts:
- {name: ctx-a, context: {cluster: a, user: u, namespace: team-a}}
- {name: ctx-b, context: {cluster: b, user: u}}
current-context: ctx-a
`

func writeKubeconfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	path := writeKubeconfig(t, twoContexts)
	tests := []struct {
		name          string
		flags         Flags
		env           string // KUBECONFIG
		wantHost      string
		wantNamespace string
	}{
		{"current context and its namespace", Flags{Kubeconfig: path}, "", "https://a.example.com", "team-a"},
		{"other context without namespace", Flags{Kubeconfig: path, Context: "ctx-b"}, "", "https://b.example.com", "default"},
		{"namespace flag wins", Flags{Kubeconfig: path, Namespace: "mine"}, "", "https://a.example.com", "mine"},
		{"KUBECONFIG", Flags{Context: "ctx-b"}, path, "https://b.example.com", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			c, err := tt.flags.Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Config.Host != tt.wantHost || c.Namespace != tt.wantNamespace {
				t.Errorf("Load = host %q namespace %q, want %q %q", c.Config.Host, c.Namespace, tt.wantHost, tt.wantNamespace)
			}
			if c.Config.QPS != DefaultQPS || c.Config.Burst != DefaultBurst {
				t.Errorf("QPS/Burst = %v/%d, want %v/%d", c.Config.QPS, c.Config.Burst, DefaultQPS, DefaultBurst)
			}
			if c.Client == nil || c.Dynamic == nil || c.Mapper == nil {
				t.Error("Load left a client unset")
			}
		})
	}
}

func TestLoadThrottle(t *testing.T) {
	path := writeKubeconfig(t, twoContexts)
	tests := []struct {
		name      string
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{"defaults", 0, 0, DefaultQPS, DefaultBurst},
		{"as given", 20, 40, 20, 40},
		{"burst at least qps", 2000, 0, 2000, 2000},
		{"negative burst turns throttling off", 0, -1, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Flags{Kubeconfig: path, QPS: tt.qps, Burst: tt.burst}.Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Config.QPS != tt.wantQPS || c.Config.Burst != tt.wantBurst {
				t.Errorf("QPS/Burst = %v/%d, want %v/%d", c.Config.QPS, c.Config.Burst, tt.wantQPS, tt.wantBurst)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	path := writeKubeconfig(t, twoContexts)
	missing := filepath.Join(t.TempDir(), "missing")
	// 300 MiB once its aliases are expanded, over yamlbound.Local.
	bomb := writeKubeconfig(t, "users:\n- name: a\n  user: {token: &t "+strings.Repeat("s3cret", 1<<20/6)+"}\n"+strings.Repeat("- {name: b, user: {token: *t}}\n", 300))
	tests := []struct {
		name  string
		flags Flags
		want  []string
	}{
		{"unknown context", Flags{Kubeconfig: path, Context: "nope"}, []string{path, `"nope"`}},
		{"missing file", Flags{Kubeconfig: missing}, []string{missing}},
		{"bad file", Flags{Kubeconfig: writeKubeconfig(t, "{not yaml")}, []string{"config"}},
		{"aliases", Flags{Kubeconfig: bomb}, []string{bomb, "aliases", fmt.Sprint(yamlbound.Local.Bytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.flags.Load()
			if err == nil {
				t.Fatal("Load: no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestReachableAndMapper(t *testing.T) {
	env := testenv.New(t)
	c, err := Flags{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace}.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.Reachable(t.Context()); err != nil {
		t.Fatalf("Reachable: %v", err)
	}
	if _, err := c.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}); err != nil {
		t.Fatalf("map ConfigMap: %v", err)
	}

	group := env.Namespace + ".example.com"
	env.Apply(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.`+group+`}
spec:
  group: `+group+`
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})

	// The CRD is served once it is established; until then discovery does not list it. Reset
	// drops what the mapper discovered before, so each attempt sees the server's current kinds.
	gk := schema.GroupKind{Group: group, Kind: "Widget"}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c.Mapper.Reset()
		_, err := c.Mapper.RESTMapping(gk)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("map %s after creating its CRD: %v", gk, err)
	}
}
