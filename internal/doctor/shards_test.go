package doctor

import (
	"slices"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/api/v1alpha1"
)

// TestUnserved: a Release is served by a live controller whose namespace and selector take it;
// a Lease that expired, was let go, or has a selector that does not parse serves none.
func TestUnserved(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(selector, namespace, holder string, renewed time.Duration) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				v1alpha1.WatchLabelSelectorAnnotation: selector, v1alpha1.WatchNamespaceAnnotation: namespace,
			}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewed))),
			},
		}
	}
	rel := func(ns, name, shard string) metav1.PartialObjectMetadata {
		r := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if shard != "" {
			r.Labels = map[string]string{v1alpha1.ShardKeyLabel: shard}
		}
		return r
	}
	rels := []metav1.PartialObjectMetadata{rel("a", "one", "one"), rel("a", "two", "two"), rel("a", "plain", ""), rel("b", "one", "one")}
	for _, tc := range []struct {
		name   string
		leases []coordinationv1.Lease
		live   int
		want   []string
	}{
		{"every Release", []coordinationv1.Lease{lease("", "", "pod", time.Second)}, 1, nil},
		{"shards and main", []coordinationv1.Lease{
			lease("sharding.berth.dev/key=one", "", "p1", time.Second),
			lease("!sharding.berth.dev/key", "", "p2", 14*time.Second),
		}, 2, []string{"a/two"}},
		{"one namespace", []coordinationv1.Lease{lease("sharding.berth.dev/key in (one,two)", "a", "p", 0)}, 1, []string{"a/plain", "b/one"}},
		{"expired", []coordinationv1.Lease{lease("", "", "p", 16*time.Second)}, 0, []string{"a/one", "a/two", "a/plain", "b/one"}},
		{"let go", []coordinationv1.Lease{lease("", "", "", time.Second)}, 0, []string{"a/one", "a/two", "a/plain", "b/one"}},
		{"bad selector", []coordinationv1.Lease{lease("a b", "", "p", time.Second)}, 0, []string{"a/one", "a/two", "a/plain", "b/one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctrls := liveControllers(tc.leases, now)
			if len(ctrls) != tc.live {
				t.Fatalf("%d live controllers, want %d", len(ctrls), tc.live)
			}
			var got []string
			for _, r := range unserved(rels, ctrls) {
				got = append(got, r.Namespace+"/"+r.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("unserved %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunningUnverified: a deployed Release whose chart was not verified is named when a
// controller that requires verification serves it, and only then.
func TestRunningUnverified(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(selector string, require bool) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				v1alpha1.WatchLabelSelectorAnnotation: selector, v1alpha1.RequireVerifiedAnnotation: strconv.FormatBool(require),
			}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(now))},
		}
	}
	rel := func(name, shard string, revision int, verified bool) v1alpha1.Release {
		r := v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: map[string]string{v1alpha1.ShardKeyLabel: shard}}}
		r.Status.Revision = revision
		if verified {
			r.Status.ChartVerified = &v1alpha1.ChartProof{Provider: "pgp", Signer: "signer"}
		}
		return r
	}
	rels := []v1alpha1.Release{rel("unverified", "strict", 2, false), rel("verified", "strict", 1, true),
		rel("never-released", "strict", 0, false), rel("lax", "lax", 3, false)}
	ctrls := liveControllers([]coordinationv1.Lease{lease("sharding.berth.dev/key=strict", true), lease("sharding.berth.dev/key=lax", false)}, now)
	var got []string
	for _, r := range runningUnverified(rels, ctrls) {
		got = append(got, r.Name)
	}
	if !slices.Equal(got, []string{"unverified"}) {
		t.Errorf("running unverified: %v, want [unverified]", got)
	}
	if f := unverifiedFinding(rels[0]); f.Severity != Warning || f.Object.Name != "unverified" {
		t.Errorf("finding %+v", f)
	}
}
