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
// they change the objects; a write that fails forgets them all. A list of a release's records
// holds its journal too, which the journals beside the store read from it, and whose writes
// make it unknown there (see Journals.Beside).
type listMemo struct {
	mu sync.Mutex
	// on says lists are kept; lists are those kept.
	on    int
	lists map[[2]string][]item
	// forgotten counts the writes begun and what was forgotten: a list made while a write was
	// under way is not kept.
	forgotten uint64
	// journalsUnknown are the lists of a release's records whose journal was written since
	// they were listed: their records still answer a read of one, their journal is read, and
	// the next list of them asks the API server.
	journalsUnknown map[[2]string]bool
}

// RememberLists makes s answer a list of record objects it listed before with what that list
// answered, changed by what s wrote and deleted since as the API server answered those (a write
// that fails forgets every list kept), until forget is called. An operation calls it once it holds
// its release's lease, under which no other berth writes the release's records: the newest record
// read to decide, read again to install, and read again to prune the history is then listed once,
// not three times, and the records an upgrade supersedes or an uninstall deletes after writing
// its own are not read again. The list of a release's records holds its journal too: the
// journals beside s (Journals.Beside) read it from there, not with a request of their own, until
// they write it. The calls nest: lists are kept until every forget is called.
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
				m.lists, m.journalsUnknown = nil, nil
			}
		})
	}
}

// forgetJournal forgets the journal of release in namespace that the list of its records holds,
// for a write of the journal: the records listed are still known.
func (m *listMemo) forgetJournal(namespace, release string) {
	m.mu.Lock()
	k := [2]string{namespace, recordsSelector(release)}
	if _, ok := m.lists[k]; ok {
		if m.journalsUnknown == nil {
			m.journalsUnknown = map[[2]string]bool{}
		}
		m.journalsUnknown[k] = true
	}
	m.forgotten++
	m.mu.Unlock()
}

// remembering is objs, whose lists m keeps while it remembers, and whose writes change them.
func (m *listMemo) remembering(namespace string, objs recordObjects) recordObjects {
	list, put, del := objs.list, objs.put, objs.delete
	objs.list = func(ctx context.Context, selector string) ([]item, error) {
		k := [2]string{namespace, selector}
		m.mu.Lock()
		kept, ok := m.lists[k]
		ok = ok && !m.journalsUnknown[k] // listed anew, to know the journal again
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
			delete(m.journalsUnknown, k)
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
	m.forgotten++
	m.mu.Unlock()
}

// wrote changes the lists kept as the write of object name in namespace changed it: it is now
// it, or gone when it is nil. A write that failed (err) may or may not have changed it: every
// list is forgotten.
func (m *listMemo) wrote(namespace, name string, it *item, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.lists, m.journalsUnknown = nil, nil
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
	k := [2]string{namespace, recordsSelector(release)}
	list, ok := m.lists[k]
	if !ok || m.journalsUnknown[k] {
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
