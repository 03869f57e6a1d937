package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/cli/output"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

type statusFlags struct {
	revision      int
	showResources bool
	showDesc      bool
	output        output.Format
}

func newStatusCommand(streams Streams) *cobra.Command {
	var flags statusFlags
	cmd := &cobra.Command{
		Use:   "status RELEASE_NAME",
		Short: "display the status of the named release",
		Long: `This command shows the status of a named release.
The status consists of:
- last deployment time
- k8s namespace in which the release lives
- state of the release (can be: unknown, deployed, uninstalled, superseded, failed, uninstalling, pending-install, pending-upgrade or pending-rollback)
- revision of the release
- description of the release (can be completion message or error message)
- list of resources that this release consists of, and whether each is ready
- details on last test suite run, if applicable
- additional notes provided by the chart`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := loadClients(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			store, err := storeOf(clients)
			if err != nil {
				return err
			}
			rel, err := release.Lookup(cmd.Context(), store, args[0], flags.revision)
			if err != nil {
				return err
			}
			c := cluster.New(clients.Dynamic, clients.Mapper)
			kept := keptObjects(c, rel)
			w := statusWriter{rel: rel, kept: kept}
			if flags.showResources && rel.Info.Status != release.StatusUninstalled {
				w.objects, w.readErr = releaseObjects(cmd.Context(), c, rel)
				pods, err := relatedPods(cmd.Context(), clients.Client.CoreV1(), w.objects)
				w.objects, w.readErr = append(w.objects, pods...), errors.Join(w.readErr, err)
				rel.Info.Resources = liveByGroup(w.objects)
			}
			if flags.revision <= 0 {
				in, err := lifecycle.Inspect(cmd.Context(), store, store.Journals(), store.Leases(), args[0])
				if err != nil {
					return err
				}
				w.operation = operationLine(in, args[0], time.Now())
			}
			return flags.output.Write(streams.Out, w)
		},
	}
	f := cmd.Flags()
	f.IntVar(&flags.revision, "revision", 0, "if set, display the status of the named release with revision")
	f.BoolVar(&flags.showResources, "show-resources", true,
		"read the release's objects (and the Pods of its workloads) from the cluster and show each, grouped by kind, with whether it is ready (info.resources with -o json|yaml); --show-resources=false skips it")
	f.BoolVar(&flags.showDesc, "show-desc", false, "if set, display the description message of the named release")
	_ = f.MarkDeprecated("show-desc", "the description is always shown")
	completeRevisionFlag(cmd)
	addOutputFlag(cmd, &flags.output)
	return cmd
}

// statusWriter prints a revision as helm status does, and the objects an uninstall keeps.
type statusWriter struct {
	rel  *release.Release
	kept []resource.Identity
	// operation says what operation holds the release or was left unfinished (berth's own line).
	operation string
	// all prints what helm get all prints: the chart's metadata, the values, hooks and manifest.
	all bool
	// revealSecrets, with all, shows the values that came from an encrypted values file.
	revealSecrets bool
	// objects are the revision's objects as they stand in the cluster, and readErr why some
	// could not be read.
	objects []releaseObject
	readErr error
}

// keptObjects lists the objects of a revision that carry helm.sh/resource-policy: keep, by full
// identity (namespaces filled in as the API server sees them, where it knows the kind).
func keptObjects(c *cluster.Client, rel *release.Release) []resource.Identity {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil
	}
	var out []resource.Identity
	for _, obj := range objs {
		if resource.IsKept(obj) {
			_ = c.Normalize(obj, rel.Namespace) // an unknown kind keeps the namespace it was written with
			out = append(out, resource.IdentityOf(obj))
		}
	}
	return out
}

// withoutChart is the revision helm status encodes: without the chart.
func (w statusWriter) withoutChart() *release.Release {
	rel := *w.rel
	rel.Chart = nil
	return &rel
}

func (w statusWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.withoutChart()) }

func (w statusWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.withoutChart()) }

func (w statusWriter) WriteTable(out io.Writer) error {
	rel := w.rel
	var b strings.Builder
	fmt.Fprintf(&b, "NAME: %s\n", rel.Name)
	if !rel.Info.LastDeployed.IsZero() {
		fmt.Fprintf(&b, "LAST DEPLOYED: %s\n", rel.Info.LastDeployed.Format(time.ANSIC))
	}
	fmt.Fprintf(&b, "NAMESPACE: %s\n", rel.Namespace)
	fmt.Fprintf(&b, "STATUS: %s\n", rel.Info.Status)
	fmt.Fprintf(&b, "REVISION: %d\n", rel.Version)
	if w.all {
		fmt.Fprintf(&b, "CHART: %s\nVERSION: %s\nAPP_VERSION: %s\n", rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Chart.Metadata.AppVersion)
	}
	fmt.Fprintf(&b, "DESCRIPTION: %s\n", rel.Info.Description)
	if p := proofOf(rel); p != nil {
		// Only then: the status of a release whose chart was not verified is Helm's, to the byte.
		fmt.Fprintf(&b, "VERIFIED: %s\n", describeProof(p))
	}
	if w.operation != "" {
		fmt.Fprintf(&b, "%s\n", w.operation)
	}
	if err := writeResources(&b, rel.Namespace, w.objects, w.readErr); err != nil {
		return err
	}

	tests := testHooks(rel)
	if len(tests) == 0 {
		b.WriteString("TEST SUITE: None\n")
	}
	for _, h := range tests {
		if h.LastRun.StartedAt.IsZero() {
			continue
		}
		fmt.Fprintf(&b, "TEST SUITE:     %s\nLast Started:   %s\nLast Completed: %s\nPhase:          %s\n",
			h.Name, h.LastRun.StartedAt.Format(time.ANSIC), h.LastRun.CompletedAt.Format(time.ANSIC), h.LastRun.Phase)
	}

	if w.all {
		if err := writeAllValues(&b, rel, w.revealSecrets); err != nil {
			return err
		}
	}
	if strings.EqualFold(rel.Info.Description, "Dry run complete") || w.all {
		b.WriteString("HOOKS:\n")
		for _, h := range rel.Hooks {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
		}
		fmt.Fprintf(&b, "MANIFEST:\n%s\n", rel.Manifest)
	}
	if len(w.kept) > 0 {
		b.WriteString("KEPT ON UNINSTALL (helm.sh/resource-policy: keep):\n")
		for _, id := range w.kept {
			fmt.Fprintf(&b, "  %s\n", id)
		}
	}
	if rel.Info.Notes != "" {
		fmt.Fprintf(&b, "NOTES:\n%s\n", strings.TrimSpace(rel.Info.Notes))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// testHooks returns the hooks of a revision that run on helm test, in their recorded order.
func testHooks(rel *release.Release) []*release.Hook {
	var tests []*release.Hook
	for _, h := range rel.Hooks {
		for _, e := range h.Events {
			if e == releasev1.HookTest {
				tests = append(tests, h)
			}
		}
	}
	return tests
}

// writeAllValues prints a revision's user-supplied and computed values as helm get all does,
// those from an encrypted values file masked unless reveal.
func writeAllValues(b *strings.Builder, rel *release.Release, reveal bool) error {
	b.WriteString("USER-SUPPLIED VALUES:\n")
	if err := output.EncodeYAML(b, maskValues(rel, rel.Config, reveal)); err != nil {
		return err
	}
	b.WriteString("\nCOMPUTED VALUES:\n")
	vals, err := util.CoalesceValues(rel.Chart, rel.Config)
	if err != nil {
		return fmt.Errorf("release %s/%s: compute values of revision %d: %w", rel.Namespace, rel.Name, rel.Version, err)
	}
	if err := output.EncodeYAML(b, maskValues(rel, vals.AsMap(), reveal)); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}
