package main

import (
	"fmt"
	"strings"
)

// The charts the controller case can release (--chart): app, three objects, what the case was
// built with; and large-record, whose release record is kube-prometheus-stack's size.

// defaultControllerChart is the chart of a run that names none, and of results written before
// --chart existed.
const defaultControllerChart = "app"

// controllerChartNames are the values of --chart.
func controllerChartNames() []string { return []string{"app", "large-record"} }

// controllerChartSpec is the chart --chart names.
func controllerChartSpec(name string) (chartSpec, error) {
	switch name {
	case "app":
		return controllerChart(), nil
	case "large-record":
		return largeRecordChart(), nil
	}
	return chartSpec{}, fmt.Errorf("no controller chart %q: want one of %s", name, strings.Join(controllerChartNames(), ", "))
}

// controllerChartKinds counts the objects of a release of the chart --chart names, by kind
// (TestControllerChartKinds renders each chart to hold them to it).
func controllerChartKinds(name string) (map[string]int, error) {
	switch name {
	case "app":
		return map[string]int{"ConfigMap": 1, "Service": 1, "Deployment": 1}, nil
	case "large-record":
		// Each app a ServiceAccount, a Service and a Deployment; 38 dashboards and 26 rule
		// templates, a ConfigMap each.
		n := len(recordApps)
		return map[string]int{"ServiceAccount": n, "Service": n, "Deployment": n, "ConfigMap": 38 + 26}, nil
	}
	return nil, fmt.Errorf("no controller chart %q: want one of %s", name, strings.Join(controllerChartNames(), ", "))
}

// goalRequestsPerRelease is the controller's requests until an app Release is Ready: 20, as
// measured (bench/README.md, "Since the run above").
const goalRequestsPerRelease = 20

// answeredReady says whether the controller's apply of an object of kind answers it ready, so
// that its wait watches nothing: an object without a rollout (kstatus's Current on its own).
func answeredReady(kind string) bool {
	switch kind {
	case "ConfigMap", "Secret", "Service", "ServiceAccount":
		return true
	}
	return false
}

// objectRequests is what installing a release of objects (by kind) costs the controller for
// the objects themselves: a server-side dry run and an apply of each, and a watch of each kind
// whose apply does not answer it ready (the objects of one kind in one namespace share a watch).
func objectRequests(kinds map[string]int) int {
	n := 0
	for kind, c := range kinds {
		n += 2 * c
		if !answeredReady(kind) && c > 0 {
			n++
		}
	}
	return n
}

// requestsGoal is the bound on the controller's requests until a Release of a chart with objects
// (by kind) is Ready: the app chart's goal less what app's objects cost, plus what these cost.
// The rest (the Release's status, its lease, its records, its journal, an Event) does not depend
// on the chart.
func requestsGoal(kinds map[string]int) (int, error) {
	app, err := controllerChartKinds("app")
	if err != nil {
		return 0, err
	}
	return goalRequestsPerRelease - objectRequests(app) + objectRequests(kinds), nil
}
