package resource

// Number reads a number of an object's content as a float64, whatever Go type holds it: decoded
// JSON and YAML give int64 and float64, objects built in Go int, int32 and float32. Anything else,
// a numeric string included, is not a number.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
