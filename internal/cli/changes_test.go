package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

func TestChangesFollowThePlan(t *testing.T) {
	sa := resource.Identity{Kind: "ServiceAccount", Namespace: "ns", Name: "web"}
	cm := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "web"}
	old := resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: "old"}
	deploy := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	// The plan of an upgrade: the waits and hooks name objects too, but only the applies and
	// deletions change them.
	upgrade := &plan.Plan{Steps: []plan.Step{
		{ID: "hooks/pre-upgrade", Action: plan.RunHooks, Objects: []resource.Identity{{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate"}}},
		{ID: "apply/ServiceAccount", Action: plan.Apply, Objects: []resource.Identity{sa}},
		{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{cm}},
		{ID: "apply/Deployment.apps", Action: plan.Apply, Objects: []resource.Identity{deploy}},
		{ID: "delete/ConfigMap", Action: plan.Delete, Objects: []resource.Identity{old}},
		{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{sa, cm, deploy}},
		{ID: "wait-absent", Action: plan.WaitAbsent, Objects: []resource.Identity{old}},
	}}
	tests := []struct {
		name string
		runs []lifecycle.Run
		want []objectChange
	}{{
		name: "no run",
		want: []objectChange{},
	}, {
		name: "objects in the order of the apply and delete steps, not the run's",
		runs: []lifecycle.Run{{Operation: release.OpUpgrade, Revision: 2, Plan: upgrade, Objects: []lifecycle.ObjectRun{
			{Object: old, Change: engine.Deleted},
			{Object: cm, Change: engine.Configured},
			{Object: sa, Change: engine.Unchanged},
			{Object: deploy, Change: engine.Unchanged},
		}}},
		want: []objectChange{
			{Object: sa, Change: engine.Unchanged, Operation: release.OpUpgrade, Revision: 2},
			{Object: cm, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: deploy, Change: engine.Unchanged, Operation: release.OpUpgrade, Revision: 2},
			{Object: old, Change: engine.Deleted, Operation: release.OpUpgrade, Revision: 2},
		},
	}, {
		name: "a run that stopped lists what it did; an object its plan does not name comes last",
		runs: []lifecycle.Run{{Operation: release.OpUpgrade, Revision: 2, Plan: upgrade, Objects: []lifecycle.ObjectRun{
			{Object: resource.Identity{Kind: "Secret", Namespace: "ns", Name: "x"}, Change: engine.Created},
			{Object: cm, Change: engine.Configured},
		}}},
		want: []objectChange{
			{Object: cm, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: resource.Identity{Kind: "Secret", Namespace: "ns", Name: "x"}, Change: engine.Created, Operation: release.OpUpgrade, Revision: 2},
		},
	}, {
		name: "runs one after another",
		runs: []lifecycle.Run{
			{Operation: release.OpUpgrade, Revision: 2, Plan: upgrade, Objects: []lifecycle.ObjectRun{{Object: cm, Change: engine.Configured}}},
			{Operation: release.OpUpgrade, Revision: 3, Plan: upgrade, Objects: []lifecycle.ObjectRun{{Object: deploy, Change: engine.Created}, {Object: cm, Change: engine.Unchanged}}},
		},
		want: []objectChange{
			{Object: cm, Change: engine.Configured, Operation: release.OpUpgrade, Revision: 2},
			{Object: cm, Change: engine.Unchanged, Operation: release.OpUpgrade, Revision: 3},
			{Object: deploy, Change: engine.Created, Operation: release.OpUpgrade, Revision: 3},
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
