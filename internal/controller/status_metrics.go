package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/berthdev/berth/api/v1alpha1"
)

// collectTimeout bounds the listing of Releases for one scrape: before the cache has synced, a
// scrape reports an error rather than waiting for it.
const collectTimeout = 5 * time.Second

// metricConditions are the conditions berth_releases counts Releases by. A Release without
// Ready counts as Ready Unknown; Reconciling and Stalled are only there while true, so a
// Release without them counts as False.
var metricConditions = []struct {
	condition string
	absent    metav1.ConditionStatus
}{
	{ConditionReady, metav1.ConditionUnknown},
	{ConditionReconciling, metav1.ConditionFalse},
	{ConditionStalled, metav1.ConditionFalse},
}

// releaseCollector is the gauge berth_releases{condition, status}: the Releases of the
// manager's cache by the status of their conditions, computed on each scrape.
type releaseCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

func newReleaseCollector(reader client.Reader) *releaseCollector {
	return &releaseCollector{
		reader: reader,
		desc: prometheus.NewDesc("berth_releases",
			"Releases (berth.dev/v1alpha1) by the status (True, False, Unknown) of their Ready, Reconciling and Stalled conditions.",
			[]string{"condition", "status"}, nil),
	}
}

func (c *releaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *releaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	var list v1alpha1.ReleaseList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("list Releases: %w", err))
		return
	}
	for _, mc := range metricConditions {
		counts := map[metav1.ConditionStatus]int{}
		for i := range list.Items {
			status := mc.absent
			if cond := meta.FindStatusCondition(list.Items[i].Status.Conditions, mc.condition); cond != nil {
				status = cond.Status
			}
			counts[status]++
		}
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), mc.condition, string(s))
		}
	}
}

// releaseMetrics registers berth_releases, read from the manager's cache, in controller-runtime's
// metrics registry while the manager runs, and removes it when the manager stops. Every replica
// reports it, leader or not.
type releaseMetrics struct {
	collector *releaseCollector
}

// releaseMetricsFor returns the runnable that serves berth_releases for mgr; add it to mgr.
func releaseMetricsFor(mgr manager.Manager) manager.Runnable {
	return releaseMetrics{collector: newReleaseCollector(mgr.GetCache())}
}

func (m releaseMetrics) NeedLeaderElection() bool { return false }

func (m releaseMetrics) Start(ctx context.Context) error {
	if err := metrics.Registry.Register(m.collector); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if errors.As(err, &dup) {
			// The registry is the process's: another manager of this process serves it.
			log.FromContext(ctx).Info("berth_releases is already served by another controller of this process")
			return nil
		}
		return fmt.Errorf("register metric berth_releases: %w", err)
	}
	<-ctx.Done()
	metrics.Registry.Unregister(m.collector)
	return nil
}
