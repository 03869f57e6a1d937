package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Paging of the release list: a page holds DefaultPageSize releases unless it asks for another
// number, at most MaxPageSize.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// releaseRow is one release of the list: the newest revision of its record, as berth list shows it.
type releaseRow struct {
	Name       string    `json:"name"`
	Namespace  string    `json:"namespace"`
	Revision   int       `json:"revision"`
	Updated    time.Time `json:"updated,omitzero"`
	Status     string    `json:"status"`
	Chart      string    `json:"chart"`
	AppVersion string    `json:"appVersion"`
}

// releasePage is one page of the release list, and how many releases match in all.
type releasePage struct {
	Items  []releaseRow `json:"items"`
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Limit  int          `json:"limit"`
	// Statuses counts the matching releases by status, for the filters.
	Statuses map[string]int `json:"statuses"`
}

// store is the release store of namespace ("" for every namespace's, to list) of the request's
// context.
func (s *Server) store(c *kube.Clients, namespace string) (release.Store, error) {
	return release.Open(s.opts.Driver, c.Client, namespace, release.DefaultExpansion(), nil)
}

// releases lists the newest revision of every release the user may read, filtered (namespace,
// q: a part of the name, namespace or chart, status), sorted (sort=name or updated) and paged
// (offset, limit) on the server.
func (s *Server) releases(r *request) (any, error) {
	q := r.URL.Query()
	offset, limit, err := paging(q.Get("offset"), q.Get("limit"))
	if err != nil {
		return nil, err
	}
	ns := q.Get("namespace")
	store, err := s.store(r.clients, ns)
	if err != nil {
		return nil, err
	}
	rels, err := store.List(r.ctx, release.ListOptions{AllNamespaces: ns == "", ByDate: q.Get("sort") == "updated", Reverse: q.Get("sort") == "updated"})
	if err != nil {
		return nil, err
	}
	search := strings.ToLower(strings.TrimSpace(q.Get("q")))
	var statuses []string
	if st := q.Get("status"); st != "" {
		statuses = strings.Split(st, ",")
	}
	page := releasePage{Items: []releaseRow{}, Offset: offset, Limit: limit, Statuses: map[string]int{}}
	var rows []releaseRow
	for _, rel := range rels {
		row := rowOf(rel)
		if search != "" && !strings.Contains(strings.ToLower(row.Namespace+"/"+row.Name+" "+row.Chart), search) {
			continue
		}
		page.Statuses[row.Status]++
		if len(statuses) > 0 && !slices.Contains(statuses, row.Status) {
			continue
		}
		rows = append(rows, row)
	}
	page.Total = len(rows)
	if offset < len(rows) {
		page.Items = rows[offset:min(offset+limit, len(rows))]
	}
	return page, nil
}

// paging reads offset and limit.
func paging(offset, limit string) (int, int, error) {
	o, l := 0, DefaultPageSize
	var err error
	if offset != "" {
		if o, err = strconv.Atoi(offset); err != nil || o < 0 {
			return 0, 0, &InputError{Msg: fmt.Sprintf("offset %q: want a number of releases, 0 or more", offset)}
		}
	}
	if limit != "" {
		if l, err = strconv.Atoi(limit); err != nil || l < 1 || l > MaxPageSize {
			return 0, 0, &InputError{Msg: fmt.Sprintf("limit %q: want a number of releases from 1 to %d", limit, MaxPageSize)}
		}
	}
	return o, l, nil
}

func rowOf(rel *release.Release) releaseRow {
	row := releaseRow{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, Chart: release.ChartName(rel.Chart), AppVersion: release.AppVersion(rel.Chart)}
	if rel.Info != nil {
		row.Status, row.Updated = rel.Info.Status.String(), rel.Info.LastDeployed
	}
	return row
}

// healthView is how a release's objects stand now: how many are ready, and the worst state.
type healthView struct {
	State   string `json:"state"`
	Ready   int    `json:"ready"`
	Total   int    `json:"total"`
	Message string `json:"message,omitempty"`
}

// maxHealth bounds the releases one health request reads.
const maxHealth = 100

// health reads the live objects of the releases named (r=NAMESPACE/NAME, repeated) and says how
// each stands: Ready when every object is, else the worst state found.
func (s *Server) health(r *request) (any, error) {
	names := r.URL.Query()["r"]
	if len(names) > maxHealth {
		return nil, &InputError{Msg: fmt.Sprintf("%d releases asked for: at most %d at once", len(names), maxHealth)}
	}
	out := make(map[string]healthView, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	c := cluster.New(r.clients.Dynamic, r.clients.Mapper)
	for _, key := range names {
		ns, name, ok := strings.Cut(key, "/")
		if !ok || ns == "" || name == "" {
			return nil, &InputError{Msg: fmt.Sprintf("release %q: want NAMESPACE/NAME", key)}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			h := s.healthOf(r.ctx, r.clients, c, ns, name)
			mu.Lock()
			out[key] = h
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

func (s *Server) healthOf(ctx context.Context, clients *kube.Clients, c *cluster.Client, ns, name string) healthView {
	store, err := s.store(clients, ns)
	if err != nil {
		return healthView{State: "Unknown", Message: err.Error()}
	}
	rel, err := store.Last(ctx, name)
	if err != nil {
		return healthView{State: "Unknown", Message: err.Error()}
	}
	if rel.Info != nil && rel.Info.Status == release.StatusUninstalled {
		return healthView{State: "Uninstalled"}
	}
	objs, err := liveObjects(ctx, c, rel)
	return summarize(objs, err)
}

// summarize says how a release's objects stand: the worst state of any.
func summarize(objs []objectView, err error) healthView {
	h := healthView{State: string(readiness.Ready), Total: len(objs)}
	rank := map[string]int{string(readiness.Ready): 0, string(readiness.InProgress): 1, stateMissing: 2, stateUnknown: 2, string(readiness.Failed): 3}
	for _, o := range objs {
		if o.State == string(readiness.Ready) {
			h.Ready++
		} else if h.Message == "" {
			h.Message = o.Kind + "/" + o.Name + ": " + o.Message
		}
		if rank[o.State] > rank[h.State] {
			h.State = o.State
		}
	}
	if err != nil {
		h.State, h.Message = stateUnknown, err.Error()
	}
	return h
}

// revisionView is one revision of a release's history.
type revisionView struct {
	Revision     int       `json:"revision"`
	Status       string    `json:"status"`
	Description  string    `json:"description"`
	Chart        string    `json:"chart"`
	AppVersion   string    `json:"appVersion"`
	Updated      time.Time `json:"updated,omitzero"`
	ValuesChange bool      `json:"valuesChanged"`
}

// releaseView is one release: its newest revision, its history, its hooks and what is under way.
type releaseView struct {
	releaseRow
	Description  string         `json:"description"`
	ChartVersion string         `json:"chartVersion"`
	Notes        string         `json:"notes,omitempty"`
	History      []revisionView `json:"history"`
	Hooks        []hookView     `json:"hooks"`
	Operation    *operationView `json:"operation,omitempty"`
	// Kept are the objects an uninstall keeps (helm.sh/resource-policy: keep).
	Kept []string `json:"kept,omitempty"`
}

// release reads one release (namespace, name): its history, hooks and the operation under way.
func (s *Server) release(r *request) (any, error) {
	ns, name, err := releaseKey(r)
	if err != nil {
		return nil, err
	}
	store, err := s.store(r.clients, ns)
	if err != nil {
		return nil, err
	}
	history, err := store.History(r.ctx, name)
	if err != nil {
		return nil, err
	}
	if len(history) == 0 {
		return nil, &release.NotFoundError{Name: name, Namespace: ns, Err: release.ErrNotFound}
	}
	slices.SortFunc(history, func(a, b *release.Release) int { return cmp.Compare(a.Version, b.Version) })
	last := history[len(history)-1]
	v := releaseView{releaseRow: rowOf(last), History: make([]revisionView, 0, len(history))}
	if last.Info != nil {
		v.Description, v.Notes = last.Info.Description, last.Info.Notes
	}
	if last.Chart != nil && last.Chart.Metadata != nil {
		v.ChartVersion = last.Chart.Metadata.Version
	}
	for i, rel := range slices.Backward(history) {
		rv := revisionView{Revision: rel.Version, Chart: release.ChartName(rel.Chart), AppVersion: release.AppVersion(rel.Chart)}
		if rel.Info != nil {
			rv.Status, rv.Description, rv.Updated = rel.Info.Status.String(), rel.Info.Description, rel.Info.LastDeployed
		}
		rv.ValuesChange = i > 0 && !reflect.DeepEqual(normalValues(rel.Config), normalValues(history[i-1].Config))
		v.History = append(v.History, rv)
	}
	c := cluster.New(r.clients.Dynamic, r.clients.Mapper)
	v.Hooks = s.hooks(r.ctx, r.clients, last)
	v.Kept = keptObjects(c, last)
	v.Operation, err = inspect(r.ctx, store, name)
	if err != nil {
		v.Operation = &operationView{Error: err.Error()}
	}
	return v, nil
}

// normalValues treats no values and empty values alike.
func normalValues(v map[string]any) map[string]any {
	if len(v) == 0 {
		return nil
	}
	return v
}

// releaseKey reads the namespace and name a request names.
func releaseKey(r *request) (string, string, error) {
	q := r.URL.Query()
	ns, name := q.Get("namespace"), q.Get("name")
	if ns == "" || name == "" {
		return "", "", &InputError{Msg: "namespace and name of the release are needed"}
	}
	return ns, name, nil
}

// keptObjects are the objects of a revision that carry helm.sh/resource-policy: keep.
func keptObjects(c *cluster.Client, rel *release.Release) []string {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil
	}
	var out []string
	for _, obj := range objs {
		if resource.IsKept(obj) {
			_ = c.Normalize(obj, rel.Namespace)
			out = append(out, resource.IdentityOf(obj).String())
		}
	}
	return out
}

// revisionOf reads revision version of a release; 0 is the newest.
func revisionOf(ctx context.Context, store release.Store, name string, version int) (*release.Release, error) {
	if version == 0 {
		return store.Last(ctx, name)
	}
	rel, err := store.Get(ctx, name, version)
	if err != nil && errors.Is(err, release.ErrNotFound) {
		return nil, &InputError{Msg: fmt.Sprintf("release %s/%s has no revision %d", store.Namespace(), name, version)}
	}
	return rel, err
}
