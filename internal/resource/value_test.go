package resource

import "testing"

func TestNumber(t *testing.T) {
	t.Parallel()
	for _, v := range []any{int64(3), 3, int32(3), 3.0, float32(3)} {
		if n, ok := Number(v); !ok || n != 3 {
			t.Errorf("Number(%T %v) = %v, %v; want 3, true", v, v, n, ok)
		}
	}
	for _, v := range []any{"3", true, nil, []any{3}, map[string]any{}} {
		if n, ok := Number(v); ok {
			t.Errorf("Number(%T %v) = %v, true; want not a number", v, v, n)
		}
	}
}
