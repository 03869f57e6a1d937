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

func TestNext(t *testing.T) {
	chart := func(version string, status release.Status, values map[string]any) *release.Release {
		return &release.Release{Version: 2, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: version}}, Config: values,
			Info: &release.Info{Status: status}}
	}
	values := map[string]any{"replicas": float64(2)}
	deployed := chart("1.0.0", release.StatusDeployed, values)
	uninstalled := chart("1.0.0", release.StatusUninstalled, values)
	interrupted := func(op release.Operation, status release.Status, stale bool) *Interrupted {
		return &Interrupted{Release: "r", Operation: op, Last: chart("1.0.0", status, values), Stale: stale}
	}
	upgrade := Wanted{Operation: release.OpUpgrade, ChartVersion: "1.0.0", Values: values}
	upgradeInstall := upgrade
	upgradeInstall.Install = true
	other := Wanted{Operation: release.OpUpgrade, Install: true, ChartVersion: "1.1.0", Values: values}
	install := Wanted{Operation: release.OpInstall, ChartVersion: "1.0.0", Values: values}
	uninstall := Wanted{Operation: release.OpUninstall}

	tests := []struct {
		name    string
		state   State
		wanted  Wanted
		want    []Action
		wantErr bool
	}{
		{"nothing recorded, install", State{}, install, []Action{ActInstall}, false},
		{"nothing recorded, upgrade --install", State{}, upgradeInstall, []Action{ActInstall}, false},
		{"nothing recorded, upgrade", State{}, upgrade, nil, true},
		{"uninstalled with history, upgrade --install", State{Last: uninstalled}, upgradeInstall, []Action{ActInstall}, false},
		{"deployed, upgrade", State{Last: deployed}, upgrade, []Action{ActUpgrade}, false},
		{"deployed, rollback", State{Last: deployed}, Wanted{Operation: release.OpRollback}, []Action{ActRollback}, false},
		{"deployed, recover", State{Last: deployed}, Wanted{}, nil, false},
		{"interrupted install of the same, install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			install, []Action{ActFinish}, false},
		{"interrupted install of the same, upgrade --install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			upgradeInstall, []Action{ActFinish}, false},
		{"interrupted install of another chart, upgrade --install", State{Interrupted: interrupted(release.OpInstall, release.StatusPendingInstall, false)},
			other, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted upgrade of the same, upgrade", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			upgrade, []Action{ActFinish}, false},
		{"interrupted upgrade, another upgrade", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			other, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted rollback, upgrade of the same", State{Interrupted: interrupted(release.OpRollback, release.StatusPendingRollback, false)},
			upgrade, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted upgrade, uninstall", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			uninstall, []Action{ActRemoveHooks, ActUninstall}, false},
		{"interrupted uninstall, uninstall", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			uninstall, []Action{ActFinish}, false},
		{"interrupted uninstall, install", State{Interrupted: interrupted(release.OpUninstall, release.StatusUninstalling, false)},
			install, []Action{ActFinish, ActInstall}, false},
		{"interrupted upgrade, test", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			Wanted{Operation: release.OpTest}, []Action{ActFinish, ActTest}, false},
		{"stale journal, upgrade of the same", State{Last: deployed, Interrupted: interrupted(release.OpUpgrade, release.StatusDeployed, true)},
			upgrade, []Action{ActFinish, ActUpgrade}, false},
		{"interrupted upgrade, recover", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			Wanted{}, []Action{ActFinish}, false},
		{"interrupted upgrade, recover --rollback", State{Interrupted: interrupted(release.OpUpgrade, release.StatusPendingUpgrade, false)},
			Wanted{Rollback: true}, []Action{ActUndo}, false},
		{"stale journal, recover --rollback", State{Interrupted: interrupted(release.OpUpgrade, release.StatusDeployed, true)},
			Wanted{Rollback: true}, []Action{ActFinish}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Next(tt.state, tt.wanted)
			var ni *NotInstalledError
			if tt.wantErr != errors.As(err, &ni) {
				t.Fatalf("Next error = %v, want a NotInstalledError: %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Next = %v, want %v", got, tt.want)
			}
		})
	}
}
