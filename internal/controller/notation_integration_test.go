package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// notationRelease is a Release name of the web chart of repo on reg, verified with the notation
// trust policy and trust store of Secret secret.
func notationRelease(t *testing.T, ns string, reg *berthtest.OCIRegistry, repo, name, secret string) *v1alpha1.Release {
	rel := smallestRelease(t, ns, reg.Ref(repo), "deployer")
	rel.Name, rel.Spec.ReleaseName = name, name
	rel.Spec.Chart.PlainHTTP = true
	rel.Spec.Chart.Verify = &v1alpha1.KeyringReference{Provider: "notation", Notation: &v1alpha1.NotationVerification{Name: secret}}
	return rel
}

// TestReleaseVerifiesNotationSignature: a Release whose chart is signed with notation by a CA of
// the trust store in its Secret is installed with the proof in status.chartVerified; one whose
// Secret trusts another CA is refused (VerificationFailed, Untrusted) after the first fetched the
// very chart; a Secret with a policy and no trust store is refused, named; neither is released.
func TestReleaseVerifiesNotationSignature(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	ca, other := berthtest.NewNotationCA(t, "release"), berthtest.NewNotationCA(t, "other")
	signed := pushChart(t, reg, "signed")
	reg.NotationSign(t, "signed/web", signed, ca)
	policy := berthtest.NotationTrustPolicy("*", "release", berthtest.NotationTrustedIdentity)
	createSecret(t, env, "notation", map[string][]byte{"trustpolicy.oci.json": policy, "ca.release.root.crt": ca.RootPEM()})
	createSecret(t, env, "notation-other", map[string][]byte{"trustpolicy.oci.json": policy, "ca.release.root.crt": other.RootPEM()})
	createSecret(t, env, "notation-nostore", map[string][]byte{"trustpolicy.oci.json": policy})

	if err := c.Create(t.Context(), notationRelease(t, env.Namespace, reg, "signed", "web", "notation")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed, its signature verified", readyAt(1))
	if p := got.Status.ChartVerified; p == nil || p.Provider != "notation" || p.Digest != signed || !strings.Contains(p.Signer, "CN=berth test signer") {
		t.Errorf("status.chartVerified %+v, want the notation proof of %s", p, signed)
	}

	if err := c.Create(t.Context(), notationRelease(t, env.Namespace, reg, "signed", "wrong", "notation-other")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "wrong", "refuses the chart for another CA", notReadyWith(controller.ReasonVerificationFailed))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{reg.Ref("signed/web"), signed, "notation verification", "Secret/" + env.Namespace + "/notation-other", string(provenance.ReasonUntrusted)} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	if s := condition(got, controller.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %v, want True", s)
	}
	berthtest.AssertNotRecorded(t, env, "wrong")

	if err := c.Create(t.Context(), notationRelease(t, env.Namespace, reg, "signed", "nostore", "notation-nostore")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "nostore", "refuses a Secret with no trust store", notReadyWith(controller.ReasonInvalidCredentials))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "no trust store") || !strings.Contains(msg, "notation-nostore") {
		t.Errorf("Ready message %q does not name the Secret and its missing trust store", msg)
	}
	berthtest.AssertNotRecorded(t, env, "nostore")
}
