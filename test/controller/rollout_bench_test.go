package controller_test

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/internal/testenv"
)

// rolloutSoak is each cluster's watch window in BenchmarkRollout.
const rolloutSoak = 5 * time.Second

// BenchmarkRollout rolls a new chart version out to five clusters in waves of one, two and two,
// each cluster soaked rolloutSoak after Ready, and reports the time from the new version to the
// last wave Complete against its floor, the soak times one after another (x-floor), and the
// requests the controller made of each cluster (as the Releases' account) for one rollout.
func BenchmarkRollout(b *testing.B) {
	f := startFleetOfFive(b, "ok", rolloutSoak)
	env, c, clusters, ctl, ro := f.env, f.c, f.clusters, f.ctl, f.ro
	names := []string{"a", "b", "c", "d", "e"}
	account := "system:serviceaccount:" + env.Namespace + ":deployer"

	var elapsed time.Duration
	requests := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		marks := map[string]testenv.AuditMark{}
		for _, name := range names {
			marks[name] = clusters[name].AuditMark(b)
		}
		if err := c.Get(b.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
			b.Fatal(err)
		}
		ro.Spec.Template.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"version": %d}`, i+2))}
		b.StartTimer()
		start := time.Now()
		if err := c.Update(b.Context(), ro); err != nil {
			b.Fatal(err)
		}
		rolloutCondition(b, c, env.Namespace, "web", "Complete")
		elapsed += time.Since(start)
		b.StopTimer()
		for _, name := range names {
			for _, ev := range clusters[name].AuditEvents(b, marks[name]) {
				if ev.User == account {
					requests++
				}
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	floor := time.Duration(len(ro.Spec.Waves)) * rolloutSoak
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/rollout")
	b.ReportMetric(floor.Seconds(), "s-floor")
	b.ReportMetric(float64(elapsed)/float64(b.N)/float64(floor), "x-floor")
	b.ReportMetric(float64(requests)/float64(b.N)/float64(len(names)), "requests/cluster")
	ctl.running()
}
