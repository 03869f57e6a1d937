package release

import "sync"

// recent keeps the two values last made, by key, the one last used first: what the records of one
// operation (its check, pending, superseded and deployed record) make alike is made once.
type recent[K comparable, V any] struct {
	mu   sync.Mutex
	kept [2]*keptValue[K, V]
}

type keptValue[K comparable, V any] struct {
	key K
	val V
}

// get is the value kept for key.
func (r *recent[K, V]) get(key K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range r.kept {
		if k != nil && k.key == key {
			r.kept[0], r.kept[i] = k, r.kept[0]
			return k.val, true
		}
	}
	var zero V
	return zero, false
}

// put keeps val for key, forgetting the value used least recently.
func (r *recent[K, V]) put(key K, val V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kept[1], r.kept[0] = r.kept[0], &keptValue[K, V]{key: key, val: val}
}
