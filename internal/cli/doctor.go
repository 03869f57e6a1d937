package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// Exit codes of berth doctor.
const (
	ExitDoctorWarnings = 1
	ExitDoctorBlockers = 2
)

// doctorFound says berth doctor found something; it carries the exit code (1 warnings, 2
// blockers), and the report printed says the rest.
type doctorFound struct{ worst doctor.Severity }

func (d doctorFound) Error() string { return "berth doctor found " + string(d.worst) + "s" }

func (d doctorFound) code() int {
	if d.worst == doctor.Blocker {
		return ExitDoctorBlockers
	}
	return ExitDoctorWarnings
}

type doctorFlags struct {
	release string
	output  output.Format
}

func newDoctorCommand(streams Streams) *cobra.Command {
	var flags doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "find what in the cluster would make a release operation hang, before it does",
		Long: `Check the cluster for what makes release operations hang or fail, and say how
to fix each: admission webhooks with failurePolicy Fail whose backend cannot
answer (or whose caBundle is unusable, or whose timeout is long), APIServices
that are not Available, CRDs whose conversion webhook cannot answer, namespaces
stuck Terminating, objects stuck on finalizers (and Argo CD's hook finalizer on
finished Jobs and Pods), releases left pending with no operation holding them,
releases whose record is near the 1 MiB an object may hold or split into parts
(with what their history holds), records whose parts are missing and parts no
record names, PodDisruptionBudgets that allow no eviction, and Releases (berth.dev) that no
running controller serves: of a shard no controller runs for (label
sharding.berth.dev/key), or with no controller at all, and Releases that run
an unverified chart under a controller that requires verification
(--require-verified), or a chart whose signer it does not allow
(--allowed-signer, --allowed-issuer). Controllers are found by their leader election Leases, so
those run without --leader-elect are not seen.

Without -n (or HELM_NAMESPACE) the whole cluster is checked, as far as you may
read it; with -n, that namespace and the cluster-wide objects that affect it;
with --release, that release's namespace and that release. What you may not
read is a finding too. Only reads: nothing is changed.

Exit code: 0 nothing found, 1 warnings, 2 blockers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clients, err := loadClients(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			store, err := storeOf(clients)
			if err != nil {
				return err
			}
			opts := doctor.Options{Release: flags.release}
			if cmd.Flags().Changed("namespace") || os.Getenv("HELM_NAMESPACE") != "" || flags.release != "" {
				opts.Namespace = clients.Namespace
			}
			rep := doctor.Run(cmd.Context(), doctor.ClusterOf(clients, store), opts)
			if err := flags.output.Write(streams.Out, doctorWriter{rep}); err != nil {
				return err
			}
			if worst := rep.Worst(); worst != "" {
				cmd.SilenceErrors = true
				return doctorFound{worst}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&flags.release, "release", "", "check only what touches this release (in the namespace -n selects)")
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// doctorWriter writes a doctor report as Helm's output formats: a text report, JSON or YAML.
type doctorWriter struct{ rep doctor.Report }

func (w doctorWriter) WriteTable(out io.Writer) error { return w.rep.WriteText(out) }
func (w doctorWriter) WriteJSON(out io.Writer) error  { return output.EncodeJSON(out, w.rep) }
func (w doctorWriter) WriteYAML(out io.Writer) error  { return output.EncodeYAML(out, w.rep) }

// doctorExitCode is the exit code of a doctor's findings in err, and whether err is one.
func doctorExitCode(err error) (int, bool) {
	var d doctorFound
	if errors.As(err, &d) {
		return d.code(), true
	}
	return 0, false
}

// skipPreflightFlag is the flag of install, upgrade, rollback and uninstall that goes on past
// what their preflight finds.
const skipPreflightFlag = "skip-preflight"

func addSkipPreflightFlag(f *pflag.FlagSet) {
	f.Bool(skipPreflightFlag, false, "do not stop when the preflight (berth doctor's checks of the webhooks, APIServices and namespace the operation meets) finds a blocker")
}

// preflightFor returns the preflight of the operations cmd runs: berth doctor's checks of the
// requests the operation's plan will make, unless cmd has none or --skip-preflight says to go on
// anyway. What it warns of (a webhook that may apply, an APIService whose discovery fails) is
// written to errOut; what blocks stops the operation. ahead starts the preflight's reads while
// the operation surveys the cluster (lifecycle.Deps.PreflightAhead).
func preflightFor(cmd *cobra.Command, clients *kube.Clients, store release.Store, errOut io.Writer) (
	check func(context.Context, release.Operation, string, []doctor.Request) error, ahead func(context.Context, release.Operation)) {
	if cmd.Flags().Lookup(skipPreflightFlag) == nil {
		return nil, nil
	}
	if skip, _ := cmd.Flags().GetBool(skipPreflightFlag); skip {
		return nil, nil
	}
	c := doctor.ClusterOf(clients, store)
	var mu sync.Mutex
	var started *doctor.Ahead
	ahead = func(ctx context.Context, op release.Operation) {
		mu.Lock()
		defer mu.Unlock()
		started = doctor.ReadAhead(ctx, c, op, clients.Namespace)
	}
	check = func(ctx context.Context, op release.Operation, name string, reqs []doctor.Request) error {
		// The reads started ahead are taken once: a later preflight reads the cluster again.
		mu.Lock()
		cc := c
		cc.Ahead, started = started, nil
		mu.Unlock()
		warnings, perr := doctor.Preflight(ctx, cc, op, clients.Namespace, name, reqs)
		for _, f := range warnings {
			fmt.Fprintf(errOut, "warning: %s: %s\n  %s\n  fix: %s\n", f.Object, f.Problem, f.Breaks, f.Fix)
		}
		if perr != nil {
			return fmt.Errorf("%w\nfix what is named above and run the command again, or pass --%s to go on anyway", perr, skipPreflightFlag)
		}
		return nil
	}
	return check, ahead
}
