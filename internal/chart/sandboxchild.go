package chart

import (
	"bufio"
	"context"
	"flag"
	"io"
	"runtime"
	"runtime/debug"
)

// rendererProcs is how many threads the renderer runs Go code on: one template, and the
// garbage collector beside it.
const rendererProcs = 2

// ServeRenderer is the renderer a Sandbox runs (RendererCommand): it limits itself as args say
// (--memory, --cpu), then reads one request from in, runs its template step and writes the
// answer to out. A template error is an answer; an error returned is the renderer's own.
func ServeRenderer(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet(RendererCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	memory := fs.Int64("memory", 0, "")
	cpu := fs.Duration("cpu", 0, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runtime.GOMAXPROCS(rendererProcs)
	// The kernel bounds the renderer's address space (setLimits), which the Go runtime takes in
	// arenas of 64 MiB: the collector keeps the heap within half the budget, so that the arena
	// a collection could have spared is never the one the kernel refuses.
	debug.SetMemoryLimit(*memory / 2)
	if err := setLimits(*memory, *cpu); err != nil {
		return err
	}
	step, err := decodeRequest(in, *memory)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	files, err := step.Run(context.Background())
	if err != nil {
		return writeError(w, err)
	}
	return writeFiles(w, files)
}
