package release

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RecordFootprint is what the record of one revision takes in the cluster: its record object
// and, when the record is split, its parts.
type RecordFootprint struct {
	Version int `json:"version"`
	// Status is the revision's status, as the record object's label says.
	Status Status `json:"status"`
	// Object is the name of the record object; Bytes is what its data holds.
	Object string `json:"object"`
	Bytes  int    `json:"bytes"`
	// Parts is how many parts the record object names; PartBytes is what those that exist hold,
	// and Missing how many of them do not exist.
	Parts     int `json:"parts,omitempty"`
	PartBytes int `json:"partBytes,omitempty"`
	Missing   int `json:"missing,omitempty"`
	// Incomplete says the record is never read as a release: parts it names are missing, or
	// its PartsAnnotation (or PartsLabel) does not parse (then Parts is 0).
	Incomplete bool `json:"incomplete,omitempty"`
}

// Size is what the record takes in all: its object's data and its parts.
func (r RecordFootprint) Size() int { return r.Bytes + r.PartBytes }

// Split says the record keeps part of itself in parts.
func (r RecordFootprint) Split() bool { return r.Parts > 0 }

// Footprint is what the records of one release take in the cluster.
type Footprint struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Kind is the kind of the objects that hold the records: Secret or ConfigMap.
	Kind string `json:"kind"`
	// Records are its revisions' records, oldest first.
	Records []RecordFootprint `json:"records"`
}

// Newest is the record of the newest revision.
func (f *Footprint) Newest() RecordFootprint { return f.Records[len(f.Records)-1] }

// Total is what the records of every revision kept take in all.
func (f *Footprint) Total() int {
	n := 0
	for _, r := range f.Records {
		n += r.Size()
	}
	return n
}

// OrphanParts are parts that no record object names: their record object is gone, or it names
// other parts (an update of the record stopped before it deleted the parts it replaced, or
// before it wrote the record object that names the new ones). Nothing reads them.
type OrphanParts struct {
	Namespace string `json:"namespace"`
	// Release and Version are the revision whose record they were written for.
	Release string `json:"release"`
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	// Set is their PartSetLabel.
	Set string `json:"set"`
	// Objects are the names of the parts, in order; Bytes is what they hold.
	Objects []string `json:"objects"`
	Bytes   int      `json:"bytes"`
	// RecordGone says the record object of their revision does not exist.
	RecordGone bool `json:"recordGone,omitempty"`
}

// Selector is the label selector of these parts (and of no other object).
func (o *OrphanParts) Selector() string {
	return "owner=berth,name=" + o.Release + ",version=" + strconv.Itoa(o.Version) + "," + PartSetLabel + "=" + o.Set
}

// Footprints is what the release records of a namespace, or of every namespace, take.
type Footprints struct {
	// Releases are sorted by namespace and name.
	Releases []Footprint `json:"releases"`
	// Orphans are sorted by namespace, release, version and set.
	Orphans []OrphanParts `json:"orphans,omitempty"`
}

// Footprints measures what the records of the store's namespace (of every namespace when
// allNamespaces) take in the cluster, without decoding them: for each revision the bytes of its
// record object, and the parts its record object names, which exist and what they hold. It finds
// the records whose parts are missing and the parts no record object names. It reads with two
// requests, one list of the record objects and one of the parts, however many releases there
// are; the two are not one snapshot, so an operation writing a record meanwhile may show as an
// incomplete record or as orphan parts.
func (s *HelmStore) Footprints(ctx context.Context, allNamespaces bool) (*Footprints, error) {
	namespace := s.namespace
	if allNamespaces {
		namespace = ""
	}
	objs := s.records(namespace)
	records, err := objs.list(ctx, "owner=helm")
	if err != nil {
		return nil, fmt.Errorf("list release records in namespace %q: %w", namespace, err)
	}
	parts, err := objs.list(ctx, "owner=berth,"+PartSetLabel)
	if err != nil {
		return nil, fmt.Errorf("list parts of release records in namespace %q: %w", namespace, err)
	}
	type key struct{ namespace, name string }
	partsByName := map[key]*item{}
	for i := range parts {
		partsByName[key{parts[i].namespace, parts[i].name}] = &parts[i]
	}
	named := map[key]bool{}   // parts some record object names
	recordOf := map[key]int{} // the index of each record object in records, by its name
	releases := map[key]*Footprint{}
	for i := range records {
		it := &records[i]
		recordOf[key{it.namespace, it.name}] = i
		rk := key{it.namespace, it.labels["name"]}
		f := releases[rk]
		if f == nil {
			f = &Footprint{Namespace: rk.namespace, Name: rk.name, Kind: objs.kind}
			releases[rk] = f
		}
		r := RecordFootprint{Version: it.version, Status: Status(it.labels["status"]), Object: it.name, Bytes: len(it.data)}
		if count, sum, ok, err := recordParts(it); ok {
			if err != nil {
				r.Incomplete = true
			}
			r.Parts = count
			for j := range count {
				pk := key{it.namespace, partName(it.name, sum, j)}
				p, ok := partsByName[pk]
				if !ok {
					r.Missing++
					continue
				}
				named[pk] = true
				r.PartBytes += len(p.data)
			}
			r.Incomplete = r.Incomplete || r.Missing > 0
		}
		f.Records = append(f.Records, r)
	}
	out := &Footprints{Releases: make([]Footprint, 0, len(releases))}
	for _, f := range releases {
		slices.SortFunc(f.Records, func(a, b RecordFootprint) int { return cmp.Compare(a.Version, b.Version) })
		out.Releases = append(out.Releases, *f)
	}
	slices.SortFunc(out.Releases, func(a, b Footprint) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	type setKey struct {
		namespace, release string
		version            int
		set                string
	}
	orphans := map[setKey]*OrphanParts{}
	for i := range parts {
		p := &parts[i]
		if named[key{p.namespace, p.name}] {
			continue
		}
		sk := setKey{p.namespace, p.labels["name"], p.version, p.labels[PartSetLabel]}
		o := orphans[sk]
		if o == nil {
			_, exists := recordOf[key{p.namespace, Key(sk.release, sk.version)}]
			o = &OrphanParts{Namespace: sk.namespace, Release: sk.release, Version: sk.version, Kind: objs.kind, Set: sk.set, RecordGone: !exists}
			orphans[sk] = o
		}
		o.Objects = append(o.Objects, p.name)
		o.Bytes += len(p.data)
	}
	for _, o := range orphans {
		// Part i of a set is named after the set and i: by length first, they sort by i.
		slices.SortFunc(o.Objects, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
		out.Orphans = append(out.Orphans, *o)
	}
	slices.SortFunc(out.Orphans, func(a, b OrphanParts) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Release, b.Release),
			cmp.Compare(a.Version, b.Version), cmp.Compare(a.Set, b.Set))
	})
	return out, nil
}
