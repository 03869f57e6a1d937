package controller_test

import (
	"os"
	"os/exec"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// A controller killed at the very end of an uninstall leaves its lease after the last record is
// gone. The next controller still removes it before it lets the Release go.
func TestDeletedReleaseRemovesTheLeaseAKilledUninstallLeft(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	stop := runController(t, env)
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\n",
	})), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	stop()

	// What the killed controller left: no record, and its lease, held by a process of this host
	// that no longer runs.
	if err := env.Client.CoreV1().Secrets(env.Namespace).DeleteCollection(t.Context(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "owner=helm,name=web"}); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	leases := release.NewLeases(env.Client.CoordinationV1(), env.Namespace)
	if _, err := leases.Acquire(t.Context(), "web", release.Holder{Who: "berth-controller", Host: host, PID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}

	runController(t, env)
	deleteRelease(t, c, got)
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), release.LeaseKey("web"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the lease of release web is left after its Release is gone (get: %v)", err)
	}
}
