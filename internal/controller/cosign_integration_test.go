package controller_test

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	helmcli "helm.sh/helm/v4/pkg/cli"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

var pushedDigest = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// pushChart pushes the web chart to repo of the plain HTTP registry reg and returns its
// manifest's digest.
func pushChart(t *testing.T, reg *berthtest.OCIRegistry, repo string) string {
	t.Helper()
	s := helmcli.New()
	s.RegistryConfig = t.TempDir() + "/config.json"
	var out bytes.Buffer
	if err := source.Push(t.Context(), s, webChart(t), reg.Ref(repo), source.RegistryOptions{PlainHTTP: true}, &out); err != nil {
		t.Fatalf("push the chart to %s: %v", reg.Ref(repo), err)
	}
	m := pushedDigest.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("push printed no digest:\n%s", out.String())
	}
	return m[1]
}

// cosignRelease is a Release name of the web chart of repo on reg, verified with the cosign
// public key of Secret keySecret.
func cosignRelease(t *testing.T, ns string, reg *berthtest.OCIRegistry, repo, name, keySecret string) *v1alpha1.Release {
	rel := smallestRelease(t, ns, reg.Ref(repo), "deployer")
	rel.Name, rel.Spec.ReleaseName = name, name
	rel.Spec.Chart.PlainHTTP = true
	rel.Spec.Chart.Verify = &v1alpha1.KeyringReference{Provider: "cosign",
		Cosign: &v1alpha1.CosignVerification{Key: &v1alpha1.SecretKeyReference{Name: keySecret}}}
	return rel
}

// fingerprint is the signer a proof names for a cosign key.
func fingerprint(t *testing.T, k berthtest.CosignKey) string {
	t.Helper()
	_, fp, err := provenance.ParsePublicKey(k.PublicPEM)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestReleaseVerifiesCosignSignature: a Release whose chart of an OCI registry is signed with
// the cosign key of its Secret is installed with the proof in status.chartVerified; one that
// asks for another key is refused (VerificationFailed, Untrusted) even after the first fetched
// the very chart, and one of an unsigned chart too (NoSignature); neither is released.
func TestReleaseVerifiesCosignSignature(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	key, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)
	signed := pushChart(t, reg, "signed")
	key.SignBundle(t, reg, "signed/web", signed)
	unsigned := pushChart(t, reg, "unsigned")
	createSecret(t, env, "cosign-key", map[string][]byte{"cosign.pub": key.PublicPEM})
	createSecret(t, env, "cosign-other", map[string][]byte{"cosign.pub": other.PublicPEM})

	if err := c.Create(t.Context(), cosignRelease(t, env.Namespace, reg, "signed", "web", "cosign-key")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed, its signature verified", readyAt(1))
	assertConfig(t, env, "replicas", "2")
	if p := got.Status.ChartVerified; p == nil || p.Provider != "cosign" || p.Digest != signed || p.Signer != fingerprint(t, key) {
		t.Errorf("status.chartVerified %+v, want the cosign proof of %s by %s", p, signed, fingerprint(t, key))
	}

	// The same chart, the same digest, fetched already: with another key it does not verify.
	if err := c.Create(t.Context(), cosignRelease(t, env.Namespace, reg, "signed", "wrong", "cosign-other")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "wrong", "refuses the chart for the other key", notReadyWith(controller.ReasonVerificationFailed))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{reg.Ref("signed/web"), signed, "Secret/" + env.Namespace + "/cosign-other key cosign.pub", string(provenance.ReasonUntrusted)} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	if strings.Contains(msg, "PUBLIC KEY") {
		t.Errorf("Ready message %q quotes the key", msg)
	}
	if s := condition(got, controller.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %v, want True", s)
	}
	if got.Status.ChartVerified != nil {
		t.Errorf("status.chartVerified %+v of a refused chart", got.Status.ChartVerified)
	}
	berthtest.AssertNotRecorded(t, env, "wrong")

	if err := c.Create(t.Context(), cosignRelease(t, env.Namespace, reg, "unsigned", "bare", "cosign-key")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "bare", "refuses the unsigned chart", notReadyWith(controller.ReasonVerificationFailed))
	msg = condition(got, controller.ConditionReady).Message
	for _, want := range []string{reg.Ref("unsigned/web"), unsigned, string(provenance.ReasonNoSignature)} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	berthtest.AssertNotRecorded(t, env, "bare")
}

// TestAllowedSignerRefusesOtherSigners: a controller that releases only charts signed by an
// allowed signer refuses a chart that verified against its Release's key when that key is not
// the allowed one (VerificationRequired, naming the signer), and releases nothing of it.
func TestAllowedSignerRefusesOtherSigners(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	allowed, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(), RequireVerified: true,
		AllowedSigners: []string{regexp.QuoteMeta(fingerprint(t, allowed))},
		Logger:         logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	c := startClient(t, env)
	deployer(t, env, "deployer")
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	dgst := pushChart(t, reg, "charts")
	other.SignTagged(t, reg, "charts/web", dgst)
	createSecret(t, env, "cosign-other", map[string][]byte{"cosign.pub": other.PublicPEM})

	if err := c.Create(t.Context(), cosignRelease(t, env.Namespace, reg, "charts", "web", "cosign-other")); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "refuses the chart of a signer not allowed", notReadyWith(controller.ReasonVerificationRequired))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{fingerprint(t, other), "--allowed-signer", "does not allow"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNotRecorded(t, env, "web")
}

// TestReleaseVerifiesKeylessSignature: a Release verifying keyless (identity, issuer, and the
// trusted root of a Secret) is installed with the identity, issuer and log index in
// status.chartVerified; one that asks for another identity is refused, WrongIdentity, naming the
// signer it found, and is not released.
func TestReleaseVerifiesKeylessSignature(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	sigstore := berthtest.NewSigstore(t)
	const id, iss = "https://github.com/acme/charts/.github/workflows/release.yml@refs/heads/main", "https://token.actions.githubusercontent.com"
	dgst := pushChart(t, reg, "keyless")
	index := sigstore.SignBundle(t, reg, "keyless/web", dgst, id, iss)
	root, err := os.ReadFile(sigstore.WriteTrustedRoot(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	createSecret(t, env, "sigstore", map[string][]byte{"trusted_root.json": root})
	keyless := func(name, identity string) *v1alpha1.Release {
		rel := cosignRelease(t, env.Namespace, reg, "keyless", name, "")
		rel.Spec.Chart.Verify.Cosign = &v1alpha1.CosignVerification{Identity: identity, Issuer: iss,
			TrustedRoot: &v1alpha1.SecretKeyReference{Name: "sigstore"}}
		return rel
	}

	if err := c.Create(t.Context(), keyless("web", id)); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed, its keyless signature verified", readyAt(1))
	if p := got.Status.ChartVerified; p == nil || p.Provider != "cosign" || p.Digest != dgst || p.Signer != id || p.Issuer != iss || p.LogIndex == nil || *p.LogIndex != index {
		t.Errorf("status.chartVerified %+v, want the keyless proof of %s by %s of %s at log index %d", p, dgst, id, iss, index)
	}

	if err := c.Create(t.Context(), keyless("wrong", "https://github.com/evil/charts")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "wrong", "refuses the chart of another identity", notReadyWith(controller.ReasonVerificationFailed))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{dgst, string(provenance.ReasonWrongIdentity), id, "Secret/" + env.Namespace + "/sigstore key trusted_root.json"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	berthtest.AssertNotRecorded(t, env, "wrong")
}

// TestCosignFetchNotSharedAcrossNamespaces: two tenants whose Secrets of one name hold different
// cosign keys ask for the same chart digest: the one whose key signed it is installed, and the
// other is refused (Untrusted) after the chart was fetched and verified for the first.
func TestCosignFetchNotSharedAcrossNamespaces(t *testing.T) {
	signerEnv, otherEnv := testenv.New(t), testenv.New(t)
	installCRD(t, signerEnv)
	// One controller serves both namespaces, and only this test's Releases.
	selector := "berth.test/run=" + signerEnv.Namespace
	releasetest.RunController(t, signerEnv, controller.Options{
		WatchLabelSelector: selector, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	c := startClient(t, signerEnv)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	key, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)
	dgst := pushChart(t, reg, "shared")
	key.SignBundle(t, reg, "shared/web", dgst)
	for _, tenant := range []struct {
		env *testenv.Env
		pub []byte
	}{{signerEnv, key.PublicPEM}, {otherEnv, other.PublicPEM}} {
		deployer(t, tenant.env, "deployer")
		createSecret(t, tenant.env, "cosign-key", map[string][]byte{"cosign.pub": tenant.pub})
	}
	create := func(env *testenv.Env) {
		rel := cosignRelease(t, env.Namespace, reg, "shared", "web", "cosign-key")
		rel.Labels = map[string]string{"berth.test/run": signerEnv.Namespace}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}

	create(signerEnv)
	got := waitFor(t, c, signerEnv.Namespace, "web", "is installed with its tenant's key", readyAt(1))
	if p := got.Status.ChartVerified; p == nil || p.Digest != dgst || p.Signer != fingerprint(t, key) {
		t.Errorf("status.chartVerified %+v, want the proof of %s by the signer's key", p, dgst)
	}
	create(otherEnv)
	got = waitFor(t, c, otherEnv.Namespace, "web", "refuses the chart for its own key", notReadyWith(controller.ReasonVerificationFailed))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, string(provenance.ReasonUntrusted)) || !strings.Contains(msg, "Secret/"+otherEnv.Namespace+"/cosign-key") {
		t.Errorf("Ready message %q does not name Untrusted and the tenant's Secret", msg)
	}
	berthtest.AssertNotRecorded(t, otherEnv, "web")
}
