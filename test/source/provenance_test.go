package source

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestVerifiedReleaseKeepsItsProof: a revision installed with --verify records who signed its
// chart, which berth status, history, get metadata and list show; an upgrade with --reuse-values
// verifies again, one without --verify is recorded unverified; helm reads the records and rolls
// back to the verified revision, whose proof the rollback keeps; berth does not roll back from
// it to an unverified one unless allowed.
func TestVerifiedReleaseKeepsItsProof(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	signer := berthtest.NewSigningKey(t, "signer")
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{})
	r.PublishSigned(t, signer, webCharts(t)[:2]...)
	mustBerth(t, "repo", "add", "signed", r.URL)
	berth := func(args ...string) string {
		t.Helper()
		out, _ := berthtest.MustBerth(t, env, args...)
		return out
	}
	listed := func(flag string) bool {
		t.Helper()
		return strings.Contains(berth("list", flag, "-q"), "good\n")
	}

	berth("install", "good", "signed/web", "--version", "1.0.0", "--verify", "--keyring", signer.Pubring)
	status := berth("status", "good")
	if !regexp.MustCompile(`\nVERIFIED: pgp, signed by signer \(berth test key\) <signer@berth\.invalid> \([0-9A-F]{16}\); sha256:[0-9a-f]{64}; from signed/web\n`).MatchString(status) {
		t.Errorf("berth status of a verified install printed:\n%s", status)
	}
	var md struct {
		Verified struct{ Provider, Signer, Digest string }
	}
	if err := json.Unmarshal([]byte(berth("get", "metadata", "good", "-o", "json")), &md); err != nil || md.Verified.Provider != "pgp" {
		t.Errorf("berth get metadata -o json: verified %+v (%v), want the pgp proof", md.Verified, err)
	}
	if !listed("--verified") || listed("--unverified") {
		t.Error("a release installed with --verify is not listed by --verified alone")
	}

	// --reuse-values keeps the release's verification, unless --verify says otherwise.
	berth("upgrade", "good", "signed/web", "--version", "1.0.0", "--reuse-values", "--keyring", signer.Pubring)
	if !strings.Contains(berth("status", "good"), "\nVERIFIED: pgp") {
		t.Error("an upgrade with --reuse-values of a verified release was not verified")
	}
	berth("upgrade", "good", "signed/web", "--version", "1.1.0")
	if strings.Contains(berth("status", "good"), "VERIFIED") {
		t.Error("berth status says an upgrade without --verify is verified")
	}
	if listed("--verified") || !listed("--unverified") {
		t.Error("a release upgraded without --verify is not listed by --unverified alone")
	}

	// helm reads what berth recorded and rolls back to the verified revision: its chart and
	// labels, and with them the proof, are copied.
	berthtest.MustHelm(t, env, "rollback", "good", "1")
	if !strings.Contains(berth("status", "good"), "\nVERIFIED: pgp, signed by signer") {
		t.Error("the proof of revision 1 was lost by helm's rollback to it")
	}
	history := berth("history", "good")
	for _, want := range []string{`(?m)^1\s.*1\.0\.0\s+pgp\s+Install complete`, `(?m)^2\s.*1\.0\.0\s+pgp\s+Upgrade complete`,
		`(?m)^3\s.*1\.1\.0\s+no\s+Upgrade complete`, `(?m)^4\s.*1\.0\.0\s+pgp\s+Rollback to 1`} {
		if !regexp.MustCompile(want).MatchString(history) {
			t.Errorf("berth history printed\n%s\nwithout %s", history, want)
		}
	}
	if !listed("--verified") {
		t.Error("a release rolled back to its verified revision is not listed by --verified")
	}

	// Back from the verified revision 4 to the unverified 3: refused, and nothing recorded,
	// unless allowed.
	_, _, err := berthtest.Berth(t, env, "rollback", "good", "3")
	if err == nil || !strings.Contains(err.Error(), "revision 3's chart was not verified, and the last revision 4's was (pgp)") || !strings.Contains(err.Error(), "--allow-unverified") {
		t.Errorf("berth rollback to an unverified revision: %v, want it refused, naming the revisions and --allow-unverified", err)
	}
	if got := berth("history", "good", "-o", "json"); strings.Contains(got, `"revision":5`) {
		t.Errorf("a refused rollback recorded a revision:\n%s", got)
	}
	berth("rollback", "good", "3", "--allow-unverified")
	if listed("--verified") || deployedVersion(t, env, "web", "good") != "1.1.0" {
		t.Error("berth rollback --allow-unverified did not go back to the unverified revision 3")
	}
}
