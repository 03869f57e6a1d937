package controller_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseRollbackToHoldsAnEarlierRevision: spec.rollbackTo rolls the release back to the
// revision asked, once, its history saying why, and holds it there whatever else the spec
// asks, until rollbackTo is removed.
func TestReleaseRollbackToHoldsAnEarlierRevision(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	setValues := func(rel *v1alpha1.Release, values string) {
		t.Helper()
		rel.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
		if err := c.Update(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	setValues(got, `{"replicas": 5}`)
	got = waitFor(t, c, env.Namespace, "web", "is upgraded", readyAt(2))

	got.Spec.RollbackTo = &v1alpha1.RollbackRequest{Revision: 1, Reason: "wave canary: cluster a degraded"}
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is rolled back to revision 1", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return readyAt(3)(rel) && r.Reason == controller.ReasonRolledBack
	})
	record := berthtest.LastRecord(t, env, "web")
	if record.Version != 3 || record.Info.Description != "Rollback to 1: wave canary: cluster a degraded" {
		t.Errorf("record %d %q, want revision 3 describing the rollback and its reason", record.Version, record.Info.Description)
	}
	assertConfig(t, env, "replicas", "2")
	if h := got.Status.History; len(h) == 0 || h[0].Operation != "rollback" || h[0].Revision != 3 {
		t.Errorf("status.history %+v, want the rollback first", h)
	}

	// Held: a new spec changes nothing while rollbackTo stays, not even one that asks for the
	// values of revision 2 again.
	setValues(got, `{"replicas": 5}`)
	got = waitFor(t, c, env.Namespace, "web", "is still held", func(rel *v1alpha1.Release) bool {
		return readyAt(3)(rel) && condition(rel, controller.ConditionReady).Reason == controller.ReasonRolledBack
	})
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 3 {
		t.Errorf("revision %d recorded while held, want none after 3", record.Version)
	}

	got.Spec.RollbackTo = nil
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, env.Namespace, "web", "is upgraded once no longer held", readyAt(4))
	assertConfig(t, env, "replicas", "5")
}
