package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/reconcile"
)

func newReconcileCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "ask the controller to reconcile an object now",
	}
	cmd.AddCommand(newReconcileReleaseCommand(streams))
	return cmd
}

type reconcileFlags struct {
	wait    bool
	timeout time.Duration
}

func newReconcileReleaseCommand(streams Streams) *cobra.Command {
	var flags reconcileFlags
	cmd := &cobra.Command{
		Use:   "release NAME",
		Short: "ask the controller for one more attempt at a Release, and wait for the outcome",
		Long: `Ask the controller for one more reconcile of the Release NAME (berth.dev/v1alpha1)
without changing its spec: its annotation ` + v1alpha1.ReconcileRequestAnnotation + ` is set
to the current time. A Release whose install or upgrade failed (its retries
spent, or never retried) is tried again once, its failures counted anew; a
Ready Release is checked for drift, and nothing is released again.

With --wait (the default) it waits, within --timeout, until the controller
handled the request (status.lastHandledReconcileAt) and the reconcile ended,
then prints the Ready condition's reason and message; it exits non-zero when
the Release is not Ready. --wait=false returns once the annotation is set.`,
		Example: `  # the cause of a failed install was fixed outside the Release: try it again
  berth reconcile release web -n team-a

  # ask, and do not wait
  berth reconcile release web -n team-a --wait=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.run(cmd, streams, args[0])
		},
	}
	cmd.Flags().BoolVar(&flags.wait, "wait", true, "wait until the controller handled the request and its reconcile ended")
	cmd.Flags().DurationVar(&flags.timeout, "timeout", 5*time.Minute, "deadline for the whole command, the wait included")
	return cmd
}

func (flags reconcileFlags) run(cmd *cobra.Command, streams Streams, name string) error {
	if flags.timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: want a duration above 0", flags.timeout)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), flags.timeout)
	defer cancel()
	c, ns, err := releaseClient(ctx, cmd)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	value, err := reconcile.Request(ctx, c, key, time.Now())
	if err != nil {
		return explainReconcileError(err)
	}
	fmt.Fprintf(streams.ErrOut, "Release/%s/%s: reconcile requested at %s\n", ns, name, value)
	if !flags.wait {
		return nil
	}
	rel, err := reconcile.Wait(ctx, c, key, value)
	if rel != nil {
		ready := controller.ConditionReady
		for _, cond := range rel.Status.Conditions {
			if cond.Type == ready {
				fmt.Fprintf(streams.Out, "Ready %s %s: %s\n", cond.Status, cond.Reason, cond.Message)
			}
		}
	}
	return explainReconcileError(err)
}

// releaseClient is a client of Releases in the cluster and namespace the flags select.
func releaseClient(ctx context.Context, cmd *cobra.Command) (client.Client, string, error) {
	clients, err := loadClients(ctx, cmd)
	if err != nil {
		return nil, "", err
	}
	scheme, err := controller.Scheme()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(clients.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", err
	}
	return c, clients.Namespace, nil
}

// explainReconcileError adds to an error of berth reconcile what to do about it.
func explainReconcileError(err error) error {
	var suspended *reconcile.SuspendedError
	if errors.As(err, &suspended) {
		return fmt.Errorf("%w; set spec.suspend to false first", err)
	}
	var unhandled *reconcile.UnhandledError
	if errors.As(err, &unhandled) && unhandled.Handled != unhandled.Requested {
		return fmt.Errorf("%w; is a berth controller serving this namespace (berth doctor lists them)? The request stays set: it is handled when one runs", err)
	}
	if errors.As(err, &unhandled) {
		return fmt.Errorf("%w; pass a longer --timeout, or follow it with kubectl get release %s -n %s -w", err, unhandled.Name, unhandled.Namespace)
	}
	return err
}
