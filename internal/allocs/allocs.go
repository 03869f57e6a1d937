// Package allocs measures what a call allocates: the tests and fuzz targets that bound what a
// parser of tenant input may cost use it.
package allocs

import "runtime"

// Of is how many bytes of heap f allocates, counting every goroutine's allocations while it
// runs: a test that measures f runs nothing else meanwhile.
func Of(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}
