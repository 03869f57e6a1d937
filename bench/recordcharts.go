package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// The record charts are what makes a release record large: a chart the size of
// kube-prometheus-stack's (dashboards in files/, rendered into ConfigMaps, and large templates of
// alerting rules), and one about four times as large, whose record does not fit in one Secret.
// Their content is generated from a fixed seed, so that every run writes the same bytes, and is
// text of the kind such charts hold (JSON dashboards, rule expressions), so that it compresses as
// theirs does.

// recordSpec sizes a record chart.
type recordSpec struct {
	name, description string
	// dashboards are files/dashboards/NN.json, each rendered into a ConfigMap, of panels each.
	dashboards, panels int
	// rules are templates/rules-NN.yaml, each a ConfigMap of groups alerting rules groups.
	rules, groups int
	seed          uint64
}

// recordApps are the Deployments of a record chart, each with its Service and ServiceAccount.
var recordApps = []string{"operator", "state-metrics", "grafana"}

// largeRecordChart is kube-prometheus-stack's size: its record, as Helm writes it (gzip's best
// level, base64), is 700 to 900 KiB, within a Secret.
func largeRecordChart() chartSpec {
	return recordChart(recordSpec{name: "large-record",
		description: "a record the size of kube-prometheus-stack's: 38 dashboards in files/, 26 large templates of rules",
		dashboards:  38, panels: 24, rules: 26, groups: 6, seed: 35})
}

// hugeRecordChart's record is about 3 MiB as Helm writes it: no Secret holds it.
func hugeRecordChart() chartSpec {
	return recordChart(recordSpec{name: "huge-record",
		description: "a record of about 3 MiB: 150 dashboards in files/, 100 large templates of rules",
		dashboards:  150, panels: 24, rules: 100, groups: 6, seed: 36})
}

func recordChart(s recordSpec) chartSpec {
	f := newChart(s.name, s.description)
	r := rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))
	words := vocabulary(r, 400)
	// Every other object changes on upgrade, counting them all in order: half of them.
	k := 0
	next := func() string { k++; return changing(k) }
	var b strings.Builder
	for _, app := range recordApps {
		b.WriteString(serviceAccount(app, next()))
		b.WriteString(service(app, next()))
		b.WriteString(deployment(app, next(), 1, app))
	}
	f["templates/apps.yaml"] = b.String()
	for i := range s.dashboards {
		file := fmt.Sprintf("files/dashboards/%03d.json", i)
		f[file] = dashboard(r, words, i, s.panels)
		f[fmt.Sprintf("templates/dashboard-%03d.yaml", i)] = "---\napiVersion: v1\nkind: ConfigMap\n" +
			meta(fmt.Sprintf("dashboard-%03d", i), next()) +
			"data:\n  dashboard.json: |-\n{{ .Files.Get \"" + file + "\" | indent 4 }}\n"
	}
	for i := range s.rules {
		f[fmt.Sprintf("templates/rules-%03d.yaml", i)] = rulesTemplate(r, words, i, s.groups, next())
	}
	return chartSpec{Name: s.name, Objects: len(recordApps)*3 + s.dashboards + s.rules, Hooks: map[string]int{}, files: f}
}

// vocabulary is n distinct lower-case words of 3 to 10 letters.
func vocabulary(r *rand.Rand, n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var w strings.Builder
		for range 3 + r.IntN(8) {
			w.WriteByte(byte('a' + r.IntN(26)))
		}
		if !seen[w.String()] {
			seen[w.String()] = true
			out = append(out, w.String())
		}
	}
	return out
}

func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }

// metric is a Prometheus metric name and an expression over it.
func metric(r *rand.Rand, words []string) (name, expr string) {
	name = pick(r, words) + "_" + pick(r, words) + "_" + []string{"total", "seconds", "bytes", "count", "ratio"}[r.IntN(5)]
	by := pick(r, words)
	switch r.IntN(4) {
	case 0:
		expr = fmt.Sprintf(`sum(rate(%s{job="%s", namespace="$namespace"}[$__rate_interval])) by (%s)`, name, pick(r, words), by)
	case 1:
		expr = fmt.Sprintf(`histogram_quantile(0.%d, sum(rate(%s_bucket{cluster="$cluster"}[5m])) by (le, %s))`, 50+r.IntN(49), name, by)
	case 2:
		expr = fmt.Sprintf(`max by (%s) (%s{%s=~"$%s"}) / on (%s) group_left %s_%s`, by, name, by, by, by, pick(r, words), pick(r, words))
	default:
		expr = fmt.Sprintf(`1 - avg(irate(%s{mode="%s"}[%dm])) without (cpu)`, name, pick(r, words), 1+r.IntN(10))
	}
	return name, expr
}

// dashboard is a Grafana dashboard of panels panels, as indented JSON.
func dashboard(r *rand.Rand, words []string, i, panels int) string {
	var ps []map[string]any
	for p := range panels {
		var targets []map[string]any
		for t := range 1 + r.IntN(3) {
			_, expr := metric(r, words)
			targets = append(targets, map[string]any{"datasource": map[string]any{"type": "prometheus", "uid": "$datasource"},
				"expr": expr, "format": "time_series", "intervalFactor": 2, "legendFormat": "{{" + pick(r, words) + "}}",
				"refId": string(rune('A' + t))})
		}
		ps = append(ps, map[string]any{
			"id": p + 1, "title": strings.ToUpper(pick(r, words)[:1]) + pick(r, words)[1:] + " " + pick(r, words),
			"type":       []string{"timeseries", "stat", "table", "gauge"}[r.IntN(4)],
			"datasource": map[string]any{"type": "prometheus", "uid": "$datasource"},
			"gridPos":    map[string]any{"h": 7, "w": 6 * (1 + r.IntN(4)), "x": 6 * r.IntN(4), "y": 7 * (p / 2)},
			"fieldConfig": map[string]any{"defaults": map[string]any{
				"unit": []string{"short", "bytes", "s", "percentunit", "reqps"}[r.IntN(5)], "min": 0,
				"custom": map[string]any{"drawStyle": "line", "fillOpacity": 10, "lineWidth": 1, "showPoints": "never",
					"stacking": map[string]any{"group": "A", "mode": "none"}},
				"thresholds": map[string]any{"mode": "absolute", "steps": []any{
					map[string]any{"color": "green", "value": nil}, map[string]any{"color": "red", "value": 80 + r.IntN(20)}}},
			}, "overrides": []any{}},
			"options": map[string]any{"legend": map[string]any{"calcs": []string{"mean", "max"}, "displayMode": "table", "placement": "right"},
				"tooltip": map[string]any{"mode": "multi", "sort": "desc"}},
			"targets":     targets,
			"description": fmt.Sprintf("%s %s %s of the %s %s.", pick(r, words), pick(r, words), pick(r, words), pick(r, words), pick(r, words)),
		})
	}
	var vars []map[string]any
	for _, v := range []string{"datasource", "cluster", "namespace", pick(r, words)} {
		name, _ := metric(r, words)
		vars = append(vars, map[string]any{"name": v, "type": "query", "hide": 0, "includeAll": false,
			"query": fmt.Sprintf("label_values(%s, %s)", name, v), "refresh": 2, "sort": 1,
			"datasource": map[string]any{"type": "prometheus", "uid": "$datasource"}})
	}
	d := map[string]any{"uid": fmt.Sprintf("%032x", r.Uint64()), "title": fmt.Sprintf("Kubernetes / %s / %s", pick(r, words), pick(r, words)),
		"tags": []string{"kubernetes-mixin", pick(r, words)}, "timezone": "utc", "schemaVersion": 39, "version": i + 1,
		"editable": true, "refresh": "10s", "time": map[string]any{"from": "now-1h", "to": "now"},
		"panels": ps, "templating": map[string]any{"list": vars}}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(out)
}

// rulesTemplate is a template of a ConfigMap of groups groups of alerting rules, as YAML text,
// whose generation annotation is generation.
func rulesTemplate(r *rand.Rand, words []string, i, groups int, generation string) string {
	var b strings.Builder
	b.WriteString("---\napiVersion: v1\nkind: ConfigMap\n" + meta(fmt.Sprintf("rules-%03d", i), generation) + "data:\n  rules.yaml: |-\n    groups:\n")
	for range groups {
		fmt.Fprintf(&b, "    - name: %s.%s.rules\n      rules:\n", pick(r, words), pick(r, words))
		for range 6 + r.IntN(6) {
			name, expr := metric(r, words)
			fmt.Fprintf(&b, "      - alert: %s%s\n", strings.ToUpper(name[:1]), strings.ReplaceAll(name[1:], "_", ""))
			fmt.Fprintf(&b, "        annotations:\n          description: '{{`{{ $labels.%s }}`}} %s %s %s on {{`{{ $labels.instance }}`}} for the %s {{ .Release.Name }}.'\n",
				pick(r, words), pick(r, words), pick(r, words), pick(r, words), pick(r, words))
			fmt.Fprintf(&b, "          runbook_url: https://runbooks.example/%s/%s\n          summary: %s %s %s.\n",
				pick(r, words), strings.ToLower(name), pick(r, words), pick(r, words), pick(r, words))
			fmt.Fprintf(&b, "        expr: |-\n          %s > %d\n        for: %dm\n        labels:\n          severity: %s\n",
				expr, r.IntN(100), 1+r.IntN(15), []string{"warning", "critical", "info"}[r.IntN(3)])
		}
	}
	return b.String()
}
