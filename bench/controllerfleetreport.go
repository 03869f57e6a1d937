package main

import (
	"fmt"
	"strings"
)

// fleetMarkdown is the section of the fleet runs, each beside the single controller's run of
// the same count at the same rate limit when there is one; empty without fleet runs.
func fleetMarkdown(fleet []fleetRun, runs []controllerRun) string {
	if len(fleet) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nFleets (`--shards`, `--remote`): shards are controllers on one devcluster, each `--watch-label-selector sharding.berth.dev/key=shardI`, the Releases labelled round-robin; " +
		"a remote run is one controller and two devclusters, each Release holding in a Secret of its namespace the workload cluster's admin kubeconfig and naming no ServiceAccount, " +
		"so that it acts as that kubeconfig's identity there (the controller's `--default-service-account deployer` reads the Secret). " +
		"Requests are every controller's together; a remote run's are to the management cluster + to the workload cluster.\n\n")
	b.WriteString("| run | Releases | cluster's rate limit | all Ready | one controller, same count: all Ready (peak RSS at Ready) | created in | peak RSS at Ready / whole run, each controller (its Releases) | CPU until Ready, each controller / the cluster (load average) | API requests until Ready (per Release) | chart repository requests | delete until gone (requests) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range fleet {
		what := fleetRunName(run)
		if run.Error != "" && run.ReadySeconds == 0 {
			fmt.Fprintf(&b, "| %s | %d | %d | failed: %s | %s | | | | | | |\n", what, run.Releases, run.ControllerQPS, firstLineOf(run.Error), singleFigure(runs, run.Releases, run.ControllerQPS))
			continue
		}
		del := deleteText(run.DeleteSkipped, run.DeleteSeconds, run.DeleteRequests)
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s (%.1f) | %s | %d | %s |\n", what, run.Releases, run.ControllerQPS, durationText(run.ReadySeconds),
			singleFigure(runs, run.Releases, run.ControllerQPS), durationText(run.CreateSeconds), peaksText(run.Controllers, true), cpusText(run.Controllers, run.ClusterCPUSecondsReady), run.LoadAverage,
			fleetRequestsText(run), run.ChartRequests, del)
		if run.Error != "" {
			fmt.Fprintf(&b, "| | | | failed after Ready: %s | | | | | | | |\n", firstLineOf(run.Error))
		}
	}
	return b.String()
}

// fleetRunName names a fleet run in the table: "2 shards", "into a workload cluster".
func fleetRunName(run fleetRun) string {
	if run.Kind == fleetRemote {
		return "into a workload cluster"
	}
	return fmt.Sprintf("%d shards", len(run.Controllers))
}

// singleFigure is the single controller's run of n Releases at qps, "12.3 s (80 MiB)", or "–".
func singleFigure(runs []controllerRun, n, qps int) string {
	for _, run := range runs {
		if run.Releases != n || run.ControllerQPS != qps || run.ReadySeconds == 0 {
			continue
		}
		s := fmt.Sprintf("%s (%s MiB)", durationText(run.ReadySeconds), mib(run.PeakRSSReadyBytes))
		if run.Hung > 0 {
			s += fmt.Sprintf(", %d hung Releases beside", run.Hung)
		}
		return s
	}
	return "–"
}

// peaksText is each controller's peak resident memory, "shard1 (25): 60 / 61 MiB; …", at
// Ready and over the whole run, or over the whole run alone.
func peaksText(ctls []fleetController, atReady bool) string {
	var parts []string
	for _, c := range ctls {
		whole := "–"
		if c.PeakRSSBytes > 0 {
			whole = mib(c.PeakRSSBytes)
		}
		if atReady {
			parts = append(parts, fmt.Sprintf("%s (%d): %s / %s MiB", c.Name, c.Releases, mib(c.PeakRSSReadyBytes), whole))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s MiB", c.Name, whole))
		}
	}
	return strings.Join(parts, "; ")
}

// cpusText is each controller's CPU time until Ready and the cluster's, "1.0 s, 1.1 s / 20.3 s";
// without the cluster's (results from before it was measured) "1.0 s, 1.1 s / –".
func cpusText(ctls []fleetController, cluster float64) string {
	var parts []string
	for _, c := range ctls {
		parts = append(parts, fmt.Sprintf("%.1f s", c.CPUSecondsReady))
	}
	c := "–"
	if cluster > 0 {
		c = fmt.Sprintf("%.1f s", cluster)
	}
	return strings.Join(parts, ", ") + " / " + c
}

// fleetRequestsText is the controllers' requests until Ready and per Release; a remote run's
// split between the two clusters.
func fleetRequestsText(run fleetRun) string {
	total := run.Requests + run.RemoteRequests
	per := float64(total) / float64(run.Releases)
	if run.Kind == fleetRemote {
		return fmt.Sprintf("%d + %d (%.1f)", run.Requests, run.RemoteRequests, per)
	}
	return fmt.Sprintf("%d (%.1f)", total, per)
}
