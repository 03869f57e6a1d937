package release

import "testing"

// TestRecentForgetsTheLeastUsed: of two kept values, a third forgets the one used least recently.
func TestRecentForgetsTheLeastUsed(t *testing.T) {
	var r recent[string, int]
	r.put("a", 1)
	r.put("b", 2)
	if v, ok := r.get("a"); !ok || v != 1 {
		t.Fatalf("get(a) = %d, %v; want 1, true", v, ok)
	}
	r.put("c", 3)
	if _, ok := r.get("b"); ok {
		t.Error("b, used least recently, is still kept")
	}
	for key, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := r.get(key); !ok || v != want {
			t.Errorf("get(%s) = %d, %v; want %d, true", key, v, ok, want)
		}
	}
}
