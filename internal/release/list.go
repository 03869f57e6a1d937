package release

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// ListOptions select and order releases as Helm's list does.
type ListOptions struct {
	// AllNamespaces lists the releases of every namespace, not only the store's.
	AllNamespaces bool
	// Statuses keeps releases whose newest revision has one of these statuses; empty means
	// Statuses(), Helm's default (every status but unknown). StatusUnknown matches any status
	// Helm does not define.
	Statuses []Status
	// Filter is a regular expression a release's name must match.
	Filter string
	// Selector is a label selector the record's labels must match.
	Selector string
	// ByDate sorts by the time of the last deployment, oldest first, instead of by name.
	ByDate bool
	// Reverse reverses the order.
	Reverse bool
	// Max is the largest number of releases returned; 0 means no limit.
	Max int
	// Offset is the index of the first release returned.
	Offset int
}

// Select applies opts to every recorded revision of some releases: it keeps the newest revision of
// each release (of each superseded revision when only superseded ones are asked for), then those
// whose status, name and labels match, sorted and paged. It mirrors Helm's list action.
func Select(revisions []*Release, opts ListOptions) ([]*Release, error) {
	var filter *regexp.Regexp
	if opts.Filter != "" {
		var err error
		if filter, err = regexp.Compile(opts.Filter); err != nil {
			return nil, fmt.Errorf("filter %q: %w", opts.Filter, err)
		}
	}
	selector, err := labels.Parse(opts.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector %q: %w", opts.Selector, err)
	}
	statuses := opts.Statuses
	if len(statuses) == 0 {
		statuses = Statuses()
	}

	var rels []*Release
	for _, r := range revisions {
		if r.Info != nil && (filter == nil || filter.MatchString(r.Name)) {
			rels = append(rels, r)
		}
	}
	// Superseded revisions are never the newest: Helm skips this step when only they are asked for.
	if !(len(statuses) == 1 && statuses[0] == StatusSuperseded) {
		rels = newest(rels)
	}
	rels = slices.DeleteFunc(rels, func(r *Release) bool {
		return !statusIn(r.Info.Status, statuses) || !selector.Matches(labels.Set(r.Labels))
	})
	sortReleases(rels, opts.ByDate, opts.Reverse)

	if opts.Offset >= len(rels) {
		return []*Release{}, nil
	}
	last := len(rels)
	if opts.Max > 0 {
		last = min(opts.Offset+opts.Max, last)
	}
	return rels[opts.Offset:last], nil
}

// newest keeps the newest revision of each release (by namespace and name).
func newest(rels []*Release) []*Release {
	type key struct{ namespace, name string }
	latest := map[key]*Release{}
	for _, r := range rels {
		k := key{r.Namespace, r.Name}
		if l, ok := latest[k]; !ok || r.Version > l.Version {
			latest[k] = r
		}
	}
	out := make([]*Release, 0, len(latest))
	for _, r := range latest {
		out = append(out, r)
	}
	return out
}

// statusIn reports whether status is one of statuses; a status Helm does not define counts as unknown.
func statusIn(status Status, statuses []Status) bool {
	if !slices.Contains(Statuses(), status) {
		status = StatusUnknown
	}
	return slices.Contains(statuses, status)
}

// sortReleases sorts by name (Helm's default) or by last deployment, with namespace as tie-breaker.
func sortReleases(rels []*Release, byDate, reverse bool) {
	slices.SortStableFunc(rels, func(a, b *Release) int {
		c := 0
		if byDate {
			c = cmp.Compare(a.Info.LastDeployed.Unix(), b.Info.LastDeployed.Unix())
		}
		if c == 0 {
			c = cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace))
		}
		if reverse {
			return -c
		}
		return c
	})
}
