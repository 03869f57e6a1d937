package lifecycle

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/release"
)

func TestReleases(t *testing.T) {
	// Values read back from a record: numbers are float64.
	recorded := func(version, values string) *release.Release {
		var config map[string]any
		if values != "" {
			if err := json.Unmarshal([]byte(values), &config); err != nil {
				t.Fatal(err)
			}
		}
		return &release.Release{Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: version}}, Config: config}
	}
	tests := []struct {
		name    string
		pending *release.Release
		version string
		values  map[string]any
		want    bool
	}{
		{"same chart and values", recorded("1.0.0", `{"replicas": 2, "image": {"tag": "a"}}`), "1.0.0",
			map[string]any{"replicas": float64(2), "image": map[string]any{"tag": "a"}}, true},
		{"no values either way", recorded("1.0.0", ""), "1.0.0", map[string]any{}, true},
		{"other values", recorded("1.0.0", `{"replicas": 2}`), "1.0.0", map[string]any{"replicas": float64(3)}, false},
		{"values added", recorded("1.0.0", ""), "1.0.0", map[string]any{"replicas": float64(3)}, false},
		{"other chart version", recorded("1.0.0", `{"replicas": 2}`), "1.1.0", map[string]any{"replicas": float64(2)}, false},
		{"no chart recorded", &release.Release{}, "1.0.0", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Releases(tt.pending, tt.version, tt.values); got != tt.want {
				t.Errorf("Releases = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNext walks the decider over every named status: what each is classified as from what is
// read, and what is done in it for what the CLI's commands ask and for what the controller asks
// (an upgrade with install, with its Release's account).
func TestNext(t *testing.T) {
	chart := func(version string, status release.Status, values map[string]any) *release.Release {
		return &release.Release{Version: 2, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: version}}, Config: values,
			Info: &release.Info{Status: status}}
	}
	values := map[string]any{"replicas": float64(2)}
	deployed := chart("1.0.0", release.StatusDeployed, values)
	uninstalled := chart("1.0.0", release.StatusUninstalled, values)
	failed := chart("1.0.0", release.StatusFailed, values)
	superseded := chart("1.0.0", release.StatusSuperseded, values)
	unknown := chart("1.0.0", release.StatusUnknown, values)
	interrupted := func(op release.Operation, status release.Status, stale bool) *Interrupted {
		return &Interrupted{Release: "r", Operation: op, Last: chart("1.0.0", status, values), Stale: stale}
	}
	// An operation stopped while it recorded revision 3: its record is incomplete, last is
	// the newest revision still.
	incomplete := func(op release.Operation, last *release.Release) *Interrupted {
		return &Interrupted{Release: "r", Operation: op, Last: last, Incomplete: 3}
	}
	upgrade := Wanted{Operation: release.OpUpgrade, ChartVersion: "1.0.0", Values: values}
	upgradeInstall := upgrade
	upgradeInstall.Install = true
	other := Wanted{Operation: release.OpUpgrade, Install: true, ChartVersion: "1.1.0", Values: values}
	install := Wanted{Operation: release.OpInstall, ChartVersion: "1.0.0", Values: values}
	uninstall := Wanted{Operation: release.OpUninstall}
	recover := Wanted{}
	// What the controller asks: an upgrade with install, with its Release's account.
	controller := func(version string, a Account) Wanted {
		w := Wanted{Operation: release.OpUpgrade, Install: true, ChartVersion: version, Values: values}
		w.Account = &a
		return w
	}
	said := Account{Revision: 2, AsAsked: true, Current: true}
	behind := Account{Revision: 2, AsAsked: true}
	stopped := Account{Revision: 1, Attempted: true, Underway: true}
	failedAttempt := Account{Revision: 1, Attempted: true, Failed: true}
	retry := Account{Revision: 1, Attempted: true, Failed: true, Retry: true}
	// What the controller asks of a deleted Release: an uninstall, with its account.
	finalizer := Wanted{Operation: release.OpUninstall, Account: &Account{Revision: 2}}

	tests := []struct {
		name    string
		state   State
		status  Status
		wanted  Wanted
		want    []Action
		wantErr bool
	}{
		{"nothing recorded, install", State{}, StatusMissing, install, []Action{ActInstall}, false},
		{"nothing recorded, upgrade --install", State{}, StatusMissing, upgradeInstall, []Action{ActInstall}, false},
		{"nothing recorded, upgrade", State{}, StatusMissing, upgrade, nil, true},
		{"nothing recorded, recover", State{}, StatusMissing, recover, nil, false},
		{"nothing recorded, controller", State{}, StatusMissing, controller("1.0.0", Account{}), []Action{ActInstall}, false},
		{"nothing recorded, controller after a failed attempt", State{}, StatusMissing, controller("1.0.0", failedAttempt), []Action{ActWait}, false},
		{"uninstalled with history, upgrade --install", State{Last: uninstalled}, StatusUninstalled, upgradeInstall, []Action{ActInstall}, false},
		{"uninstalled with history, upgrade", State{Last: uninstalled}, StatusUninstalled, upgrade, nil, true},
		{"uninstalled with history, controller", State{Last: uninstalled}, StatusUninstalled, controller("1.0.0", behind), []Action{ActInstall}, false},
		{"deployed, upgrade", State{Last: deployed}, StatusDeployed, upgrade, []Action{ActUpgrade}, false},
		{"deployed, rollback", State{Last: deployed}, StatusDeployed, Wanted{Operation: release.OpRollback}, []Action{ActRollback}, false},
		{"deployed, uninstall", State{Last: deployed}, StatusDeployed, uninstall, []Action{ActUninstall}, false},
		{"deployed, recover", State{Last: deployed}, StatusDeployed, recover, nil, false},
		{"deployed, controller, said", State{Last: deployed}, StatusDeployed, controller("1.0.0", said), []Action{ActNone}, false},
		{"deployed, controller, account behind", State{Last: deployed}, StatusDeployed, controller("1.0.0", behind), []Action{ActReport}, false},
		{"deployed, controller, new chart version", State{Last: deployed}, StatusDeployed, controller("1.1.0", Account{Revision: 2}), []Action{ActUpgrade}, false},
		{"deployed by someone else, controller", State{Last: deployed}, StatusDeployed, controller("1.0.0", Account{Revision: 1, AsAsked: true, Current: true}), []Action{ActUpgrade}, false},
		{"deployed by an attempt stopped before it said so, controller", State{Last: deployed}, StatusDeployed, controller("1.0.0", stopped),
			[]Action{ActReportReleased}, false},
		{"deployed, controller, stopped attempt at another chart", State{Last: deployed}, StatusDeployed, controller("1.1.0", stopped),
			[]Action{ActUpgrade}, false},
		{"deployed, controller, failed attempt at another chart", State{Last: deployed}, StatusDeployed, controller("1.1.0", failedAttempt),
			[]Action{ActWait}, false},
		{"deployed, controller, failed attempt that may be retried", State{Last: deployed}, StatusDeployed, controller("1.1.0", retry),
			[]Action{ActUpgrade}, false},
		{"failed, upgrade", State{Last: failed}, StatusFailed, upgrade, []Action{ActUpgrade}, false},
		{"failed, rollback", State{Last: failed}, StatusFailed, Wanted{Operation: release.OpRollback}, []Action{ActRollback}, false},
		{"failed, controller, failed attempt", State{Last: failed}, StatusFailed, controller("1.0.0", failedAttempt), []Action{ActWait}, false},
		{"failed, controller, retry", State{Last: failed}, StatusFailed, controller("1.0.0", retry), []Action{ActUpgrade}, false},
		{"failed, controller, attempt stopped", State{Last: failed}, StatusFailed, controller("1.0.0", stopped), []Action{ActUpgrade}, false},
		{"superseded, upgrade", State{Last: superseded}, StatusSuperseded, upgrade, []Action{ActUpgrade}, false},
		{"superseded, controller", State{Last: superseded}, StatusSuperseded, controller("1.0.0", behind), []Action{ActUpgrade}, false},
		{"unknown, upgrade", State{Last: unknown}, StatusUnknown, upgrade, []Action{ActUpgrade}, false},
		{"interrupted install of the same, install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			StatusInterruptedInstall, install, []Action{ActFinish}, false},
		{"interrupted install of the same, upgrade --install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			StatusInterruptedInstall, upgradeInstall, []Action{ActFinish}, false},
		{"interrupted install of another chart, upgrade --install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			StatusInterruptedInstall, other, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted install, recover", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			StatusInterruptedInstall, recover, []Action{ActFinish}, false},
		{"interrupted install, uninstall", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			StatusInterruptedInstall, uninstall, []Action{ActRemoveHooks, ActUninstall}, false},
		{"interrupted install of the same, controller", StateOf(chart("1.0.0", release.StatusPendingInstall, values)),
			StatusInterruptedInstall, controller("1.0.0", stopped), []Action{ActFinish}, false},
		{"interrupted install of another chart, controller", StateOf(chart("1.0.0", release.StatusPendingInstall, values)),
			StatusInterruptedInstall, controller("1.1.0", stopped), []Action{ActFinish, ActUpgrade}, false},
		{"interrupted upgrade of the same, upgrade", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, upgrade, []Action{ActFinish}, false},
		{"interrupted upgrade, another upgrade", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, other, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted upgrade, uninstall", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, uninstall, []Action{ActRemoveHooks, ActUninstall}, false},
		{"interrupted upgrade, test", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, Wanted{Operation: release.OpTest}, []Action{ActFinish, ActTest}, false},
		{"interrupted upgrade, recover", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, recover, []Action{ActFinish}, false},
		{"interrupted upgrade, recover --rollback", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, Wanted{Rollback: true}, []Action{ActUndo}, false},
		{"interrupted upgrade of the same, controller", StateOf(chart("1.0.0", release.StatusPendingUpgrade, values)),
			StatusInterruptedUpgrade, controller("1.0.0", stopped), []Action{ActFinish}, false},
		{"interrupted rollback, upgrade of the same", State{Interrupted: interrupted(release.OpRollback, release.StatusPendingRollback, false)},
			StatusInterruptedRollback, upgrade, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted rollback, recover --rollback", State{Interrupted: interrupted(release.OpRollback, release.StatusPendingRollback, false)},
			StatusInterruptedRollback, Wanted{Rollback: true}, []Action{ActUndo}, false},
		{"interrupted rollback, controller", StateOf(chart("1.0.0", release.StatusPendingRollback, values)),
			StatusInterruptedRollback, controller("1.0.0", behind), []Action{ActFinish, ActUpgrade}, false},
		{"interrupted uninstall before deleting, uninstall", State{Interrupted: interrupted(release.OpUninstall, release.StatusDeployed, false)},
			StatusInterruptedUninstall, uninstall, []Action{ActFinish}, false},
		{"interrupted uninstall before deleting, recover --rollback", State{Interrupted: interrupted(release.OpUninstall, release.StatusDeployed, false)},
			StatusInterruptedUninstall, Wanted{Rollback: true}, []Action{ActUndo}, false},
		{"interrupted uninstall before deleting, upgrade", State{Interrupted: interrupted(release.OpUninstall, release.StatusDeployed, false)},
			StatusInterruptedUninstall, upgrade, []Action{ActFinish}, true},
		{"uninstalling, uninstall", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			StatusUninstalling, uninstall, []Action{ActFinish}, false},
		{"uninstalling, install", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			StatusUninstalling, install, []Action{ActFinish, ActInstall}, false},
		{"uninstalling, recover", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			StatusUninstalling, recover, []Action{ActFinish}, false},
		{"uninstalling, read without its journal, controller", StateOf(chart("1.0.0", release.StatusUninstalling, values)),
			StatusUninstalling, controller("1.0.0", behind), []Action{ActFinish, ActUpgrade}, false},
		{"journal left, upgrade of the same", State{Last: deployed, Interrupted: interrupted(release.OpUpgrade, release.StatusDeployed, true)},
			StatusJournalLeft, upgrade, []Action{ActFinish, ActUpgrade}, false},
		{"journal left, recover --rollback", State{Interrupted: interrupted(release.OpUpgrade, release.StatusDeployed, true)},
			StatusJournalLeft, Wanted{Rollback: true}, []Action{ActFinish}, false},
		{"upgrade stopped while recording, upgrade of the same", State{Last: deployed, Interrupted: incomplete(release.OpUpgrade, deployed)},
			StatusInterruptedUpgrade, upgrade, []Action{ActFinish, ActUpgrade}, false},
		{"upgrade stopped while recording, recover", State{Last: deployed, Interrupted: incomplete(release.OpUpgrade, deployed)},
			StatusInterruptedUpgrade, recover, []Action{ActFinish}, false},
		{"upgrade stopped while recording, recover --rollback", State{Last: deployed, Interrupted: incomplete(release.OpUpgrade, deployed)},
			StatusInterruptedUpgrade, Wanted{Rollback: true}, []Action{ActUndo}, false},
		{"upgrade stopped while recording, controller", State{Last: deployed, Interrupted: incomplete(release.OpUpgrade, deployed)},
			StatusInterruptedUpgrade, controller("1.0.0", stopped), []Action{ActFinish, ActUpgrade}, false},
		{"install stopped while recording, install", State{Interrupted: incomplete(release.OpInstall, nil)},
			StatusInterruptedInstall, install, []Action{ActFinish, ActInstall}, false},
		{"install stopped while recording, uninstall", State{Interrupted: incomplete(release.OpInstall, nil)},
			StatusInterruptedInstall, uninstall, []Action{ActFinish, ActUninstall}, false},
		{"nothing recorded, nothing left behind, finalizer", State{}, StatusMissing, finalizer, []Action{ActLetGo}, false},
		{"nothing recorded, a lease or journal left behind, finalizer", State{LeftBehind: true}, StatusMissing, finalizer, []Action{ActUninstall}, false},
		{"nothing recorded, uninstall", State{}, StatusMissing, uninstall, []Action{ActUninstall}, false},
		{"uninstalled with history, finalizer", State{Last: uninstalled}, StatusUninstalled, finalizer, []Action{ActLetGo}, false},
		{"deployed, finalizer", State{Last: deployed, Deployed: true}, StatusDeployed, finalizer, []Action{ActUninstall}, false},
		{"never released, finalizer", State{}, StatusMissing, Wanted{Operation: release.OpUninstall, Account: &Account{NeverReleased: true}}, []Action{ActLetGo}, false},
		{"deployed, finalizer of a stranded account", State{Last: deployed, Deployed: true}, StatusDeployed,
			Wanted{Operation: release.OpUninstall, Account: &Account{Revision: 1, Stranded: true}}, []Action{ActLetGo}, false},
		{"failed first install, finalizer", State{Last: failed}, StatusFailed, finalizer, []Action{ActUninstall}, false},
		{"interrupted upgrade, finalizer", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			StatusInterruptedUpgrade, finalizer, []Action{ActRemoveHooks, ActUninstall}, false},
		{"uninstalling, finalizer", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			StatusUninstalling, finalizer, []Action{ActFinish}, false},
		{"uninstall's journal left, uninstall", State{Last: uninstalled, Interrupted: interrupted(release.OpUninstall, release.StatusUninstalled, true)},
			StatusJournalLeft, uninstall, []Action{ActFinish}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.state.Status(); got != tt.status {
				t.Errorf("Status = %s, want %s", got, tt.status)
			}
			got, err := Next(tt.state, tt.wanted)
			var ni *NotInstalledError
			if tt.wantErr != errors.As(err, &ni) {
				t.Fatalf("Next error = %v, want a NotInstalledError: %v", err, tt.wantErr)
			}
			if err == nil && !slices.Equal(got, tt.want) {
				t.Errorf("Next = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestInstalls(t *testing.T) {
	pending := StateOf(&release.Release{Version: 1, Info: &release.Info{Status: release.StatusPendingInstall}})
	tests := []struct {
		name  string
		state State
		acts  []Action
		want  bool
	}{
		{"install", State{}, []Action{ActInstall}, true},
		{"upgrade", State{}, []Action{ActUpgrade}, false},
		{"an interrupted install finished", pending, []Action{ActFinish}, true},
		{"an interrupted install finished, then upgraded", pending, []Action{ActFinish, ActUpgrade}, true},
		{"an interrupted upgrade finished", StateOf(&release.Release{Version: 2, Info: &release.Info{Status: release.StatusPendingUpgrade}}),
			[]Action{ActFinish}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.state.Installs(tt.acts); got != tt.want {
				t.Errorf("Installs = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRetries: a failed attempt spends install.retries until a revision was deployed since the
// release was last installed, upgrade.retries once one was.
func TestRetries(t *testing.T) {
	rev := func(version int, status release.Status) *release.Release {
		return &release.Release{Version: version, Info: &release.Info{Status: status}}
	}
	tests := []struct {
		name    string
		history []*release.Release
		want    release.Operation
	}{
		{"nothing recorded", nil, release.OpInstall},
		{"first install failed", []*release.Release{rev(1, release.StatusFailed)}, release.OpInstall},
		{"first install failed twice", []*release.Release{rev(1, release.StatusFailed), rev(2, release.StatusFailed)}, release.OpInstall},
		{"first install interrupted", []*release.Release{rev(1, release.StatusPendingInstall)}, release.OpInstall},
		{"deployed", []*release.Release{rev(1, release.StatusDeployed)}, release.OpUpgrade},
		{"upgrade failed after a deployed revision", []*release.Release{rev(1, release.StatusSuperseded), rev(2, release.StatusFailed)}, release.OpUpgrade},
		{"upgrade failed, the deployed revision kept", []*release.Release{rev(1, release.StatusDeployed), rev(2, release.StatusFailed)}, release.OpUpgrade},
		{"upgrade interrupted", []*release.Release{rev(1, release.StatusDeployed), rev(2, release.StatusPendingUpgrade)}, release.OpUpgrade},
		{"uninstalled, history kept", []*release.Release{rev(1, release.StatusSuperseded), rev(2, release.StatusUninstalled)}, release.OpInstall},
		{"reinstall failed after an uninstall", []*release.Release{rev(1, release.StatusSuperseded), rev(2, release.StatusUninstalled),
			rev(3, release.StatusFailed)}, release.OpInstall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StateOfHistory(tt.history).Retries(); got != tt.want {
				t.Errorf("Retries = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestReadState: the state read without a lease says whether a revision was deployed, from the
// newest revision alone or, when it failed, from the history.
func TestReadState(t *testing.T) {
	rev := func(version int, status release.Status) *release.Release {
		return &release.Release{Name: "web", Namespace: "team", Version: version, Info: &release.Info{Status: status}}
	}
	tests := []struct {
		name       string
		revisions  []*release.Release
		status     Status
		wantDeploy bool
	}{
		{"nothing recorded", nil, StatusMissing, false},
		{"first install failed", []*release.Release{rev(1, release.StatusFailed)}, StatusFailed, false},
		{"retried install failed", []*release.Release{rev(1, release.StatusFailed), rev(2, release.StatusFailed)}, StatusFailed, false},
		{"deployed", []*release.Release{rev(1, release.StatusDeployed)}, StatusDeployed, true},
		{"upgrade failed", []*release.Release{rev(1, release.StatusSuperseded), rev(2, release.StatusFailed)}, StatusFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := release.NewMemoryStore("team")
			for _, r := range tt.revisions {
				if err := store.Create(t.Context(), r); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ReadState(t.Context(), store, "web")
			if err != nil {
				t.Fatal(err)
			}
			if s.Status() != tt.status || s.Deployed != tt.wantDeploy {
				t.Errorf("ReadState: %s, deployed %v; want %s, deployed %v", s.Status(), s.Deployed, tt.status, tt.wantDeploy)
			}
		})
	}
}
