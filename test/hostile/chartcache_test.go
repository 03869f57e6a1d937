package hostile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	helmcli "helm.sh/helm/v4/pkg/cli"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestChartCacheServesNoOtherTenantsChart: tenant A installs its private chart from an OCI
// registry with credentials, which puts it into the controller's chart cache. Tenant B names
// A's chart by its digest on a registry of B's that answers for that digest and holds none of
// its content, first answering only HEAD, then serving A's manifest and no blob: B's Release
// is not installed, and its condition says that its registry does not serve the content.
func TestChartCacheServesNoOtherTenantsChart(t *testing.T) {
	envA, envB := testenv.New(t), testenv.New(t)
	c := releasetest.Client(t, envA)
	releasetest.Deployer(t, envA, "deployer")
	releasetest.Deployer(t, envB, "deployer")
	p := startController(t, envA)

	berthtest.IsolateHelmFiles(t)
	private := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "tenant-a", Password: "a-s3cret"})
	chart := berthtest.PackageNewChart(t, "web", "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tenant-a-private}\ndata: {secret: of-tenant-a}\n",
	})
	var out bytes.Buffer
	if err := source.Push(t.Context(), helmcli.New(), chart, private.Ref("charts"), source.RegistryOptions{CAFile: private.CAFile, Username: "tenant-a", Password: "a-s3cret"}, &out); err != nil {
		t.Fatalf("push: %v", err)
	}
	manifest := private.Manifest(t, "charts/web", "0.1.0")
	sum := sha256.Sum256(manifest)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	caA, err := os.ReadFile(private.CAFile)
	if err != nil {
		t.Fatal(err)
	}

	chartcacheSecret(t, envA, "registry", map[string][]byte{"username": []byte("tenant-a"), "password": []byte("a-s3cret"), "ca.crt": caA})
	relA := chartcacheRelease(p, envA.Namespace, "web", `{repository: "`+private.Ref("charts")+`", name: web, version: "0.1.0", credentials: {name: registry}, tls: {name: registry}}`)
	if err := c.Create(t.Context(), relA); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, envA.Namespace, "web", "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue && rel.Status.Revision == 1
	})

	for i, served := range []struct {
		name     string
		manifest []byte
	}{{"head-only", nil}, {"manifest-only", manifest}} {
		hostile := berthtest.StartClaimingRegistry(t, digest, served.manifest)
		secret := "registry-" + served.name
		chartcacheSecret(t, envB, secret, map[string][]byte{"ca.crt": hostile.CA})
		name := "web-" + served.name
		spec := `{repository: "` + hostile.Ref("x") + `", name: web, digest: "` + digest + `", tls: {name: ` + secret + `}}`
		if i == 1 {
			// By a tag, whose HEAD the registry answers with A's digest.
			spec = `{repository: "` + hostile.Ref("x") + `", name: web, version: "0.1.0", tls: {name: ` + secret + `}}`
		}
		if err := c.Create(t.Context(), chartcacheRelease(p, envB.Namespace, name, spec)); err != nil {
			t.Fatal(err)
		}
		got := releasetest.WaitFor(t, c, envB.Namespace, name, "is not Ready, its registry not serving the chart", func(rel *v1alpha1.Release) bool {
			cond := releasetest.Condition(rel, controller.ConditionReady)
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == rel.Generation &&
				cond.Reason == controller.ReasonChartUnavailable
		})
		cond := releasetest.Condition(got, controller.ConditionReady)
		t.Logf("Release %s/%s: %s: %s", envB.Namespace, name, cond.Reason, cond.Message)
		if !strings.Contains(cond.Message, hostile.Host) || !strings.Contains(cond.Message, "does not serve its content") {
			t.Errorf("Release %s: Ready message %q does not say that %s does not serve the chart's content", name, cond.Message, hostile.Host)
		}
		if got.Status.Revision != 0 || got.Status.ChartVersion != "" {
			t.Errorf("Release %s: revision %d of chart version %q, want none", name, got.Status.Revision, got.Status.ChartVersion)
		}
		var gets int
		for _, r := range hostile.Requests() {
			if strings.HasPrefix(r, "GET ") && strings.Contains(r, "/manifests/") {
				gets++
			}
		}
		if gets == 0 {
			t.Errorf("Release %s: its registry was never asked for the content (%v)", name, hostile.Requests())
		}
	}
	if _, err := envB.Client.CoreV1().ConfigMaps(envB.Namespace).Get(t.Context(), "tenant-a-private", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("tenant A's chart was installed in tenant B's namespace: %v", err)
	}
}

// chartcacheRelease is the Release name of ns, of the test's controller p, with the chart
// source spec (YAML).
func chartcacheRelease(p *controllerProcess, ns, name, spec string) *v1alpha1.Release {
	return p.release(ns, name, `
  serviceAccountName: deployer
  timeout: 1m
  chart: `+spec)
}

// chartcacheSecret creates the Secret name of env's namespace with data.
func chartcacheSecret(t *testing.T, env *testenv.Env, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
