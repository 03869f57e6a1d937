package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

// session is what an operation needs of the cluster the flags select.
type session struct {
	clients *kube.Clients
	deps    lifecycle.Deps
}

// newSession connects to the cluster and builds an operation's collaborators; progress goes to
// errOut as plain lines.
func newSession(ctx context.Context, cmd *cobra.Command, errOut io.Writer) (*session, error) {
	clients, err := loadClients(ctx, cmd)
	if err != nil {
		return nil, err
	}
	written, err := faultInjection(os.Getenv)
	if err != nil {
		return nil, err
	}
	store, err := storeOf(clients)
	if err != nil {
		return nil, err
	}
	deps := lifecycle.NewDeps(clients, store, release.Self(operationCommand(cmd)), progressFor(errOut))
	deps.Preflight, deps.PreflightAhead = preflightFor(cmd, clients, store, errOut)
	deps.JournalWritten = written
	// A live view shows what hooks write as they run. Plain output does not follow the logs (a
	// failed hook's error ends with its log, and helm.sh/hook-output-log-policy prints them).
	deps.FollowHookLogs = isTerminal(errOut)
	return &session{clients: clients, deps: deps}, nil
}

// operationCommand is the command line of an operation, for its lease and journal.
func operationCommand(cmd *cobra.Command) string {
	return strings.Join(append([]string{cmd.CommandPath()}, cmd.Flags().Args()...), " ")
}

// capabilities are the cluster's, for rendering.
func (s *session) capabilities(ctx context.Context) (*common.Capabilities, error) {
	return lifecycle.Capabilities(ctx, s.clients)
}

// progressPrinter renders the engine's events as plain lines. Events come from concurrent steps:
// one line is written at a time.
func progressPrinter(w io.Writer) func(engine.Event) {
	var mu sync.Mutex
	return func(e engine.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Type {
		case engine.StepStarted:
			fmt.Fprintf(w, "%s: %s\n", e.Step, e.Message)
		case engine.StepFailed:
			fmt.Fprintf(w, "%s: failed after %s\n", e.Step, e.Duration.Round(time.Millisecond))
		case engine.StepDone:
			if strings.HasPrefix(e.Step, string(plan.Watch)+"/") {
				fmt.Fprintf(w, "%s: no regression: every object stayed ready for %s\n", e.Step, e.Duration.Round(time.Second))
			}
		case engine.ObjectChanged:
			fmt.Fprintf(w, "  %s %s\n", e.Object, e.Message)
		case engine.ObjectProgress:
			fmt.Fprintf(w, "  %s: %s\n", e.Object, e.Message)
		case engine.HookStarted:
			fmt.Fprintf(w, "%s hook %s: started\n", e.Step, e.Object)
		case engine.HookDone:
			fmt.Fprintf(w, "%s hook %s: %s in %s\n", e.Step, e.Object, e.Message, e.Duration.Round(time.Millisecond))
		case engine.HookFailed:
			fmt.Fprintf(w, "%s hook %s %s (after %s)\n", e.Step, e.Object, e.Message, e.Duration.Round(time.Millisecond))
		case engine.HookPodFailed:
			fmt.Fprintf(w, "%s hook %s: %s\n", e.Step, e.Object, e.Message)
		case engine.HookLogLine:
			fmt.Fprintf(w, "  %s %s | %s\n", e.Object.Name, e.Source, e.Message)
		case engine.HookLogs:
			fmt.Fprintf(w, "%s hook %s: output (helm.sh/hook-output-log-policy):%s\n", e.Step, e.Object, e.Message)
		}
	}
}

// waitFlag is Helm v4's --wait, with the strategy HIP-0025 adds: given alone it waits
// ("watcher"); "legacy" and "true" wait too; "ordered" applies the release in the batches its
// chart declares, each waited for before the next; "hookOnly" and "false" do not wait.
type waitFlag struct{ w *lifecycle.WaitOptions }

func (f waitFlag) String() string {
	switch {
	case f.w.Ordered:
		return "ordered"
	case f.w.Wait:
		return "watcher"
	}
	return "hookOnly"
}
func (f waitFlag) Type() string { return "WaitStrategy" }
func (f waitFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "watcher", "legacy", "true":
		f.w.Wait, f.w.Ordered = true, false
	case "ordered":
		f.w.Wait, f.w.Ordered = true, true
	case "hookonly", "false":
		f.w.Wait, f.w.Ordered = false, false
	default:
		return fmt.Errorf("invalid --wait %q: want watcher, ordered, legacy, hookOnly, true or false", s)
	}
	return nil
}

// addWaitFlags adds --wait, --wait-for-jobs and --timeout.
func addWaitFlags(f *pflag.FlagSet, w *lifecycle.WaitOptions, wait bool) {
	w.Wait = wait
	flag := f.VarPF(waitFlag{w}, "wait", "",
		"wait until every object is ready (and, for deletions, gone) before returning; --wait=ordered applies (or uninstalls, in reverse) the batches the chart declares (helm.sh/resource-group), each waited for before the next; --wait=hookOnly or false returns once the API server accepted the changes")
	flag.NoOptDefVal = "watcher"
	f.BoolVar(&w.WaitForJobs, "wait-for-jobs", false, "with --wait, also wait until every Job of the release completed")
	f.DurationVar(&w.Timeout, "timeout", 5*time.Minute, "deadline for the whole operation")
	f.BoolVar(&w.WaitForLock, "wait-for-lock", false, "when another berth operation holds the release, wait for it (within --timeout) instead of failing")
}

// addWatchFlags adds --watch-for, --watch-tolerance and --watch-restarts, the watch window of an
// install, upgrade or rollback (what names it; undo says what a regression in the window does
// besides failing it).
func addWatchFlags(f *pflag.FlagSet, w *lifecycle.WatchOptions, what, undo string) {
	f.DurationVar(&w.For, "watch-for", 0,
		"once the release is ready, keep watching its objects for this long before recording the "+what+" deployed (the revision stays pending meanwhile): "+
			"an object no longer ready for longer than --watch-tolerance, or failed, a container restarting more than --watch-restarts times, or a Pod that ends Failed fails the "+what+undo+
			"; the window counts in --timeout; implies --wait; 0 does not watch")
	f.DurationVar(&w.Tolerance, "watch-tolerance", 30*time.Second, "with --watch-for, how long an object may stay not ready in the window before that fails the "+what)
	f.IntVar(&w.Restarts, "watch-restarts", 0, "with --watch-for, how many times each container may restart in the window before that fails the "+what)
}

// checkWatchFlags refuses watch flags out of range, before anything is read.
func checkWatchFlags(w lifecycle.WatchOptions) error {
	switch {
	case w.For < 0:
		return fmt.Errorf("invalid --watch-for %s: want a duration of 0 or more", w.For)
	case w.Tolerance < 0:
		return fmt.Errorf("invalid --watch-tolerance %s: want a duration of 0 or more", w.Tolerance)
	case w.Restarts < 0:
		return fmt.Errorf("invalid --watch-restarts %d: want 0 or more", w.Restarts)
	}
	return nil
}

// dryRunFlag is Helm's --dry-run: given alone it means client.
type dryRunFlag struct{ mode *lifecycle.DryRun }

func (f dryRunFlag) String() string { return string(*f.mode) }
func (f dryRunFlag) Type() string   { return "string" }
func (f dryRunFlag) Set(s string) error {
	switch s {
	case "client", "true":
		*f.mode = lifecycle.ClientDryRun
	case "server":
		*f.mode = lifecycle.ServerDryRun
	case "none", "false":
		*f.mode = lifecycle.NoDryRun
	default:
		return fmt.Errorf("invalid --dry-run %q: want client, server or none", s)
	}
	return nil
}

func addDryRunFlag(f *pflag.FlagSet, mode *lifecycle.DryRun) {
	flag := f.VarPF(dryRunFlag{mode}, "dry-run", "",
		`simulate the operation: "client" renders only, "server" also validates with the API server every object that would change; nothing is changed`)
	flag.NoOptDefVal = "client"
}

// errHideSecret says --hide-secret was given without --dry-run, as Helm refuses it.
var errHideSecret = errors.New("hiding Kubernetes secrets requires a dry-run mode: --hide-secret goes with --dry-run=client or --dry-run=server")

// addRenderSandboxFlag adds --render-sandbox, for a chart one does not trust.
func addRenderSandboxFlag(f *pflag.FlagSet, sandbox *bool) {
	limits := chart.DefaultRenderLimits()
	f.BoolVar(sandbox, "render-sandbox", false, fmt.Sprintf(
		"render the chart's templates in a child process that is stopped when it passes %s of memory, %s of CPU time, %s of output or %d objects, or the --timeout, as berth controller renders tenants' charts; for a chart you do not trust",
		resource.NewQuantity(limits.Memory, resource.BinarySI), limits.CPU, resource.NewQuantity(limits.Output, resource.BinarySI), limits.Objects))
}

// addRenderFlags adds Helm's flags of how install and upgrade render and validate the chart
// (what names the operation, for the help): --skip-schema-validation, --render-subchart-notes,
// --enable-dns and --disable-openapi-validation; and berth's --render-sandbox.
func addRenderFlags(f *pflag.FlagSet, r *lifecycle.Rendering, disableOpenAPIValidation *bool, what string) {
	f.BoolVar(&r.SkipSchemaValidation, "skip-schema-validation", false, "if set, disables JSON schema validation")
	f.BoolVar(&r.SubchartNotes, "render-subchart-notes", false, "if set, render subchart notes along with the parent")
	f.BoolVar(&r.EnableDNS, "enable-dns", false, "enable DNS lookups when rendering templates")
	addRenderSandboxFlag(f, &r.Sandbox)
	f.BoolVar(disableOpenAPIValidation, "disable-openapi-validation", false,
		"if set, the "+what+" process will not validate rendered templates against the Kubernetes OpenAPI Schema. "+
			"berth has no validation of its own to turn off: the API server validates every object berth sends (a server-side dry run before the first change, then server-side apply; an object already as the chart sets it is not sent), "+
			"and server-side apply refuses a field the object's schema does not declare whatever this flag says, as Helm v4's does")
}
