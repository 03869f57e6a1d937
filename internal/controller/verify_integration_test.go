package controller_test

import (
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// readKeyring returns the public keyring of key.
func readKeyring(t *testing.T, key berthtest.SigningKey) []byte {
	t.Helper()
	data, err := os.ReadFile(key.Pubring)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReleaseVerifiesChartProvenance: a Release with spec.chart.verify waits for its keyring
// Secret (CredentialsMissing naming the Secret and key), is not released while the keyring is
// another key's (Ready=False and Stalled, VerificationFailed naming the chart and why), and is
// installed once the keyring is rotated to the signer's, which the controller watches.
func TestReleaseVerifiesChartProvenance(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	signer, other := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "other")
	chart := webChart(t)
	p := action.NewPackage()
	p.Sign, p.Key, p.Keyring = true, signer.Name, signer.Secring
	if err := p.Clearsign(chart); err != nil {
		t.Fatalf("sign %s: %v", chart, err)
	}
	repoURL := releasetest.ServeCharts(t, chart)

	rel := smallestRelease(t, env.Namespace, repoURL, "deployer")
	rel.Spec.Chart.Verify = &v1alpha1.KeyringReference{Name: "keyring"}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "waits for its keyring Secret", notReadyWith(controller.ReasonCredentialsMissing))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "Secret/"+env.Namespace+"/keyring") || !strings.Contains(msg, "pubring.gpg") {
		t.Errorf("Ready message %q does not name the missing Secret and its key", msg)
	}

	createSecret(t, env, "keyring", map[string][]byte{"pubring.gpg": readKeyring(t, other)})
	got = waitFor(t, c, env.Namespace, "web", "refuses a chart signed by a key not in the keyring", notReadyWith(controller.ReasonVerificationFailed))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{"chart web", repoURL, "Secret/" + env.Namespace + "/keyring key pubring.gpg", "not in the keyring"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	if s := condition(got, controller.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %v, want True", s)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")

	s, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), "keyring", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"pubring.gpg": readKeyring(t, signer)}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is installed once the keyring holds the signer's key", readyAt(1))
	assertConfig(t, env, "replicas", "2")

	// The proof is in the status, and in the revision's record, where helm keeps it.
	if p := got.Status.ChartVerified; p == nil || p.Provider != "pgp" || !strings.Contains(p.Signer, "signer") || p.Digest != got.Status.ChartDigest {
		t.Errorf("status.chartVerified %+v, want the pgp proof of key signer, of digest %s", p, got.Status.ChartDigest)
	}
	rec, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Get(t.Context(), got.Status.ReleaseName, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := release.ProvenanceOf(rec); p == nil || err != nil || p.Provider != "pgp" || p.Reference != "web" {
		t.Errorf("the record's proof: %+v, %v; want pgp of chart web", p, err)
	}
}
