package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/testenv"
)

// writeChart writes a chart named name with files (paths under the chart) to a new directory.
func writeChart(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	files["Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata:
      labels: {app: %s}
      annotations: {devcluster.berth.dev/start: %s}
    spec:
      containers: [{name: app, image: example.invalid/app}]
`

func deploymentOf(name, start string) string {
	return strings.ReplaceAll(strings.Replace(deployment, "%s", name, 3), "%s", start)
}

func TestStatusResources(t *testing.T) {
	env := testenv.New(t)
	chart := writeChart(t, "shelf", map[string]string{
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: books}\ndata: {a: b}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: maps}\n",
		"templates/fast.yaml": deploymentOf("fast", "0s"),
		// Its Pod starts in an hour: the Deployment stays unavailable.
		"templates/slow.yaml": deploymentOf("slow", "1h"),
	})
	if _, err := berthIn(t, env, "install", "shelf", chart, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	// The fast Deployment becomes available; the ConfigMap maps goes away.
	ctx := t.Context()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, "fast", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		t.Fatalf("Deployment fast does not become available: %v", err)
	}
	if err := env.Client.CoreV1().ConfigMaps(env.Namespace).Delete(ctx, "maps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got, err := berthIn(t, env, "status", "shelf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"DESCRIPTION: Install complete\nRESOURCES:\n==> apps/v1/Deployment\nNAME",
		"\nfast \\s+Ready", "\nslow \\s+InProgress", "\nbooks \\s+Ready", "\nmaps \\s+Missing \\s+not found in the cluster\n",
		"==> v1/ConfigMap\n", "\n\nTEST SUITE: None\n",
		"==> v1/Pod\\(related\\)\nNAME +STATUS +MESSAGE\nfast-[a-z0-9]+-[a-z0-9]+ +Ready +Pod is ready\nslow-[a-z0-9]+-[a-z0-9]+ +InProgress +Pod is \\w+ and not ready\n",
	} {
		if !regexpMatch(t, want, got) {
			t.Errorf("berth status printed\n%s\nwithout %q", got, want)
		}
	}
	// Apart from the resources, it is what Helm prints.
	want, err := helmIn(t, env, "status", "shelf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want, "RESOURCES:\n==> v1/") {
		t.Errorf("helm status printed no resources:\n%s", want)
	}
	args := []string{"status", "shelf"}
	if g, w := withoutResources(t, args, got), withoutResources(t, args, want); g != w {
		t.Errorf("without resources, berth status printed\n%s\nhelm status printed\n%s", g, w)
	}

	got, err = berthIn(t, env, "status", "shelf", "--show-resources=false")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "RESOURCES") {
		t.Errorf("status --show-resources=false printed resources:\n%s", got)
	}

	got, err = berthIn(t, env, "status", "shelf", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rel struct {
		Info struct {
			Resources map[string][]struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"resources"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(got), &rel); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, got)
	}
	names := map[string][]string{}
	for group, objs := range rel.Info.Resources {
		for _, o := range objs {
			names[group] = append(names[group], o.Metadata.Name)
		}
	}
	if pods := names["v1/Pod(related)"]; len(pods) != 2 || !strings.HasPrefix(pods[0], "fast-") || !strings.HasPrefix(pods[1], "slow-") {
		t.Errorf("status -o json: related Pods %v, want one of fast and one of slow", pods)
	}
	delete(names, "v1/Pod(related)")
	wantNames := map[string][]string{"apps/v1/Deployment": {"fast", "slow"}, "v1/ConfigMap": {"books"}}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("status -o json info.resources (-want +got):\n%s", diff)
	}
}

func regexpMatch(t *testing.T, pattern, s string) bool {
	t.Helper()
	return regexp.MustCompile(pattern).MatchString(s)
}
