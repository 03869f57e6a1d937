package doctor

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// nearLimit is the size from which a record object is near the most an object may hold: 80% of
// it.
const nearLimit = release.MaxObjectData * 8 / 10

// records finds, from what the release records take in the cluster (sizes and names only, never
// what they hold): releases whose newest record is near the most one object may hold or already
// split into parts, with what their history holds; records whose parts are missing; and parts no
// record object names. Records and parts of a release an operation holds are being written, and
// are not judged.
func (r *run) records(ctx context.Context) {
	if r.Footprints == nil {
		return
	}
	fp, err := r.Footprints(ctx, r.opts.Namespace)
	if err != nil {
		r.unreadable(corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", r.opts.Namespace, err)
		return
	}
	for i := range fp.Releases {
		f := &fp.Releases[i]
		if r.opts.Release != "" && f.Name != r.opts.Release {
			continue
		}
		r.recordSize(f)
		r.incompleteRecords(ctx, f)
	}
	for i := range fp.Orphans {
		o := &fp.Orphans[i]
		if r.opts.Release != "" && o.Release != r.opts.Release {
			continue
		}
		r.orphanParts(ctx, o)
	}
}

// operating says whether an operation holds the release's lease: what it writes is not yet
// whole.
func (r *run) operating(ctx context.Context, namespace, name string) bool {
	if r.LeaseHolder == nil {
		return false
	}
	_, live, err := r.LeaseHolder(ctx, namespace, name)
	return err == nil && live
}

// helmRelease is the identity of a Helm release.
func helmRelease(namespace, name string) resource.Identity {
	return resource.Identity{Kind: "Release", Namespace: namespace, Name: name}
}

// recordSize finds a release whose newest complete record is split into parts, or whose record
// object holds at least nearLimit bytes.
func (r *run) recordSize(f *release.Footprint) {
	var n *release.RecordFootprint
	for i := len(f.Records) - 1; i >= 0; i-- {
		if !f.Records[i].Incomplete {
			n = &f.Records[i]
			break
		}
	}
	if n == nil || !n.Split() && n.Bytes < nearLimit {
		return
	}
	var problem, breaks string
	if n.Split() {
		problem = fmt.Sprintf("the record of revision %d takes %s, split: %s in its %s and %s in %s",
			n.Version, release.Bytes(n.Size()), release.Bytes(n.Bytes), f.Kind, release.Bytes(n.PartBytes), plural(n.Parts, "part"))
		breaks = fmt.Sprintf("helm reads its %s alone, without the chart's templates and files (and the manifest, if it moved too), which only berth reads; "+
			"a next revision whose record takes more than %s in all is refused", f.Kind, release.Bytes(release.MaxRecordSize))
		if n.Size() >= release.MaxRecordSize*8/10 {
			breaks += fmt.Sprintf(" (this one takes %d%% of that)", n.Size()*100/release.MaxRecordSize)
		}
	} else {
		problem = fmt.Sprintf("the record of revision %d takes %s in its %s, %d%% of the %s one object may hold",
			n.Version, release.Bytes(n.Bytes), f.Kind, n.Bytes*100/release.MaxObjectData, release.Bytes(release.MaxObjectData))
		breaks = fmt.Sprintf("a next revision whose record does not fit in one %s is split: its chart's templates and files (and its manifest, if it must) "+
			"move to parts that helm does not read; one that takes more than %s in all is refused", f.Kind, release.Bytes(release.MaxRecordSize))
	}
	if len(f.Records) > 1 {
		problem += fmt.Sprintf("; its %d revisions kept hold %s in all", len(f.Records), release.Bytes(f.Total()))
	}
	breaks += "; every revision kept holds its own record in etcd"
	r.add(Finding{
		Severity: Warning, Check: "record-size",
		Object:  helmRelease(f.Namespace, f.Name),
		Problem: problem,
		Breaks:  breaks,
		Fix: "keep fewer revisions (--history-max of berth upgrade and rollback, spec.upgrade.historyMax of a berth.dev Release), " +
			"and keep large files out of the chart: its templates, files and crds/ are in every revision's record",
		Footprint: f,
	})
}

// incompleteRecords finds the records of a release whose parts are missing: an operation that
// stopped while it wrote them, or parts deleted by hand.
func (r *run) incompleteRecords(ctx context.Context, f *release.Footprint) {
	newest := f.Newest().Version
	checked, live := false, false
	for _, rec := range f.Records {
		if !rec.Incomplete {
			continue
		}
		if !checked {
			checked, live = true, r.operating(ctx, f.Namespace, f.Name)
		}
		if live {
			return
		}
		problem := fmt.Sprintf("the record of revision %d (%s) is incomplete: %d of its %s %s missing", rec.Version, rec.Status, rec.Missing, plural(rec.Parts, "part"), verb(rec.Missing, "is", "are"))
		if rec.Parts == 0 {
			problem = fmt.Sprintf("the record of revision %d (%s) is incomplete: its %s annotation does not parse", rec.Version, rec.Status, release.PartsAnnotation)
		}
		fix := fmt.Sprintf("berth recover %s -n %s, or the release's next berth operation, which writes revision %d again", f.Name, f.Namespace, rec.Version)
		if rec.Version != newest {
			fix = fmt.Sprintf("delete its record object, which nothing reads as a release (kubectl delete %s %s -n %s), or let --history-max prune it",
				strings.ToLower(f.Kind), rec.Object, f.Namespace)
		}
		r.add(Finding{
			Severity: Warning, Check: "incomplete-record",
			Object:  helmRelease(f.Namespace, f.Name),
			Problem: problem,
			Breaks: fmt.Sprintf("berth never reads revision %d as a release (its status, history and rollback skip it); helm reads its %s alone, as %s",
				rec.Version, f.Kind, rec.Status),
			Fix: fix,
		})
	}
}

// orphanParts finds parts no record object names.
func (r *run) orphanParts(ctx context.Context, o *release.OrphanParts) {
	if r.operating(ctx, o.Namespace, o.Release) {
		return
	}
	record := release.Key(o.Release, o.Version)
	why := fmt.Sprintf("their record object %s names other parts", record)
	if o.RecordGone {
		why = fmt.Sprintf("their record object %s is gone", record)
	}
	r.add(Finding{
		Severity: Warning, Check: "orphan-parts",
		Object: helmRelease(o.Namespace, o.Release),
		Problem: fmt.Sprintf("%s of the record of revision %d (%s %s) hold %s, and %s",
			plural(len(o.Objects), "part"), o.Version, o.Kind, list(o.Objects, 2), release.Bytes(o.Bytes), why),
		Breaks: fmt.Sprintf("nothing reads them; they hold %s in etcd until they are deleted", release.Bytes(o.Bytes)),
		Fix:    fmt.Sprintf("kubectl delete %s -n %s -l %s", strings.ToLower(o.Kind), o.Namespace, o.Selector()),
	})
}
