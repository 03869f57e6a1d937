package controller

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
	"github.com/berthdev/berth/internal/release"
)

// releasedUnsaid says whether the last revision, deployed, is what the Release's last attempt
// released, though the status does not say so: the controller stopped between recording the
// revision and writing the status. Releasing again would make another revision of the same
// chart and values.
func releasedUnsaid(rel *v1alpha1.Release, last *recorded, chartVersion string, d *desired) bool {
	st := rel.Status
	return last != nil && last.Exists && last.Deployed && last.Version != st.Revision &&
		meta.FindStatusCondition(st.Conditions, ConditionReconciling) != nil &&
		st.LastAttemptedGeneration == rel.Generation && st.LastAttemptedChartVersion == chartVersion &&
		st.LastAttemptedValuesDigest == d.ValuesDigest && finishesAsIs(last.Record, chartVersion, d.Values)
}

// finishesAsIs says whether finishing the interrupted install or upgrade recorded in pending
// yields what the spec asks for now: the same chart version and the same values. When it does
// not (the Release changed while the operation was interrupted), the operation is finished and
// the release then upgraded.
func finishesAsIs(pending *release.Release, chartVersion string, values map[string]any) bool {
	if pending.Chart == nil || pending.Chart.Metadata == nil || pending.Chart.Metadata.Version != chartVersion {
		return false
	}
	return sameValues(pending.Config, values)
}

// sameValues compares values as JSON, as they are recorded: numbers read back from a record are
// float64 whatever they were written as.
func sameValues(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false
	}
	return string(ja) == string(jb)
}
