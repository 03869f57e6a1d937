package controller_test

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/internal/testnet"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestSilentClusterIsBoundedByItsTimeout gives a Release the kubeconfig of a cluster that takes
// the connection and never answers: the Release says its cluster is unreachable, naming it, once
// its spec.timeout is up and within the grace after it (lifecycle.Grace, in which what is said
// after the deadline is written), while a Release of the controller's own cluster installs
// meanwhile.
func TestSilentClusterIsBoundedByItsTimeout(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	defaultReadsSecrets(t, env)
	addr, _ := testnet.SilentListener(t)
	// Any CA: the listener never gets as far as TLS.
	ca := httptest.NewTLSServer(nil)
	ca.Close()
	caData := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}))
	kubeconfigSecret(t, env, "silent-kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: silent
  cluster: {server: "https://%s", certificate-authority-data: %s}
users:
- name: silent
  user: {token: not-a-real-token}
contexts:
- name: silent
  context: {cluster: silent, user: silent}
current-context: silent
`, addr, caData)))
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webChart(t))
	ctl := newController(t, env)
	ctl.start()

	silent := remoteRelease(t, env.Namespace, "silent", repo.URL, "", "{replicas: 2}", "silent-kubeconfig")
	const timeout = 3 * time.Second
	silent.Spec.Timeout = &metav1.Duration{Duration: timeout}
	local := releaseOf(t, env.Namespace, "local", repo.URL, "web", "deployer", "{replicas: 2}")
	if err := c.Create(t.Context(), local); err != nil {
		t.Fatal(err)
	}
	// The controller is at work once it reconciles local: from then on, silent's time is its own.
	releasetest.WaitFor(t, c, env.Namespace, "local", "is reconciled", func(rel *v1alpha1.Release) bool {
		return len(rel.Status.Conditions) > 0
	})
	start := time.Now()
	if err := c.Create(t.Context(), silent); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "silent", "says its cluster is unreachable", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonClusterUnreachable
	})
	took := time.Since(start)
	t.Logf("silent said its cluster is unreachable %s after it was created", took.Round(time.Millisecond))
	if took < timeout || took > timeout+lifecycle.Grace {
		t.Errorf("the Release said its cluster is unreachable %s after it was created, want between its spec.timeout %s and %s later", took.Round(time.Millisecond), timeout, lifecycle.Grace)
	}
	if msg := releasetest.Condition(got, controller.ConditionReady).Message; !strings.Contains(msg, addr) || strings.Contains(msg, "not-a-real-token") {
		t.Errorf("Ready message %q, want it to name cluster %s and nothing of its credentials", msg, addr)
	}
	releasetest.WaitFor(t, c, env.Namespace, "local", "is installed", readyAt(1))
	ctl.running()
}
