package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/kube"
)

func TestWithRemote(t *testing.T) {
	t.Parallel()
	d := &desired{Namespace: "team-a", ServiceAccount: "deployer"}
	withRemote(d, v1alpha1.ReleaseSpec{ServiceAccountName: "deployer",
		KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "workload-kubeconfig"}}})
	want := remoteRef{Secret: "workload-kubeconfig", Key: "value", Account: "deployer"}
	if d.Remote == nil || *d.Remote != want || d.ServiceAccount != "" {
		t.Errorf("remote %+v, local account %q; want %+v, and the local account defaulted", d.Remote, d.ServiceAccount, want)
	}
	local := &desired{Namespace: "team-a", ServiceAccount: "deployer"}
	withRemote(local, v1alpha1.ReleaseSpec{ServiceAccountName: "deployer"})
	if local.Remote != nil || local.ServiceAccount != "deployer" {
		t.Errorf("without kubeConfig: remote %+v, account %q", local.Remote, local.ServiceAccount)
	}
}

func TestClusterErrorNamesTheHostOnly(t *testing.T) {
	t.Parallel()
	host := hostOf("https://admin:s3cret@workload.example.test:6443/prefix")
	if host != "workload.example.test:6443" {
		t.Errorf("host %q, want workload.example.test:6443", host)
	}
	e := &ClusterError{Host: host, Secret: "team-a/kc", Timeout: time.Minute, Reason: ReasonClusterUnreachable,
		Err: errors.New("connect: connection refused")}
	if msg := e.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "cluster workload.example.test:6443") || !strings.Contains(msg, "1m0s") {
		t.Errorf("message %q, want the host and timeout and no credentials", msg)
	}
}

// TestDiscoveryTooLargeIsNamed: a remote cluster's discovery over the controller's limits is
// ClusterDiscoveryTooLarge, naming the cluster, its Secret, what it served and the limit; the
// same error of the controller's own cluster is left as it is, with a reason of its own.
func TestDiscoveryTooLargeIsNamed(t *testing.T) {
	t.Parallel()
	large := &kube.DiscoveryTooLargeError{Host: "workload.example.test:6443", GroupVersions: 5001, MaxGroupVersions: kube.MaxDiscoveryGroupVersions}
	err := fmt.Errorf("discover the API server's resources: %w", large)
	c := &kube.Clients{Config: &rest.Config{Host: "https://workload.example.test:6443"}}
	remote := &desired{Namespace: "team-a", Remote: &remoteRef{Secret: "kc"}, Timeout: time.Minute}
	got := discoveryError(c, remote, err)
	if reason := reasonOf(got, ReasonInstallFailed); reason != ReasonClusterDiscoveryTooLarge {
		t.Errorf("reason %s, want %s", reason, ReasonClusterDiscoveryTooLarge)
	}
	for _, want := range []string{"cluster workload.example.test:6443", "Secret team-a/kc", "5001 API group versions", "more than 1000"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("message %q does not say %q", got, want)
		}
	}
	if local := discoveryError(c, &desired{Namespace: "team-a"}, err); local != err || reasonOf(local, ReasonInstallFailed) != ReasonClusterDiscoveryTooLarge {
		t.Errorf("the controller's own cluster: %v (%s), want the error as it was, %s", local, reasonOf(local, ReasonInstallFailed), ReasonClusterDiscoveryTooLarge)
	}
}

// TestKubeConfigErrorIsInvalidKubeConfig: a kubeconfig the controller will not use, refused where
// it is read (package inputs), is the Release's InvalidKubeConfig.
func TestKubeConfigErrorIsInvalidKubeConfig(t *testing.T) {
	t.Parallel()
	d := &desired{Namespace: "team-a", TargetNamespace: "team-a", Remote: &remoteRef{Secret: "kc", Key: "value"}, Timeout: time.Minute}
	_, err := remoteConfig([]byte("{{{"), d, inputs.KubeConfigReach{})
	if !errors.As(err, new(*inputs.KubeConfigError)) {
		t.Fatalf("error %v (%T), want an *inputs.KubeConfigError", err, err)
	}
	for _, e := range []error{err, fmt.Errorf("read the cluster: %w", err)} {
		if reason := reasonOf(e, ReasonInstallFailed); reason != ReasonInvalidKubeConfig {
			t.Errorf("reason of %q: %s, want %s", e, reason, ReasonInvalidKubeConfig)
		}
	}
}
