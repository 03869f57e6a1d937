package controller

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/api/v1alpha1"
)

// presenceEvery is how often the leader checks that its Lease still says what it serves (the
// Lease may have been deleted and made again by leader election, without them).
const presenceEvery = 30 * time.Second

// inClusterNamespaceFile holds the namespace of a Pod's ServiceAccount.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// presence makes the controller findable from the cluster: its leader election Lease, which
// leader election renews while a leader runs, carries the ControllerLabel and says which
// Releases the controller serves (its selector and namespace). It runs on the leader alone, and
// writes only when the Lease lacks them.
type presence struct {
	leases          coordinationv1client.LeasesGetter
	namespace, name string
	labels          map[string]string
	annotations     map[string]string
	log             logr.Logger
}

func newPresence(leases coordinationv1client.LeasesGetter, namespace string, shard Shard, watchNamespace string, requireVerified bool, signers SignerPolicy, log logr.Logger) *presence {
	allowedSigners, allowedIssuers := signers.strings()
	return &presence{
		leases: leases, namespace: namespace, name: shard.LeaseName(),
		labels: map[string]string{v1alpha1.ControllerLabel: shard.ID()},
		annotations: map[string]string{
			v1alpha1.WatchLabelSelectorAnnotation: shard.Selector(),
			v1alpha1.WatchNamespaceAnnotation:     watchNamespace,
			v1alpha1.RequireVerifiedAnnotation:    strconv.FormatBool(requireVerified),
			v1alpha1.AllowedSignersAnnotation:     jsonList(allowedSigners),
			v1alpha1.AllowedIssuersAnnotation:     jsonList(allowedIssuers),
		},
		log: log,
	}
}

// NeedLeaderElection says the presence runs on the elected replica, which renews the Lease.
func (p *presence) NeedLeaderElection() bool { return true }

// Start marks the Lease now and checks it again every presenceEvery until ctx ends. A failure
// is logged, never fatal: the controller serves its Releases all the same.
func (p *presence) Start(ctx context.Context) error {
	t := time.NewTicker(presenceEvery)
	defer t.Stop()
	for {
		if err := p.mark(ctx); err != nil && ctx.Err() == nil {
			p.log.Error(err, "write which Releases the controller serves on its leader election Lease", "lease", p.namespace+"/"+p.name)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// mark writes the labels and annotations on the Lease when it lacks them. Leader election
// updates the Lease as it read it, so they stay.
func (p *presence) mark(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		leases := p.leases.Leases(p.namespace)
		lease, err := leases.Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if holds(lease.Labels, p.labels) && holds(lease.Annotations, p.annotations) {
			return nil
		}
		if lease.Labels == nil {
			lease.Labels = map[string]string{}
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		maps.Copy(lease.Labels, p.labels)
		maps.Copy(lease.Annotations, p.annotations)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}

// holds says whether m has every key of want with its value.
func holds(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// inClusterNamespace is the namespace of the Pod the controller runs in, "" out of a cluster.
func inClusterNamespace() string {
	b, err := os.ReadFile(inClusterNamespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// jsonList is l as a JSON array of strings, "" when it is empty.
func jsonList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(l) // A list of strings always marshals.
	return string(b)
}
