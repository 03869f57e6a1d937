package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// TestChangesAreTheRunsChangeSets lists the change sets of an operation's runs as they are, one
// run after another, each entry with its run's operation and revision: the order is the
// engine's (its plan's), not the CLI's.
func TestChangesAreTheRunsChangeSets(t *testing.T) {
	sa := resource.Identity{Kind: "ServiceAccount", Namespace: "ns", Name: "web"}
	cm := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "web"}
	old := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "old"}
	deploy := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	set := func(entries ...engine.ChangeSetEntry) engine.ChangeSet { return engine.ChangeSet{Entries: entries} }
	tests := []struct {
		name string
		runs []lifecycle.Run
		want []objectChange
	}{{
		name: "no run",
		want: []objectChange{},
	}, {
		name: "one run, its change set as it is",
		runs: []lifecycle.Run{{Operation: release.OpUpgrade, Revision: 2, Changes: set(
			engine.ChangeSetEntry{Object: sa, Change: engine.Unchanged},
			engine.ChangeSetEntry{Object: deploy, Change: engine.Configured},
			engine.ChangeSetEntry{Object: cm, Change: engine.Created},
			engine.ChangeSetEntry{Object: old, Change: engine.Deleted},
		)}},
		want: []objectChange{
			{Object: sa, Change: engine.Unchanged, Operation: release.OpUpgrade, Revision: 2},
			{Object: deploy, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: cm, Change: engine.Created, Operation: release.OpUpgrade, Revision: 2},
			{Object: old, Change: engine.Deleted, Operation: release.OpUpgrade, Revision: 2},
		},
	}, {
		name: "runs one after another",
		runs: []lifecycle.Run{
			{Operation: release.OpUpgrade, Revision: 2, Changes: set(engine.ChangeSetEntry{Object: cm, Change: engine.Configured})},
			{Operation: release.OpRollback, Revision: 3, Changes: set(
				engine.ChangeSetEntry{Object: deploy, Change: engine.Created},
				engine.ChangeSetEntry{Object: cm, Change: engine.Unchanged},
				engine.ChangeSetEntry{Object: old, Change: engine.Skipped},
			)},
		},
		want: []objectChange{
			{Object: cm, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: deploy, Change: engine.Created, Operation: release.OpRollback, Revision: 3},
			{Object: cm, Change: engine.Unchanged, Operation: release.OpRollback, Revision: 3},
			{Object: old, Change: engine.Skipped, Operation: release.OpRollback, Revision: 3},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, changes(tt.runs)); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}
