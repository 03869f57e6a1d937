package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCosignVerifiesRegistryCharts: a chart of an OCI registry signed with a cosign key, in
// the bundle format (a referrer) or in the tag schema (a .sig tag), is located and pulled with
// the proof of who signed it; one signed by another key, or not signed, fails as unverified
// naming the reason, and leaves nothing in the cache or the destination.
func TestCosignVerifiesRegistryCharts(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	plain := source.RegistryOptions{PlainHTTP: true}
	key, other := berthtest.NewCosignKey(t), berthtest.NewCosignKey(t)

	bundled := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("bundled"), plain)
	key.SignBundle(t, reg, "bundled/web", bundled)
	tagged := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("tagged"), plain)
	key.SignTagged(t, reg, "tagged/web", tagged)
	push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("unsigned"), plain)
	wrong := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("wrong"), plain)
	other.SignBundle(t, reg, "wrong/web", wrong)

	resolver := func(t *testing.T, s *helmcli.EnvSettings) *source.Resolver {
		opts := source.Options{Cosign: &provenance.CosignOptions{PublicKey: key.PublicPEM}}
		opts.Version, opts.PlainHTTP = "0.1.0", true
		return &source.Resolver{Settings: s, Options: opts}
	}
	for _, tc := range []struct {
		repo, digest string
	}{{"bundled", bundled}, {"tagged", tagged}} {
		t.Run("signed/"+tc.repo, func(t *testing.T) {
			ref := reg.Ref(tc.repo + "/web")
			path, proof, err := resolver(t, settingsIn(t)).LocateVerified(t.Context(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			if proof == nil || proof.Provider != release.ProviderCosign || proof.Digest != tc.digest || proof.Reference != ref || proof.Signer == "" {
				t.Fatalf("proof %+v, want cosign of %s signed by the key", proof, tc.digest)
			}
			dest := t.TempDir()
			_, pulled, err := resolver(t, settingsIn(t)).PullVerified(t.Context(), ref, source.PullOptions{DestDir: dest})
			if err != nil {
				t.Fatal(err)
			}
			if pulled == nil || pulled.Signer != proof.Signer {
				t.Fatalf("pull's proof %+v, want the signer %s", pulled, proof.Signer)
			}
			if _, err := os.Stat(filepath.Join(dest, "web-0.1.0.tgz")); err != nil {
				t.Fatalf("pull left no web-0.1.0.tgz: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		repo   string
		reason provenance.Reason
	}{{"unsigned", provenance.ReasonNoSignature}, {"wrong", provenance.ReasonUntrusted}} {
		t.Run("refused/"+tc.repo, func(t *testing.T) {
			s := settingsIn(t)
			_, _, err := resolver(t, s).LocateVerified(t.Context(), reg.Ref(tc.repo+"/web"))
			var serr *source.Error
			var perr *provenance.Error
			if !errors.As(err, &serr) || serr.Kind != source.KindUnverified || !errors.As(err, &perr) || perr.Reason != tc.reason {
				t.Fatalf("got %v, want an unverified chart for %s", err, tc.reason)
			}
			if left := berthtest.FileDigests(t, s.ContentCache); len(left) != 0 {
				t.Errorf("the refused chart left %d files in the cache", len(left))
			}
			dest := t.TempDir()
			if _, _, err := resolver(t, settingsIn(t)).PullVerified(t.Context(), reg.Ref(tc.repo+"/web"), source.PullOptions{DestDir: dest}); !errors.As(err, &perr) {
				t.Fatalf("pull: got %v, want the signature's error", err)
			}
			if left := berthtest.FileDigests(t, dest); len(left) != 0 {
				t.Errorf("the refused pull left %d files in the destination", len(left))
			}
		})
	}
	t.Run("not in a registry", func(t *testing.T) {
		_, _, err := resolver(t, settingsIn(t)).LocateVerified(t.Context(), webChart(t, "0.1.0"))
		var serr *source.Error
		if !errors.Is(err, source.ErrNotSigned) || !errors.As(err, &serr) || serr.Kind != source.KindUnverified {
			t.Fatalf("got %v, want ErrNotSigned", err)
		}
	})
}
