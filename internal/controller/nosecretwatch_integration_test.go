package controller_test

import (
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseValuesFromSecretWithoutSecretWatch: a controller that does not watch Secrets
// (--watch-secrets=false) reads a Release's values from a Secret all the same, as its account;
// a new content of the Secret is released at the Release's next reconcile (here, a change of
// one of its annotations).
func TestReleaseValuesFromSecretWithoutSecretWatch(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(), NoSecretWatch: true,
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	c := startClient(t, env)
	deployer(t, env, "deployer")
	createSecret(t, env, "web-secret", map[string][]byte{"password": []byte("s3cret")})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, settingsChart(t)), "deployer")
	rel.Spec.Values = nil
	rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "web-secret", Key: "password", TargetPath: "password"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	assertConfig(t, env, "password", "s3cret")

	patch := []byte(`{"stringData":{"password":"rotated"}}`)
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Patch(t.Context(), "web-secret", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`))
	if err := c.Patch(t.Context(), rel, touch); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is upgraded with the Secret's new value at its next reconcile", readyAt(2))
	assertConfig(t, env, "password", "rotated")
	deleteRelease(t, c, got)
}
