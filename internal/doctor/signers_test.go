package doctor

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/api/v1alpha1"
)

// TestRunningUnallowed: a deployed Release whose chart was verified with a signer (or keyless
// issuer) that the controller serving it does not allow is named; one of an allowed signer, or
// served by a controller without a policy, is not.
func TestRunningUnallowed(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(selector, signers, issuers string) coordinationv1.Lease {
		return coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				v1alpha1.WatchLabelSelectorAnnotation: selector, v1alpha1.RequireVerifiedAnnotation: "true",
				v1alpha1.AllowedSignersAnnotation: signers, v1alpha1.AllowedIssuersAnnotation: issuers,
			}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(now))},
		}
	}
	rel := func(name, shard, signer, issuer string) v1alpha1.Release {
		r := v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: map[string]string{v1alpha1.ShardKeyLabel: shard}}}
		r.Status.Revision = 1
		r.Status.ChartVerified = &v1alpha1.ChartProof{Provider: "cosign", Signer: signer, Issuer: issuer}
		return r
	}
	rels := []v1alpha1.Release{
		rel("allowed", "strict", "ci@example.test", "https://issuer.example.test"),
		rel("other-signer", "strict", "evil-ci@example.test", "https://issuer.example.test"),
		rel("other-issuer", "strict", "ci@example.test", "https://elsewhere.test"),
		rel("lax", "lax", "anyone", ""),
	}
	ctrls := liveControllers([]coordinationv1.Lease{
		lease("sharding.berth.dev/key=strict", `["ci@example\\.test"]`, `["https://issuer\\.example\\.test"]`),
		lease("sharding.berth.dev/key=lax", "", ""),
	}, now)
	var got []string
	for _, r := range runningUnallowed(rels, ctrls) {
		got = append(got, r.Name)
	}
	if want := []string{"other-signer", "other-issuer"}; !slices.Equal(got, want) {
		t.Errorf("running unallowed: %v, want %v", got, want)
	}
	if f := unallowedFinding(rels[1]); f.Severity != Warning || f.Object.Name != "other-signer" {
		t.Errorf("finding %+v", f)
	}
}
