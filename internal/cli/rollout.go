package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/waves"
)

func newRolloutCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "see and steer Rollouts: one chart released into many clusters, wave by wave",
		Long: `A Rollout (berth.dev/v1alpha1) keeps one Release per cluster of its waves and moves them to
its template a wave at a time; see docs/waves.md. These commands read and steer the Rollouts
of the namespace the flags select.`,
	}
	cmd.AddCommand(newRolloutListCommand(streams), newRolloutStatusCommand(streams),
		newRolloutApproveCommand(streams), newRolloutPauseCommand(streams, true), newRolloutPauseCommand(streams, false))
	return cmd
}

// rolloutTimeout bounds each rollout command but status --watch.
const rolloutTimeout = time.Minute

func newRolloutListCommand(streams Streams) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the Rollouts, with their wave and how many clusters are Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRollouts(cmd, func(ctx context.Context, c client.Client, ns string) error {
				var list v1alpha1.RolloutList
				opts := []client.ListOption{}
				if !all {
					opts = append(opts, client.InNamespace(ns))
				}
				if err := c.List(ctx, &list, opts...); err != nil {
					return explainRolloutError(err, "")
				}
				tw := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "NAMESPACE\tNAME\tWAVE\tREADY\tSTATE\tAGE")
				for _, ro := range list.Items {
					state, _ := rolloutState(&ro)
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ro.Namespace, ro.Name, cmp.Or(ro.Status.CurrentWave, "-"), cmp.Or(ro.Status.Summary, "-"), state,
						duration.HumanDuration(time.Since(ro.CreationTimestamp.Time)))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the Rollouts of every namespace")
	return cmd
}

func newRolloutStatusCommand(streams Streams) *cobra.Command {
	var follow bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "show a Rollout's waves and clusters, one line per cluster",
		Long: `Show the Rollout NAME: its state, and each cluster of each wave with its Release, state,
revision and since when, and why when it is not Ready.

With --watch, follow it until it is Complete or Halted (or --timeout ends): on a terminal the
table is redrawn in place; otherwise a table is printed each time it changes. It exits non-zero
when the Rollout halted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			c, ns, err := releaseClient(ctx, cmd)
			if err != nil {
				return err
			}
			key := types.NamespacedName{Namespace: ns, Name: args[0]}
			return showRollout(ctx, c, key, streams.Out, follow)
		},
	}
	cmd.Flags().BoolVarP(&follow, "watch", "w", false, "follow the Rollout until it is Complete or Halted")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "deadline for the command, the watch included")
	return cmd
}

// showRollout prints the Rollout key to w, and with follow again on each change until it ends.
func showRollout(ctx context.Context, c client.Client, key types.NamespacedName, w io.Writer, follow bool) error {
	live := isTerminal(w)
	drawn, last := 0, ""
	for {
		var ro v1alpha1.Rollout
		if err := c.Get(ctx, key, &ro); err != nil {
			return explainRolloutError(err, key.Name)
		}
		table := rolloutTable(&ro, time.Now())
		if table != last {
			if live && drawn > 0 {
				fmt.Fprintf(w, "\x1b[%dA\x1b[J", drawn)
			}
			io.WriteString(w, table)
			drawn, last = strings.Count(table, "\n"), table
		}
		state, ended := rolloutState(&ro)
		if !follow || ended {
			if state == "Halted" || state == "RolledBack" {
				return &RolloutHaltedError{Namespace: key.Namespace, Name: key.Name}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Rollout %s/%s is still %s: %w; follow it with berth rollout status %s --watch", key.Namespace, key.Name, state, ctx.Err(), key.Name)
		case <-time.After(2 * time.Second):
		}
	}
}

// RolloutHaltedError is a Rollout that halted: a cluster failed.
type RolloutHaltedError struct{ Namespace, Name string }

func (e *RolloutHaltedError) Error() string {
	return fmt.Sprintf("Rollout %s/%s halted: see its failure above; change its template to start again", e.Namespace, e.Name)
}

// rolloutTable is the Rollout ro as a person reads it at now: its state, then a line per cluster.
func rolloutTable(ro *v1alpha1.Rollout, now time.Time) string {
	var b strings.Builder
	state, _ := rolloutState(ro)
	fmt.Fprintf(&b, "Rollout %s/%s: %s", ro.Namespace, ro.Name, state)
	if c := meta.FindStatusCondition(ro.Status.Conditions, "Progressing"); c != nil && c.Message != "" {
		fmt.Fprintf(&b, ": %s", c.Message)
	}
	b.WriteString("\n")
	if f := ro.Status.Failure; f != nil {
		fmt.Fprintf(&b, "Failed: cluster %s of wave %s (Release %s): %s: %s\n", f.Cluster, f.Wave, f.Release, f.Reason, firstLine(f.Message))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tCLUSTER\tRELEASE\tSTATE\tREVISION\tSINCE\tMESSAGE")
	for _, w := range ro.Status.Waves {
		for _, cl := range w.Clusters {
			since := "-"
			if cl.Since != nil {
				since = duration.HumanDuration(now.Sub(cl.Since.Time))
			}
			rev := "-"
			if cl.Revision > 0 {
				rev = fmt.Sprint(cl.Revision)
			}
			fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\n", w.Name, w.State, cl.Name, cl.Release, cl.State, rev, since, firstLine(cl.Message))
		}
	}
	tw.Flush()
	return b.String()
}

// rolloutState names what ro is, and whether that is an end: Complete, Halted, RolledBack
// (ends), RollingBack, Paused, AwaitingApproval, Progressing, or Pending before the controller
// first looked.
func rolloutState(ro *v1alpha1.Rollout) (string, bool) {
	is := func(t string) bool { return meta.IsStatusConditionTrue(ro.Status.Conditions, t) }
	current := ro.Status.ObservedGeneration == ro.Generation
	switch {
	case !current:
		return "Pending", false
	case is("Complete"):
		return "Complete", true
	case is("RolledBack"):
		return "RolledBack", true
	case is("Halted") && ro.Spec.Remediation == v1alpha1.RemediationHalt:
		return "Halted", true
	case is("Halted"):
		return "RollingBack", false
	case ro.Spec.Paused:
		return "Paused", false
	}
	if c := meta.FindStatusCondition(ro.Status.Conditions, "Progressing"); c != nil && c.Reason == "AwaitingApproval" {
		return "AwaitingApproval", false
	}
	return "Progressing", false
}

func newRolloutApproveCommand(streams Streams) *cobra.Command {
	var wave string
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "approve the wave a Rollout waits for, so that it starts",
		Long: `Approve the wave of the Rollout NAME that waits for approval (its spec says approval: true),
for the Rollout's current template only: a new template asks again. --wave names the wave to
approve ahead of time; by default the one waiting now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRollouts(cmd, func(ctx context.Context, c client.Client, ns string) error {
				var ro v1alpha1.Rollout
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: args[0]}, &ro); err != nil {
					return explainRolloutError(err, args[0])
				}
				name := wave
				if name == "" {
					for _, w := range ro.Status.Waves {
						if w.State == string(waves.AwaitingApproval) {
							name = w.Name
						}
					}
				}
				if name == "" {
					return fmt.Errorf("Rollout %s/%s has no wave waiting for approval: name one with --wave", ns, ro.Name)
				}
				if !hasWave(&ro, name) {
					return fmt.Errorf("Rollout %s/%s has no wave %q: its waves are %s", ns, ro.Name, name, waveNames(&ro))
				}
				if ro.Status.Target == "" {
					return fmt.Errorf("Rollout %s/%s has no target yet: wait until the controller has looked at it (berth rollout status %s)", ns, ro.Name, ro.Name)
				}
				value := waves.ApprovalFor(name, ro.Status.Target)
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ApprovedAnnotation, value)
				if err := c.Patch(ctx, &ro, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					return explainRolloutError(err, ro.Name)
				}
				fmt.Fprintf(streams.Out, "Rollout %s/%s: wave %s approved for target %s\n", ns, ro.Name, name, ro.Status.Target)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&wave, "wave", "", "the wave to approve; default: the one waiting for approval")
	return cmd
}

func newRolloutPauseCommand(streams Streams, pause bool) *cobra.Command {
	use, short := "pause NAME", "pause a Rollout: no cluster is moved and no wave starts; what is under way finishes"
	if !pause {
		use, short = "resume NAME", "resume a paused Rollout"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRollouts(cmd, func(ctx context.Context, c client.Client, ns string) error {
				ro := &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: args[0]}}
				patch := fmt.Sprintf(`{"spec":{"paused":%t}}`, pause)
				if err := c.Patch(ctx, ro, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					return explainRolloutError(err, args[0])
				}
				word := "paused"
				if !pause {
					word = "resumed"
				}
				fmt.Fprintf(streams.Out, "Rollout %s/%s %s\n", ns, args[0], word)
				return nil
			})
		},
	}
}

// withRollouts runs fn with a client of the cluster and the namespace the flags of cmd select,
// within rolloutTimeout.
func withRollouts(cmd *cobra.Command, fn func(ctx context.Context, c client.Client, ns string) error) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), rolloutTimeout)
	defer cancel()
	c, ns, err := releaseClient(ctx, cmd)
	if err != nil {
		return err
	}
	return fn(ctx, c, ns)
}

// explainRolloutError says what to do about an error reading or writing the Rollout name.
func explainRolloutError(err error, name string) error {
	switch {
	case apierrors.IsNotFound(err) && name != "":
		return fmt.Errorf("Rollout %q not found in this namespace: berth rollout list shows them (-n NAMESPACE, -A)", name)
	case meta.IsNoMatchError(err):
		return fmt.Errorf("this cluster serves no Rollouts: install berth's CRDs (charts/berth-controller/crds) first: %w", err)
	}
	return err
}

func hasWave(ro *v1alpha1.Rollout, name string) bool {
	for _, w := range ro.Spec.Waves {
		if w.Name == name {
			return true
		}
	}
	return false
}

func waveNames(ro *v1alpha1.Rollout) string {
	names := make([]string, 0, len(ro.Spec.Waves))
	for _, w := range ro.Spec.Waves {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}
