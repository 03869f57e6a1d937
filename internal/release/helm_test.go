package release

import (
	"encoding/json"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/testenv"
)

// helmConfig returns Helm's own action configuration for the test's cluster and namespace.
func helmConfig(t *testing.T, env *testenv.Env) *action.Configuration {
	t.Helper()
	settings := cli.New()
	settings.KubeConfig = env.Kubeconfig
	settings.SetNamespace(env.Namespace)
	cfg := action.NewConfiguration()
	if err := cfg.Init(settings.RESTClientGetter(), env.Namespace, "secret"); err != nil {
		t.Fatalf("init Helm: %v", err)
	}
	return cfg
}

func helmV1(t *testing.T, r helmrelease.Releaser) *releasev1.Release {
	t.Helper()
	rel, err := toV1(r)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestHelmReadsStore checks that Helm's status, list and history read what the store wrote.
func TestHelmReadsStore(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	s := NewSecretStore(env.Client.CoreV1(), env.Namespace)
	r1, r2 := rev(env.Namespace, "app", 1, StatusSuperseded), rev(env.Namespace, "app", 2, StatusDeployed)
	for _, r := range []*Release{r1, r2} {
		if err := s.Create(ctx, r); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	// Helm's status looks up the objects of the manifest.
	env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: app}}`)
	cfg := helmConfig(t, env)

	status, err := action.NewStatus(cfg).Run("app")
	if err != nil {
		t.Fatalf("helm status: %v", err)
	}
	got := helmV1(t, status)
	got.Info.Resources = nil
	if encoded(t, got) != encoded(t, r2) {
		t.Errorf("helm status read\n%s\nwant\n%s", encoded(t, got), encoded(t, r2))
	}

	list := action.NewList(cfg)
	list.SetStateMask()
	listed, err := list.Run()
	if err != nil {
		t.Fatalf("helm list: %v", err)
	}
	if len(listed) != 1 || encoded(t, helmV1(t, listed[0])) != encoded(t, r2) {
		t.Errorf("helm list read %d releases, want revision 2 of app", len(listed))
	}

	history, err := action.NewHistory(cfg).Run("app")
	if err != nil {
		t.Fatalf("helm history: %v", err)
	}
	byVersion := map[int]string{}
	for _, h := range history {
		r := helmV1(t, h)
		byVersion[r.Version] = encoded(t, r)
	}
	if len(byVersion) != 2 || byVersion[1] != encoded(t, r1) || byVersion[2] != encoded(t, r2) {
		t.Errorf("helm history read %d revisions that differ from the recorded ones", len(byVersion))
	}
}

// TestStoreReadsHelm checks that the store reads what Helm's install and upgrade wrote, as Helm does.
func TestStoreReadsHelm(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	cfg := helmConfig(t, env)
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "tiny", Version: "0.1.0", AppVersion: "1.0"},
		Templates: []*common.File{
			{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  n: {{ .Values.n | quote }}\n")},
			{Name: "templates/NOTES.txt", Data: []byte("tiny {{ .Values.n }}")},
		},
		Values: map[string]any{"n": 1},
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.WaitStrategy = "tiny", env.Namespace, kube.HookOnlyStrategy
	if _, err := install.RunWithContext(ctx, ch, nil); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace, upgrade.WaitStrategy = env.Namespace, kube.HookOnlyStrategy
	if _, err := upgrade.RunWithContext(ctx, "tiny", ch, map[string]any{"n": 2}); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}

	helmHistory, err := action.NewHistory(cfg).Run("tiny")
	if err != nil {
		t.Fatalf("helm history: %v", err)
	}
	want := map[int]*releasev1.Release{}
	for _, h := range helmHistory {
		r := helmV1(t, h)
		want[r.Version] = r
	}

	s := NewSecretStore(env.Client.CoreV1(), env.Namespace)
	history, err := s.History(ctx, "tiny")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(history) != 2 {
		t.Fatalf("History has %d revisions, want 2", len(history))
	}
	for _, r := range history {
		if encoded(t, r) != encoded(t, want[r.Version]) {
			t.Errorf("revision %d read by the store differs from Helm's:\n%s\n%s", r.Version, encoded(t, r), encoded(t, want[r.Version]))
		}
	}
	dep, err := s.Deployed(ctx, "tiny")
	if err != nil || dep.Version != 2 || dep.Info.Notes != "tiny 2" {
		t.Errorf("Deployed = %v, %v; want revision 2 with notes %q", dep, err, "tiny 2")
	}
	if history[0].Info.Status != StatusSuperseded {
		t.Errorf("revision 1 status %q, want superseded", history[0].Info.Status)
	}
	values, _ := json.Marshal(dep.Config)
	if string(values) != `{"n":2}` {
		t.Errorf("revision 2 values %s, want {\"n\":2}", values)
	}
}
