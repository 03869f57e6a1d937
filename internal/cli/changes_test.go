package cli

import (
	"slices"
	"testing"
	"time"

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
				engine.ChangeSetEntry{Object: old, Change: engine.Kept},
			)},
		},
		want: []objectChange{
			{Object: cm, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: deploy, Change: engine.Created, Operation: release.OpRollback, Revision: 3},
			{Object: cm, Change: engine.Unchanged, Operation: release.OpRollback, Revision: 3},
			{Object: old, Change: engine.Kept, Operation: release.OpRollback, Revision: 3},
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

func TestSummaryNamesActionsBeyondTheOneAsked(t *testing.T) {
	run := lifecycle.Run{Operation: release.OpUpgrade, Revision: 2, Changes: engine.ChangeSet{Entries: []engine.ChangeSetEntry{
		{Object: resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, Change: engine.Configured},
	}}}
	res := &lifecycle.Result{Runs: []lifecycle.Run{run}, Actions: []lifecycle.Action{lifecycle.ActUpgrade}, Duration: time.Second}
	if got, want := summarize(res), "done: 1 configured in 1s"; got != want {
		t.Errorf("summarize = %q, want %q", got, want)
	}
	if r := resultReport(res); r.Actions != nil {
		t.Errorf("report actions = %v, want none for the operation asked alone", r.Actions)
	}
	res.Actions = []lifecycle.Action{lifecycle.ActFinish, lifecycle.ActUpgrade}
	if got, want := summarize(res), "done: 1 configured in 1s (finish, then upgrade)"; got != want {
		t.Errorf("summarize = %q, want %q", got, want)
	}
	if r := resultReport(res); !slices.Equal(r.Actions, res.Actions) {
		t.Errorf("report actions = %v, want %v", r.Actions, res.Actions)
	}
}
