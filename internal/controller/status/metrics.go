package status

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

// Counted is a condition berth_releases counts Releases by, and the status a Release without it
// is counted with (conditions that are only there while true count as False when absent).
type Counted struct {
	Type   string
	Absent metav1.ConditionStatus
}

// releaseCollector is the gauge berth_releases{condition, status}: the Releases of the
// manager's cache by the status of the conditions counted, computed on each scrape.
type releaseCollector struct {
	reader  client.Reader
	counted []Counted
	desc    *prometheus.Desc
}

func newReleaseCollector(reader client.Reader, counted []Counted) *releaseCollector {
	return &releaseCollector{
		reader:  reader,
		counted: counted,
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
	for _, mc := range c.counted {
		counts := map[metav1.ConditionStatus]int{}
		for i := range list.Items {
			is := mc.Absent
			if cond := meta.FindStatusCondition(list.Items[i].Status.Conditions, mc.Type); cond != nil {
				is = cond.Status
			}
			counts[is]++
		}
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), mc.Type, string(s))
		}
	}
}

// releaseMetrics registers berth_releases, read from the manager's cache, in controller-runtime's
// metrics registry while the manager runs, and removes it when the manager stops. Every replica
// reports it, leader or not.
type releaseMetrics struct {
	collector *releaseCollector
}

// ReleaseMetrics returns the runnable that serves berth_releases for mgr, counting the
// conditions counted; add it to mgr.
func ReleaseMetrics(mgr manager.Manager, counted []Counted) manager.Runnable {
	return releaseMetrics{collector: newReleaseCollector(mgr.GetCache(), counted)}
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
