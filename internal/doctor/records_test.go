package doctor

import (
	"context"
	"errors"
	"testing"

	"github.com/berthdev/berth/internal/release"
)

// TestRecordFindings: a release whose newest complete record is split, or whose record object is
// near the most an object may hold, is a warning that says its size and its history's; a record
// whose parts are missing is a warning whose fix depends on whether it is the newest; parts no
// record names are a warning whose fix deletes exactly them; what an operation holds is not
// judged; --release keeps to its release.
func TestRecordFindings(t *testing.T) {
	split := func(v int) release.RecordFootprint {
		return release.RecordFootprint{Version: v, Status: release.StatusSuperseded, Object: release.Key("big", v),
			Bytes: 900 << 10, Parts: 3, PartBytes: 2200 << 10}
	}
	var bigRecords []release.RecordFootprint
	for v := 1; v <= 10; v++ {
		bigRecords = append(bigRecords, split(v))
	}
	one := func(v, bytes int, status release.Status) release.RecordFootprint {
		return release.RecordFootprint{Version: v, Status: status, Bytes: bytes}
	}
	incomplete := func(name string, v int, status release.Status) release.RecordFootprint {
		return release.RecordFootprint{Version: v, Status: status, Object: release.Key(name, v), Bytes: 900 << 10,
			Parts: 4, PartBytes: 3 << 20, Missing: 1, Incomplete: true}
	}
	fp := &release.Footprints{
		Releases: []release.Footprint{
			{Namespace: "ns", Name: "big", Kind: "Secret", Records: bigRecords},
			{Namespace: "ns", Name: "broken", Kind: "Secret", Records: []release.RecordFootprint{
				incomplete("broken", 1, release.StatusSuperseded), one(2, 1000, release.StatusDeployed), incomplete("broken", 3, release.StatusPendingUpgrade),
			}},
			{Namespace: "ns", Name: "busy", Kind: "Secret", Records: []release.RecordFootprint{incomplete("busy", 1, release.StatusPendingInstall)}},
			{Namespace: "ns", Name: "near", Kind: "ConfigMap", Records: []release.RecordFootprint{one(1, 900<<10, release.StatusDeployed)}},
			{Namespace: "ns", Name: "small", Kind: "Secret", Records: []release.RecordFootprint{one(1, 500<<10, release.StatusDeployed)}},
		},
		Orphans: []release.OrphanParts{
			{Namespace: "ns", Release: "busy", Version: 1, Kind: "Secret", Set: "0123456789abcdef", Objects: []string{"p0"}, Bytes: 10},
			{Namespace: "ns", Release: "gone", Version: 2, Kind: "Secret", Set: "0123456789abcdef", RecordGone: true, Bytes: 3 << 20,
				Objects: []string{"sh.helm.release.v1.gone.v2.0123456789.0", "sh.helm.release.v1.gone.v2.0123456789.1", "sh.helm.release.v1.gone.v2.0123456789.2"}},
		},
	}
	c := Cluster{
		Footprints: func(_ context.Context, ns string) (*release.Footprints, error) {
			if ns != "ns" {
				t.Errorf("footprints of namespace %q, want ns", ns)
			}
			return fp, nil
		},
		LeaseHolder: func(_ context.Context, _, name string) (*release.Holder, bool, error) {
			return nil, name == "busy", nil
		},
	}
	r := &run{Cluster: c, opts: Options{Namespace: "ns"}}
	r.records(t.Context())
	want := []Finding{
		{Severity: Warning, Check: "record-size", Object: helmRelease("ns", "big"),
			Problem: "the record of revision 10 takes 3.0 MiB, split: 900 KiB in its Secret and 2.1 MiB in 3 parts; its 10 revisions kept hold 30.3 MiB in all",
			Breaks: "helm reads its Secret alone, without the chart's templates and files (and the manifest, if it moved too), which only berth reads; " +
				"a next revision whose record takes more than 16.0 MiB in all is refused; every revision kept holds its own record in etcd",
			Fix: "keep fewer revisions (--history-max of berth upgrade and rollback, spec.upgrade.historyMax of a berth.dev Release), " +
				"and keep large files out of the chart: its templates, files and crds/ are in every revision's record"},
		{Severity: Warning, Check: "incomplete-record", Object: helmRelease("ns", "broken"),
			Problem: "the record of revision 1 (superseded) is incomplete: 1 of its 4 parts is missing",
			Breaks:  "berth never reads revision 1 as a release (its status, history and rollback skip it); helm reads its Secret alone, as superseded",
			Fix:     "delete its record object, which nothing reads as a release (kubectl delete secret sh.helm.release.v1.broken.v1 -n ns), or let --history-max prune it"},
		{Severity: Warning, Check: "incomplete-record", Object: helmRelease("ns", "broken"),
			Problem: "the record of revision 3 (pending-upgrade) is incomplete: 1 of its 4 parts is missing",
			Breaks:  "berth never reads revision 3 as a release (its status, history and rollback skip it); helm reads its Secret alone, as pending-upgrade",
			Fix:     "berth recover broken -n ns, or the release's next berth operation, which writes revision 3 again"},
		{Severity: Warning, Check: "record-size", Object: helmRelease("ns", "near"),
			Problem: "the record of revision 1 takes 900 KiB in its ConfigMap, 87% of the 1.0 MiB one object may hold",
			Breaks: "a next revision whose record does not fit in one ConfigMap is split: its chart's templates and files (and its manifest, if it must) " +
				"move to parts that helm does not read; one that takes more than 16.0 MiB in all is refused; every revision kept holds its own record in etcd",
			Fix: "keep fewer revisions (--history-max of berth upgrade and rollback, spec.upgrade.historyMax of a berth.dev Release), " +
				"and keep large files out of the chart: its templates, files and crds/ are in every revision's record"},
		{Severity: Warning, Check: "orphan-parts", Object: helmRelease("ns", "gone"),
			Problem: "3 parts of the record of revision 2 (Secret sh.helm.release.v1.gone.v2.0123456789.0, sh.helm.release.v1.gone.v2.0123456789.1 and 1 more) hold 3.0 MiB, and their record object sh.helm.release.v1.gone.v2 is gone",
			Breaks:  "nothing reads them; they hold 3.0 MiB in etcd until they are deleted",
			Fix:     "kubectl delete secret -n ns -l owner=berth,name=gone,version=2,berth.dev/part-set=0123456789abcdef"},
	}
	if len(r.findings) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(r.findings), len(want), r.findings)
	}
	for i, f := range r.findings {
		if f.Footprint != nil && f.Footprint.Name != f.Object.Name {
			t.Errorf("finding %d about %s has the footprint of %s", i, f.Object.Name, f.Footprint.Name)
		}
		if (f.Check == "record-size") != (f.Footprint != nil) {
			t.Errorf("finding %d (%s) has footprint %v", i, f.Check, f.Footprint)
		}
		f.Footprint = nil
		if f != want[i] {
			t.Errorf("finding %d:\n%+v\nwant\n%+v", i, f, want[i])
		}
	}

	// One release: only its findings.
	r = &run{Cluster: c, opts: Options{Namespace: "ns", Release: "near"}}
	r.records(t.Context())
	if len(r.findings) != 1 || r.findings[0].Object.Name != "near" {
		t.Errorf("findings of release near: %+v", r.findings)
	}

	// Records that cannot be listed: a read finding.
	c.Footprints = func(context.Context, string) (*release.Footprints, error) {
		return nil, errors.New("the API server is gone")
	}
	r = &run{Cluster: c, opts: Options{Namespace: "ns"}}
	r.records(t.Context())
	if len(r.findings) != 1 || r.findings[0].Check != "read" {
		t.Errorf("findings when the records cannot be listed: %+v", r.findings)
	}
}
