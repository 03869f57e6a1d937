package release

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
)

// dashboards is revision version of a release whose chart is shaped as bench's record charts
// (bench/recordcharts.go): n dashboards of Grafana JSON in files/, each rendered into a ConfigMap,
// and rules templates of alerting rules, text that compresses as such charts' does. 38 and 26
// make a record of about 800 KiB as Helm writes it (bench's large-record), 150 and 100 one of
// about 3 MiB (huge-record).
func dashboards(version, n, rules int) *Release {
	r := rev("ns", "records", version, StatusDeployed)
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(rules)))
	var words []string
	for len(words) < 400 {
		var w strings.Builder
		for range 3 + rnd.IntN(8) {
			w.WriteByte(byte('a' + rnd.IntN(26)))
		}
		words = append(words, w.String())
	}
	pick := func() string { return words[rnd.IntN(len(words))] }
	expr := func() string {
		name := pick() + "_" + pick() + "_" + []string{"total", "seconds", "bytes", "count", "ratio"}[rnd.IntN(5)]
		by := pick()
		switch rnd.IntN(4) {
		case 0:
			return fmt.Sprintf(`sum(rate(%s{job="%s", namespace="$namespace"}[$__rate_interval])) by (%s)`, name, pick(), by)
		case 1:
			return fmt.Sprintf(`histogram_quantile(0.%d, sum(rate(%s_bucket{cluster="$cluster"}[5m])) by (le, %s))`, 50+rnd.IntN(49), name, by)
		case 2:
			return fmt.Sprintf(`max by (%s) (%s{%s=~"$%s"}) / on (%s) group_left %s_%s`, by, name, by, by, by, pick(), pick())
		}
		return fmt.Sprintf(`1 - avg(irate(%s{mode="%s"}[%dm])) without (cpu)`, name, pick(), 1+rnd.IntN(10))
	}
	var manifest strings.Builder
	for i := range n {
		var panels []map[string]any
		for p := range 24 {
			var targets []any
			for t := range 1 + rnd.IntN(3) {
				targets = append(targets, map[string]any{"datasource": map[string]any{"type": "prometheus", "uid": "$datasource"},
					"expr": expr(), "format": "time_series", "intervalFactor": 2, "legendFormat": "{{" + pick() + "}}", "refId": string(rune('A' + t))})
			}
			panels = append(panels, map[string]any{
				"id": p + 1, "title": pick() + " " + pick(), "type": []string{"timeseries", "stat", "table", "gauge"}[rnd.IntN(4)],
				"datasource": map[string]any{"type": "prometheus", "uid": "$datasource"},
				"gridPos":    map[string]any{"h": 7, "w": 6 * (1 + rnd.IntN(4)), "x": 6 * rnd.IntN(4), "y": 7 * (p / 2)},
				"fieldConfig": map[string]any{"defaults": map[string]any{"unit": []string{"short", "bytes", "s", "percentunit", "reqps"}[rnd.IntN(5)], "min": 0,
					"custom": map[string]any{"drawStyle": "line", "fillOpacity": 10, "lineWidth": 1, "showPoints": "never"},
					"thresholds": map[string]any{"mode": "absolute", "steps": []any{
						map[string]any{"color": "green", "value": nil}, map[string]any{"color": "red", "value": 80 + rnd.IntN(20)}}}}},
				"targets":     targets,
				"description": fmt.Sprintf("%s %s %s of the %s %s.", pick(), pick(), pick(), pick(), pick()),
			})
		}
		d, err := json.MarshalIndent(map[string]any{"uid": fmt.Sprintf("%032x", rnd.Uint64()), "title": "Kubernetes / " + pick() + " / " + pick(),
			"tags": []string{"kubernetes-mixin", pick()}, "panels": panels}, "", "  ")
		if err != nil {
			panic(err)
		}
		file := fmt.Sprintf("files/dashboards/%03d.json", i)
		r.Chart.Files = append(r.Chart.Files, &common.File{Name: file, Data: d})
		r.Chart.Templates = append(r.Chart.Templates, &common.File{Name: fmt.Sprintf("templates/dashboard-%03d.yaml", i),
			Data: []byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dashboard\ndata:\n  dashboard.json: |-\n{{ .Files.Get \"" + file + "\" | indent 4 }}\n")})
		manifest.WriteString(fmt.Sprintf("---\n# Source: demo/templates/dashboard-%03d.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dashboard-%03d\ndata:\n  dashboard.json: |-\n", i, i))
		for _, line := range strings.Split(string(d), "\n") {
			manifest.WriteString("    " + line + "\n")
		}
	}
	for i := range rules {
		var b strings.Builder
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules-%03d\ndata:\n  rules.yaml: |-\n    groups:\n", i)
		for range 6 {
			fmt.Fprintf(&b, "    - name: %s.%s.rules\n      rules:\n", pick(), pick())
			for range 6 + rnd.IntN(6) {
				fmt.Fprintf(&b, "      - alert: %s%s\n        annotations:\n          description: '%s %s %s on the %s {{ .Release.Name }}.'\n",
					pick(), pick(), pick(), pick(), pick(), pick())
				fmt.Fprintf(&b, "          runbook_url: https://runbooks.example/%s/%s\n          summary: %s %s %s.\n", pick(), pick(), pick(), pick(), pick())
				fmt.Fprintf(&b, "        expr: |-\n          %s > %d\n        for: %dm\n        labels:\n          severity: %s\n",
					expr(), rnd.IntN(100), 1+rnd.IntN(15), []string{"warning", "critical", "info"}[rnd.IntN(3)])
			}
		}
		r.Chart.Templates = append(r.Chart.Templates, &common.File{Name: fmt.Sprintf("templates/rules-%03d.yaml", i), Data: []byte(b.String())})
		manifest.WriteString(strings.ReplaceAll(b.String(), "{{ .Release.Name }}", "records"))
	}
	r.Manifest = manifest.String()
	return r
}

// largeRecord and hugeRecord are the records of bench's large-record and huge-record.
func largeRecord(version int) *Release { return dashboards(version, 38, 26) }
func hugeRecord(version int) *Release  { return dashboards(version, 150, 100) }

// cpuTime reports, from when it is called to when what it returns is, the CPU time the process
// took per operation of b: a measure that the machine's other work does not inflate as it does
// the time per operation.
func cpuTime(b *testing.B) func() {
	used := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			b.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	start := used()
	return func() { b.ReportMetric(float64(used()-start)/float64(b.N), "cpu-ns/op") }
}

// benchmarkWrites measures what an install writes of rel's record: its check (Fits), the
// pending record, and the deployed one, on the encoder of one operation.
func benchmarkWrites(b *testing.B, rel *Release) {
	b.ReportAllocs()
	defer cpuTime(b)()
	for b.Loop() {
		c := NewEncoder()
		rel.Info.Status = StatusPendingInstall
		if err := c.Fits(rel); err != nil {
			b.Fatal(err)
		}
		if _, err := c.encode(rel); err != nil {
			b.Fatal(err)
		}
		rel.Info.Status = StatusDeployed
		if _, err := c.encode(rel); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWritesLargeRecord(b *testing.B) { benchmarkWrites(b, largeRecord(1)) }
func BenchmarkWritesHugeRecord(b *testing.B)  { benchmarkWrites(b, hugeRecord(1)) }

// benchmarkEncode measures encoding rel's record once, on an encoder of its own.
func benchmarkEncode(b *testing.B, rel *Release) {
	b.ReportAllocs()
	defer cpuTime(b)()
	for b.Loop() {
		if _, err := NewEncoder().encode(rel); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeLargeRecord(b *testing.B) { benchmarkEncode(b, largeRecord(1)) }
func BenchmarkEncodeHugeRecord(b *testing.B)  { benchmarkEncode(b, hugeRecord(1)) }

// benchmarkDecode measures reading rel's record back: the record object decoded, and its parts
// joined when it has some.
func benchmarkDecode(b *testing.B, rel *Release) {
	e, err := NewEncoder().encode(rel)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("record object %s, %d parts, %s in all", Bytes(len(e.data)), len(e.parts), Bytes(e.size()))
	ctx := context.Background()
	b.ReportAllocs()
	defer cpuTime(b)()
	for b.Loop() {
		got, err := decode(ctx, DefaultExpansion(), "Secret/ns/records", []byte(e.data))
		if err != nil {
			b.Fatal(err)
		}
		if len(e.parts) > 0 {
			if err := join(ctx, DefaultExpansion(), "Secret/ns/records", got, e.parts, e.sum); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeLargeRecord(b *testing.B) { benchmarkDecode(b, largeRecord(1)) }
func BenchmarkDecodeHugeRecord(b *testing.B)  { benchmarkDecode(b, hugeRecord(1)) }
