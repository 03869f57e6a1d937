package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// fleetRepo is the chart repository of a fleet run.
type fleetRepo struct {
	url    string
	served *repoCounter
	close  func()
}

// fleetSetup is what a fleet run measures on: the management cluster, which holds the
// Releases, and, for a remote run, the workload cluster they are released into.
type fleetSetup struct {
	mgmt, workload *fleetCluster
	repo           fleetRepo
	// mgmtAudit and workloadAudit read the clusters' audit logs, each count from where the last
	// one stopped.
	mgmtAudit, workloadAudit *auditLog
}

// prepareFleet installs the Release CRD into the management cluster and serves the chart
// repository, before any controller starts.
func prepareFleet(ctx context.Context, cfg controllerConfig, mgmt *fleetCluster, dir string) (fleetRepo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fleetRepo{}, err
	}
	if err := installCRDs(ctx, mgmt.dyn, cfg.crd); err != nil {
		return fleetRepo{}, err
	}
	url, served, closeRepo, err := serveChart(ctx, cfg.chart, filepath.Join(dir, "repo"))
	if err != nil {
		return fleetRepo{}, err
	}
	return fleetRepo{url: url, served: served, close: closeRepo}, nil
}

// measureFleet creates the run's Releases at once, waits until every one is Ready, reads each
// controller's memory and CPU and the controllers' requests, then deletes every Release, waits
// until they are gone and stops the controllers.
func measureFleet(ctx context.Context, cfg controllerConfig, run *fleetRun, s fleetSetup, ctls []*controllerProcess, opts releaseOptions) error {
	n := run.Releases
	s.mgmtAudit = &auditLog{path: s.mgmt.audit}
	if s.workload != nil {
		s.workloadAudit = &auditLog{path: s.workload.audit}
	}
	rw, err := watchReleases(ctx, s.mgmt.dyn)
	if err != nil {
		return err
	}
	defer rw.stop()
	exited, stopWatching := anyExited(ctls)
	defer stopWatching()

	fmt.Printf("creating %d Releases (%s, %d controllers)\n", n, run.Kind, len(ctls))
	s.repo.served.reset()
	clusterCPU, err := s.clusterCPUSeconds()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := createReleases(ctx, s.mgmt.dyn, tenantPrefix, n, s.repo.url, opts); err != nil {
		return err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	readyAt, err := rw.until(ctx, cfg.timeout, func(c releaseCounts) bool { return c.Measured == n && c.Ready == n }, exited)
	if err != nil {
		return fmt.Errorf("Releases Ready: %w", err)
	}
	run.ReadySeconds = readyAt.Sub(start).Seconds()
	run.LoadAverage = loadAverage()
	if cpu, err := s.clusterCPUSeconds(); err == nil {
		run.ClusterCPUSecondsReady = cpu - clusterCPU
	}
	run.ChartRequests = s.repo.served.total()
	for i, c := range ctls {
		if run.Controllers[i].PeakRSSReadyBytes, run.Controllers[i].CPUSecondsReady, err = c.usage(); err != nil {
			return err
		}
		fmt.Printf("  %s: peak RSS %s MiB, %.1f s CPU until Ready\n", run.Controllers[i].Name, mib(run.Controllers[i].PeakRSSReadyBytes), run.Controllers[i].CPUSecondsReady)
	}
	sleep(ctx, auditSettle)
	if run.Requests, run.RemoteRequests, err = s.controllerRequests(start, readyAt); err != nil {
		return err
	}
	fmt.Printf("  %d Releases Ready after %.1fs (created in %.1fs); %d requests to the management cluster, %d to the workload cluster; the cluster %.1f s CPU; load average %.1f\n",
		n, run.ReadySeconds, run.CreateSeconds, run.Requests, run.RemoteRequests, run.ClusterCPUSecondsReady, run.LoadAverage)

	if !cfg.delete {
		run.DeleteSkipped = true
		for i, c := range ctls {
			run.Controllers[i].PeakRSSBytes = c.stop().PeakRSS
		}
		fmt.Printf("  deletion not measured (--delete=false); peak RSS over the run: %s\n", peaksText(run.Controllers, false))
		return nil
	}
	fmt.Printf("deleting %d Releases\n", n)
	delStart := time.Now()
	if err := deleteReleases(ctx, s.mgmt.dyn, tenantPrefix, n); err != nil {
		return err
	}
	goneAt, err := rw.until(ctx, cfg.timeout, func(c releaseCounts) bool { return c.All == 0 }, exited)
	if err != nil {
		return fmt.Errorf("Releases gone: %w", err)
	}
	run.DeleteSeconds = goneAt.Sub(delStart).Seconds()
	sleep(ctx, auditSettle)
	mgmtDel, remoteDel, err := s.controllerRequests(delStart, goneAt)
	if err != nil {
		return err
	}
	run.DeleteRequests = mgmtDel + remoteDel
	for i, c := range ctls {
		p := c.stop()
		run.Controllers[i].PeakRSSBytes = p.PeakRSS
	}
	fmt.Printf("  gone after %.1fs, %d requests; peak RSS over the run: %s\n", run.DeleteSeconds, run.DeleteRequests, peaksText(run.Controllers, false))
	return nil
}

// clusterCPUSeconds is the CPU time the components of the run's clusters have used so far.
func (s fleetSetup) clusterCPUSeconds() (float64, error) {
	cpu, err := treeCPUSeconds(s.mgmt.cmd.Process.Pid)
	if err != nil || s.workload == nil {
		return cpu, err
	}
	w, err := treeCPUSeconds(s.workload.cmd.Process.Pid)
	return cpu + w, err
}

// controllerRequests counts the controllers' requests from start to end in the management
// cluster and in the workload cluster (0 without one), from their audit logs.
func (s fleetSetup) controllerRequests(start, end time.Time) (mgmt, workload int, err error) {
	if mgmt, _, err = s.mgmtAudit.requests(start, end, userAgentOf("controller")); err != nil || s.workloadAudit == nil {
		return mgmt, 0, err
	}
	workload, _, err = s.workloadAudit.requests(start, end, userAgentOf("controller"))
	return mgmt, workload, err
}

// anyExited returns a channel closed when any of ctls exits, and a function that stops
// watching them.
func anyExited(ctls []*controllerProcess) (<-chan struct{}, func()) {
	out := make(chan struct{})
	stop := make(chan struct{})
	var once sync.Once
	for _, c := range ctls {
		go func() {
			select {
			case <-c.done:
				once.Do(func() { close(out) })
			case <-stop:
			}
		}()
	}
	return out, func() { close(stop) }
}
