package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/berthdev/berth/internal/chart"
)

// profileEnv names a directory: when set, berth writes a CPU profile of its run (cpu.pprof), a
// heap profile at its end (heap.pprof: every allocation, and what was still live), and the heap
// as the garbage collector found it at its largest (peak.pprof: what held memory at the peak)
// there, for `go tool pprof`.
const profileEnv = "BERTH_PROFILE_DIR"

// peakInterval is how often the live heap is read, to find its peak.
const peakInterval = 5 * time.Millisecond

// startProfiles starts the profiles profileEnv asks for and returns what writes them. A
// renderer (chart.RendererCommand), which inherits its parent's environment, writes none: its
// profiles would overwrite its parent's, the controller's or the CLI's whose renders it runs.
func startProfiles() func() {
	dir := os.Getenv(profileEnv)
	if dir == "" || len(os.Args) > 1 && os.Args[1] == chart.RendererCommand {
		return func() {}
	}
	// One sample every 64 KiB allocated, not 512: the peak's profile then names what holds a
	// few MiB.
	runtime.MemProfileRate = 64 << 10
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth: %s: %v\n", profileEnv, err)
		return func() {}
	}
	stopPeak := watchPeak(filepath.Join(dir, "peak.pprof"))
	return func() {
		stopPeak()
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

// watchPeak writes the heap profile to path each time a garbage collection has found more of
// the heap live than any before it: the profile's inuse figures are then those of the largest
// live heap of the run. The returned func stops it.
func watchPeak(path string) (stop func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var peak uint64
		tick := time.NewTicker(peakInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak {
				peak = live
				if f, err := os.Create(path); err == nil {
					pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
