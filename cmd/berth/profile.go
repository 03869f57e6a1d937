package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// profileEnv names a directory: when set, berth writes a CPU profile of its run (cpu.pprof) and a
// heap profile at its end (heap.pprof) there, for `go tool pprof`.
const profileEnv = "BERTH_PROFILE_DIR"

// startProfiles starts the profiles profileEnv asks for and returns what writes them.
func startProfiles() func() {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth: %s: %v\n", profileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		cpu.Close()
		heap, err := os.Create(filepath.Join(dir, "heap.pprof"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "berth: %s: %v\n", profileEnv, err)
			return
		}
		defer heap.Close()
		runtime.GC()
		pprof.Lookup("allocs").WriteTo(heap, 0)
	}
}
