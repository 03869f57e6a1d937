package source

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestVerify: a chart signed as `helm package --sign` signs it installs and pulls with
// --verify against the signer's keyring; against another keyring it fails and changes nothing.
func TestVerify(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	env := testenv.New(t)
	signer, other := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "other")
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{})
	r.PublishSigned(t, signer, webCharts(t)[:2]...)
	mustBerth(t, "repo", "add", "signed", r.URL)

	before := home.Files(t)
	_, _, err := berthtest.Berth(t, env, "install", "bad", "signed/web", "--version", "1.0.0", "--verify", "--keyring", other.Pubring)
	if err == nil || !strings.Contains(err.Error(), "provenance check failed") {
		t.Errorf("install --verify against another key: %v, want a failed provenance check", err)
	}
	berthtest.AssertNotRecorded(t, env, "bad")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-bad")
	if diff := cmp.Diff(before, home.Files(t)); diff != "" {
		t.Errorf("a failed --verify changed Helm's files (-before +after):\n%s", diff)
	}

	berthtest.MustBerth(t, env, "install", "good", "signed/web", "--version", "1.0.0", "--verify", "--keyring", signer.Pubring)
	berthtest.MustBerth(t, env, "upgrade", "good", "signed/web", "--version", "1.1.0", "--verify", "--keyring", signer.Pubring)
	if got := deployedVersion(t, env, "web", "good"); got != "1.1.0" {
		t.Errorf("deployed chart version %q, want 1.1.0", got)
	}

	dest := t.TempDir()
	out := mustBerth(t, "pull", "signed/web", "--version", "1.1.0", "--verify", "--keyring", signer.Pubring, "-d", dest)
	if !strings.Contains(out, "Signed by: signer (berth test key) <signer@berth.invalid>") || !strings.Contains(out, "Chart Hash Verified: sha256:") {
		t.Errorf("pull --verify printed:\n%s", out)
	}
	if got, want := listTree(t, dest), []string{"web-1.1.0.tgz", "web-1.1.0.tgz.prov"}; !cmp.Equal(got, want) {
		t.Errorf("pull --verify wrote %v, want %v", got, want)
	}
	if _, _, err := berthtest.RunBerth(t, "pull", "signed/web", "--version", "1.0.0", "--verify", "--keyring", other.Pubring, "-d", dest); err == nil {
		t.Error("pull --verify against another key succeeded")
	}
	if got, want := listTree(t, dest), []string{"web-1.1.0.tgz", "web-1.1.0.tgz.prov"}; !cmp.Equal(got, want) {
		t.Errorf("after a failed pull --verify the destination holds %v, want %v", got, want)
	}
	// helm verifies what berth pulled.
	if _, stderr, err := berthtest.RunHelmShared(t, "verify", filepath.Join(dest, "web-1.1.0.tgz"), "--keyring", signer.Pubring); err != nil {
		t.Errorf("helm verify of the pulled chart: %v\n%s", err, stderr)
	}
}
