package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestDecide walks what a reconcile decides (lifecycle.Next, with the Release's status as the
// controller's account) over the states of a release and of its Release.
func TestDecide(t *testing.T) {
	two := map[string]any{"replicas": float64(2)}
	record := func(version int, chartVersion string, status release.Status, values map[string]any) lifecycle.State {
		return lifecycle.StateOf(&release.Release{Version: version, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: chartVersion}},
			Config: values, Info: &release.Info{Status: status}})
	}
	deployed := record(2, "1.0.0", release.StatusDeployed, two)
	ready := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}
	failed := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse}}
	said := v1alpha1.ReleaseStatus{ObservedGeneration: 3, Conditions: ready, Revision: 2, ChartVersion: "1.0.0", ValuesDigest: "v"}
	// attempt is a status whose last attempt was at chart version, with values "v".
	attempt := func(version string, conditions []metav1.Condition) func(*v1alpha1.ReleaseStatus) {
		return func(s *v1alpha1.ReleaseStatus) {
			s.Conditions, s.LastAttemptedGeneration, s.LastAttemptedChartVersion, s.LastAttemptedValuesDigest = conditions, 3, version, "v"
		}
	}
	// interrupted is a status whose attempt at chart version 1.0.0 stopped during it: the
	// controller stopped while Reconciling.
	interrupted := func(s *v1alpha1.ReleaseStatus) {
		s.Revision, s.LastAttemptedGeneration, s.LastAttemptedChartVersion, s.LastAttemptedValuesDigest = 1, 3, "1.0.0", "v"
		rel := &v1alpha1.Release{Status: *s}
		markReconciling(rel, "upgrade")
		*s = rel.Status
	}
	tests := []struct {
		name    string
		status  func(*v1alpha1.ReleaseStatus)
		state   lifecycle.State
		version string
		values  map[string]any
		digest  string
		want    []lifecycle.Action
	}{
		{name: "nothing changed", state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActNone}},
		{name: "no record", version: "1.0.0", want: []lifecycle.Action{lifecycle.ActInstall}},
		{name: "uninstalled with history kept", state: record(2, "1.0.0", release.StatusUninstalled, two), version: "1.0.0",
			want: []lifecycle.Action{lifecycle.ActInstall}},
		{name: "new chart version", state: deployed, version: "1.1.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "new values", state: deployed, version: "1.0.0", values: map[string]any{"replicas": float64(3)}, digest: "w",
			want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "upgraded by someone else", state: record(3, "1.0.0", release.StatusDeployed, two), version: "1.0.0",
			want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "a spec change that leaves chart and values", status: func(s *v1alpha1.ReleaseStatus) { s.ObservedGeneration = 2 },
			state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActReport}},
		{name: "blockers said", status: func(s *v1alpha1.ReleaseStatus) { s.Blockers = []v1alpha1.Blocker{{Kind: "x"}} },
			state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActReport}},
		{name: "failed attempt at the same spec and chart", status: attempt("1.1.0", failed),
			state: record(3, "1.1.0", release.StatusFailed, two), version: "1.1.0", want: []lifecycle.Action{lifecycle.ActWait}},
		{name: "failed attempt whose retry is due", status: func(s *v1alpha1.ReleaseStatus) {
			attempt("1.1.0", failed)(s)
			s.Failures = 1
			s.History = []v1alpha1.OperationRecord{{StartedAt: metav1.NewTime(time.Now().Add(-time.Hour))}}
		}, state: record(3, "1.1.0", release.StatusFailed, two), version: "1.1.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "failed attempt whose retry waits", status: func(s *v1alpha1.ReleaseStatus) {
			attempt("1.1.0", failed)(s)
			s.Failures = 1
			s.History = []v1alpha1.OperationRecord{{StartedAt: metav1.Now()}}
		}, state: record(3, "1.1.0", release.StatusFailed, two), version: "1.1.0", want: []lifecycle.Action{lifecycle.ActWait}},
		{name: "failed attempt at a first install", status: func(s *v1alpha1.ReleaseStatus) {
			attempt("1.0.0", failed)(s)
			s.Revision = 0
		}, state: record(1, "1.0.0", release.StatusFailed, two), version: "1.0.0", want: []lifecycle.Action{lifecycle.ActWait}},
		{name: "interrupted attempt at the same spec and chart", status: attempt("1.1.0",
			[]metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionUnknown}, {Type: ConditionReconciling, Status: metav1.ConditionTrue}}),
			state: record(3, "1.1.0", release.StatusFailed, two), version: "1.1.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "failed attempt, then a new chart version", status: attempt("1.1.0", failed),
			state: record(3, "1.1.0", release.StatusFailed, two), version: "1.2.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},

		// What a controller that stopped during its attempt left.
		{name: "released, status not written", status: interrupted, state: deployed, version: "1.0.0",
			want: []lifecycle.Action{lifecycle.ActReportReleased}},
		{name: "released, the status says so", status: func(s *v1alpha1.ReleaseStatus) { interrupted(s); s.Revision = 2 }, state: deployed,
			version: "1.0.0", want: []lifecycle.Action{lifecycle.ActReport}},
		{name: "not attempted: adopting a release", status: func(s *v1alpha1.ReleaseStatus) { interrupted(s); s.LastAttemptedGeneration = 0 },
			state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "the attempt ended", status: func(s *v1alpha1.ReleaseStatus) {
			interrupted(s)
			rel := &v1alpha1.Release{Status: *s}
			markFailed(rel, ReasonFailed, errors.New("x"), true)
			*s = rel.Status
		}, state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActWait}},
		{name: "the spec changed since", status: func(s *v1alpha1.ReleaseStatus) { interrupted(s); s.LastAttemptedGeneration = 2 },
			state: deployed, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "install left pending: finished", status: interrupted, state: record(1, "1.0.0", release.StatusPendingInstall, two),
			version: "1.0.0", want: []lifecycle.Action{lifecycle.ActFinish}},
		{name: "upgrade left pending: finished", status: interrupted, state: record(2, "1.0.0", release.StatusPendingUpgrade, two),
			version: "1.0.0", want: []lifecycle.Action{lifecycle.ActFinish}},
		{name: "install of other values left pending: finished, then upgraded", status: interrupted,
			state: record(1, "1.0.0", release.StatusPendingInstall, map[string]any{"replicas": float64(1)}), version: "1.0.0",
			want: []lifecycle.Action{lifecycle.ActFinish, lifecycle.ActUpgrade}},
		{name: "other values recorded", status: interrupted, state: record(2, "1.0.0", release.StatusDeployed, map[string]any{"replicas": float64(1)}),
			version: "1.0.0", want: []lifecycle.Action{lifecycle.ActUpgrade}},
		{name: "no record after an interrupted attempt", status: interrupted, version: "1.0.0", want: []lifecycle.Action{lifecycle.ActInstall}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: *said.DeepCopy()}
			if tt.status != nil {
				tt.status(&rel.Status)
			}
			d := &desired{Values: two, ValuesDigest: "v"}
			d.Install.Retries, d.Upgrade.Retries = 1, 1
			if tt.values != nil {
				d.Values, d.ValuesDigest = tt.values, tt.digest
			}
			got, _, err := decide(rel, tt.state, d, tt.version, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("decide = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOperationLabel checks what a reconcile that installs or upgrades says it does: an
// install when there is no release to upgrade, or its install was left interrupted.
func TestOperationLabel(t *testing.T) {
	two := map[string]any{"replicas": float64(2)}
	state := func(status release.Status) lifecycle.State {
		return lifecycle.StateOf(&release.Release{Version: 1, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: "1.0.0"}},
			Config: two, Info: &release.Info{Status: status}})
	}
	tests := []struct {
		name    string
		state   lifecycle.State
		install bool
	}{
		{"no record", lifecycle.State{}, true},
		{"uninstalled", state(release.StatusUninstalled), true},
		{"install left pending", state(release.StatusPendingInstall), true},
		{"deployed", state(release.StatusDeployed), false},
		{"failed", state(release.StatusFailed), false},
		{"upgrade left pending", state(release.StatusPendingUpgrade), false},
		{"rollback left pending", state(release.StatusPendingRollback), false},
		{"uninstalling", state(release.StatusUninstalling), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			for _, version := range []string{"1.0.0", "1.1.0"} {
				acts, _, err := decide(rel, tt.state, &desired{Values: two, ValuesDigest: "v"}, version, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if got := tt.state.Installs(acts); got != tt.install {
					t.Errorf("chart %s: %v installs = %v, want %v", version, acts, got, tt.install)
				}
			}
		})
	}
}
