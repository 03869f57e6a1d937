package release

import (
	"context"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listMemo keeps what a store listed, by namespace and selector, until the store writes or
// deletes an object, or stops remembering (see HelmStore.RememberLists). A list of a release's
// records holds its journal too, which the journals beside the store read from it, and whose
// writes forget it (see Journals.Beside).
type listMemo struct {
	mu sync.Mutex
	// on says lists are kept; lists are those kept.
	on    int
	lists map[[2]string][]item
	// forgotten counts what was forgotten: a list made while something was forgotten (a write
	// under way) is not kept.
	forgotten uint64
}

// RememberLists makes s answer a list of record objects it listed before with what that list
// answered, until it writes or deletes any object (every write forgets every list kept), or
// until forget is called. An operation calls it once it holds its release's lease, under which no
// other berth writes the release's records: the newest record read to decide, read again to
// install, and read again to prune the history is then listed once, not three times. The list
// of a release's records holds its journal too: the journals beside s (Journals.Beside) read it
// from there, not with a request of their own, and their writes forget that list. The calls
// nest: lists are kept until every forget is called.
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

func (m *listMemo) forget() {
	m.mu.Lock()
	m.lists = nil
	m.forgotten++
	m.mu.Unlock()
}

// forgetRelease forgets the list of the records of release in namespace, which holds its
// journal.
func (m *listMemo) forgetRelease(namespace, release string) {
	m.mu.Lock()
	delete(m.lists, [2]string{namespace, recordsSelector(release)})
	m.forgotten++
	m.mu.Unlock()
}

// remembering is objs, whose lists m keeps while it remembers, and whose writes forget them.
func (m *listMemo) remembering(namespace string, objs recordObjects) recordObjects {
	list, put, del := objs.list, objs.put, objs.delete
	objs.list = func(ctx context.Context, selector string) ([]item, error) {
		k := [2]string{namespace, selector}
		m.mu.Lock()
		kept, ok := m.lists[k]
		on, forgotten := m.on > 0, m.forgotten
		m.mu.Unlock()
		if ok {
			return cloneItems(kept), nil
		}
		got, err := list(ctx, selector)
		if err != nil || !on {
			return got, err
		}
		m.mu.Lock()
		if m.on > 0 && m.forgotten == forgotten {
			if m.lists == nil {
				m.lists = map[[2]string][]item{}
			}
			m.lists[k] = cloneItems(got)
		}
		m.mu.Unlock()
		return got, nil
	}
	objs.put = func(ctx context.Context, o newItem, update bool) (*item, error) {
		m.forget()
		defer m.forget()
		return put(ctx, o, update)
	}
	objs.delete = func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		m.forget()
		defer m.forget()
		return del(ctx, name, opts)
	}
	return objs
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
		if list[i].name == key && list[i].isRecord() {
			it := cloneItems(list[i : i+1])[0]
			return &it, true
		}
	}
	return nil, true
}

// journal answers a read of the journal of release from the list of the release's records kept,
// when one is: the journal's Secret (nil when the list has none) and true. A Secret of the
// journal's name that is not of the journal's type is not known from the list: it is read.
func (m *listMemo) journal(namespace, release string) (*item, bool) {
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
		if list[i].name == JournalKey(release) {
			if list[i].typ != JournalSecretType {
				return nil, false
			}
			it := list[i]
			return &it, true
		}
	}
	return nil, true
}
