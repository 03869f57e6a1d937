package release

import (
	"context"
	"maps"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// listMemo keeps what a store listed, by namespace and selector, while the store remembers
// (see HelmStore.RememberLists): the store's own writes and deletes change the lists kept as
// they change the objects; a write that fails forgets them all.
type listMemo struct {
	mu sync.Mutex
	// on says lists are kept; lists are those kept.
	on    int
	lists map[[2]string][]item
	// writes counts the writes begun: a list answered while one was under way is not kept.
	writes int
}

// RememberLists makes s answer a list of record objects it listed before with what that list
// answered, changed by what s wrote and deleted since as the API server answered those (a write
// that fails forgets every list kept), until forget is called. An operation calls it once it holds
// its release's lease, under which no other berth writes the release's records: the newest record
// read to decide, read again to install, and read again to prune the history is then listed once,
// not three times, and the records an upgrade supersedes or an uninstall deletes after writing
// its own are not read again. The calls nest: lists are kept until every forget is called.
func (s *HelmStore) RememberLists() (forget func()) {
	m := s.memo
	m.mu.Lock()
	m.on++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.on--; m.on == 0 {
				m.lists = nil
			}
		})
	}
}

// remembering is objs, whose lists m keeps while it remembers, and whose writes change them.
func (m *listMemo) remembering(namespace string, objs recordObjects) recordObjects {
	list, put, del := objs.list, objs.put, objs.delete
	objs.list = func(ctx context.Context, selector string) ([]item, error) {
		k := [2]string{namespace, selector}
		m.mu.Lock()
		kept, ok := m.lists[k]
		on, writes := m.on > 0, m.writes
		m.mu.Unlock()
		if ok {
			return cloneItems(kept), nil
		}
		got, err := list(ctx, selector)
		if err != nil || !on {
			return got, err
		}
		m.mu.Lock()
		if m.on > 0 && m.writes == writes {
			if m.lists == nil {
				m.lists = map[[2]string][]item{}
			}
			m.lists[k] = cloneItems(got)
		}
		m.mu.Unlock()
		return got, nil
	}
	objs.put = func(ctx context.Context, o newItem, update bool) (*item, error) {
		m.begin()
		it, err := put(ctx, o, update)
		m.wrote(namespace, o.name, it, err)
		return it, err
	}
	objs.delete = func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		m.begin()
		err := del(ctx, name, opts)
		if apierrors.IsNotFound(err) {
			m.wrote(namespace, name, nil, nil) // gone all the same
		} else {
			m.wrote(namespace, name, nil, err)
		}
		return err
	}
	return objs
}

// begin notes a write under way: a list answered meanwhile may not show it.
func (m *listMemo) begin() {
	m.mu.Lock()
	m.writes++
	m.mu.Unlock()
}

// wrote changes the lists kept as the write of object name in namespace changed it: it is now
// it, or gone when it is nil. A write that failed (err) may or may not have changed it: every
// list is forgotten.
func (m *listMemo) wrote(namespace, name string, it *item, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.lists = nil
		return
	}
	for k, list := range m.lists {
		if k[0] != namespace && k[0] != "" {
			continue
		}
		list = slices.DeleteFunc(list, func(kept item) bool { return kept.namespace == namespace && kept.name == name })
		if it != nil {
			sel, perr := labels.Parse(k[1])
			if perr != nil {
				delete(m.lists, k)
				continue
			}
			if sel.Matches(labels.Set(it.labels)) {
				list = append(list, cloneItems([]item{*it})...)
			}
		}
		m.lists[k] = list
	}
}

// cloneItems copies list and the labels and annotations of its items, which readers may change.
func cloneItems(list []item) []item {
	out := slices.Clone(list)
	for i := range out {
		out[i].labels = maps.Clone(out[i].labels)
		out[i].annotations = maps.Clone(out[i].annotations)
	}
	return out
}

// lookup answers a read of the record object key of release from the list of the release's
// records kept, when one is: the object (nil when the list has none of that name) and true.
func (m *listMemo) lookup(namespace, release, key string) (*item, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	list, ok := m.lists[[2]string{namespace, recordsSelector(release)}]
	if !ok {
		return nil, false
	}
	for i := range list {
		if list[i].name == key {
			it := cloneItems(list[i : i+1])[0]
			return &it, true
		}
	}
	return nil, true
}
