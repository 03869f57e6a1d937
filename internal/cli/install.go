package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/cli/output"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/valuemask"
)

type installFlags struct {
	values            chart.ValueOptions
	wait              lifecycle.WaitOptions
	createNamespace   bool
	takeOwnership     bool
	rollbackOnFailure bool
	noHooks           bool
	dryRun            lifecycle.DryRun
	description       string
	output            output.Format
	labels            map[string]string
	postRender        postRenderFlags
	source            source.Options
	crds              lifecycle.CRDPolicy
	// skipCRDs is Helm's --skip-crds: --crds skip.
	skipCRDs     bool
	replace      bool
	forceReplace bool
	render       lifecycle.Rendering
	// disableOpenAPIValidation is accepted as helm accepts it; it changes nothing (see
	// addRenderFlags).
	disableOpenAPIValidation bool
	// hideNotes leaves the notes out of the table printed (--hide-notes).
	hideNotes bool
	// generateName and nameTemplate name the release of an install given no NAME.
	generateName bool
	nameTemplate string
}

func newInstallCommand(streams Streams) *cobra.Command {
	var flags installFlags
	cmd := &cobra.Command{
		Use:   "install [NAME] CHART",
		Short: "install a chart as a new release",
		Long: `Install a chart as a new release. The chart is a reference as helm takes it:
a chart directory, a packaged .tgz, REPO/CHART from the repositories added with
'berth repo add' or 'helm repo add', CHART with --repo URL, an https:// URL of a
packaged chart, or oci://HOST/PATH/CHART (with :TAG or @sha256:DIGEST). Without
--version the latest stable version is used.

Every object is validated by the API server (a server-side dry run) before the
first change: an invalid object, an unknown kind or an object that belongs to
someone else stops the install with nothing changed. Objects are then applied
with server-side apply in Helm's install order, and the release is recorded in
Helm's format, so helm sees it too.

Without NAME, --generate-name names the release after the chart and the time, and
--name-template renders a name from a template (Sprig functions, no values).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, o, err := flags.setup(cmd, streams, args)
			if err != nil {
				return err
			}
			res, err := lifecycle.Install(cmd.Context(), s.deps, o)
			// A template's error can quote a value: none that came encrypted.
			err = valuemask.Err(err, valuemask.Strings(o.Values, o.EncryptedValues))
			return printResult(streams, flags.output, flags.hideNotes, res, err)
		},
	}
	flags.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVarP(&flags.generateName, "generate-name", "g", false, "generate the name (and omit the NAME parameter)")
	f.StringVar(&flags.nameTemplate, "name-template", "", "specify template used to name the release")
	flags.addOutputFlags(cmd, "install")
	return cmd
}

// installNameAndChart reads install's arguments as helm install does: NAME CHART, or CHART
// alone with --generate-name or --name-template.
func installNameAndChart(args []string, generateName bool, nameTemplate string) (name, ref string, err error) {
	i := action.Install{GenerateName: generateName, NameTemplate: nameTemplate}
	return i.NameAndChart(args)
}

// addOutputFlags adds the flags of what install and upgrade print (cmd names which):
// --dry-run, --hide-secret, --hide-notes and --output.
func (flags *installFlags) addOutputFlags(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	addDryRunFlag(f, &flags.dryRun)
	f.BoolVar(&flags.render.HideSecret, "hide-secret", false, "hide Kubernetes Secrets when also using the --dry-run flag")
	f.BoolVar(&flags.hideNotes, "hide-notes", false, "if set, do not show notes in "+what+" output. Does not affect presence in chart metadata")
	addOutputFlag(cmd, &flags.output)
}

// check refuses flags that contradict each other, before anything else is done.
func (flags *installFlags) check(cmd *cobra.Command) error {
	if flags.render.HideSecret && flags.dryRun == lifecycle.NoDryRun {
		return errHideSecret
	}
	if err := checkWatchFlags(flags.wait.Watch); err != nil {
		return err
	}
	_, err := crdPolicy(flags.crds, cmd.Flags().Changed("crds"), flags.skipCRDs)
	return err
}

// setup turns install's flags and arguments (NAME CHART, or CHART alone with --generate-name or
// --name-template) into the install's options, for berth install and berth diff install alike:
// flags that contradict each other are refused first, then the chart is loaded and the cluster
// contacted (newChartSession).
func (flags *installFlags) setup(cmd *cobra.Command, streams Streams, args []string) (*session, lifecycle.InstallOptions, error) {
	name, ref, err := installNameAndChart(args, flags.generateName, flags.nameTemplate)
	if err != nil {
		return nil, lifecycle.InstallOptions{}, err
	}
	if err := flags.check(cmd); err != nil {
		return nil, lifecycle.InstallOptions{}, err
	}
	s, c, err := newChartSession(cmd, streams, ref, flags)
	if err != nil {
		return nil, lifecycle.InstallOptions{}, err
	}
	return s, flags.options(name, s, c), nil
}

// options are the install's options for release name.
func (flags installFlags) options(name string, s *session, c *chartInput) lifecycle.InstallOptions {
	return lifecycle.InstallOptions{
		Name: name, Namespace: s.clients.Namespace, Chart: c.chart, Values: c.values, WaitOptions: flags.wait,
		CreateNamespace: flags.createNamespace, TakeOwnership: flags.takeOwnership,
		RollbackOnFailure: flags.rollbackOnFailure, NoHooks: flags.noHooks, DryRun: flags.dryRun, Description: flags.description,
		Capabilities: c.caps, Labels: flags.labels, Provenance: c.proof, EncryptedValues: c.encrypted, PostRenderer: c.postRenderer, CRDs: flags.crdPolicy(),
		Replace: flags.replace, Rendering: flags.render, ForceReplace: flags.forceReplace,
	}
}

// crdPolicy is what --crds and --skip-crds say together (check refuses a contradiction).
func (flags installFlags) crdPolicy() lifecycle.CRDPolicy {
	if flags.skipCRDs {
		return lifecycle.CRDsSkip
	}
	return flags.crds
}

// addFlags adds install's flags but --dry-run and --output, which berth diff install has its
// own way.
func (flags *installFlags) addFlags(cmd *cobra.Command) {
	flags.addChartFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&flags.createNamespace, "create-namespace", false, "create the release namespace if not present")
	addCRDsFlag(f, &flags.crds, lifecycle.CRDsCreate, "")
	f.BoolVar(&flags.skipCRDs, "skip-crds", false, "if set, no CRDs will be installed. By default, CRDs are installed if not already present (the same as --crds skip)")
	f.BoolVar(&flags.replace, "replace", false, "reuse the given name, only if that name is a deleted release which remains in the history. This is unsafe in production")
	addRenderFlags(f, &flags.render, &flags.disableOpenAPIValidation, "installation")
	addServerSideFlags(cmd, true)
	f.BoolVar(&flags.rollbackOnFailure, "rollback-on-failure", false, "if the install fails, uninstall what it created; implies --wait")
	addWatchFlags(f, &flags.wait.Watch, "install", " (with --rollback-on-failure, the release is uninstalled)")
	f.StringToStringVarP(&flags.labels, "labels", "l", nil, "Labels that would be added to release metadata. Should be divided by comma.")
}

// addChartFlags adds the flags that install and upgrade share and say alike.
func (flags *installFlags) addChartFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	addSkipPreflightFlag(f)
	addValueFlags(cmd, &flags.values)
	addChartSourceFlags(f, &flags.source)
	addDependencyUpdateFlag(f, &flags.source)
	addWaitFlags(f, &flags.wait, false)
	f.BoolVar(&flags.takeOwnership, "take-ownership", false, "adopt existing objects that belong to another release or to none")
	addForceReplaceFlag(f, &flags.forceReplace)
	addAtomicFlag(f, &flags.rollbackOnFailure)
	addPostRenderFlags(f, &flags.postRender)
	f.BoolVar(&flags.noHooks, "no-hooks", false, "do not run the chart's hooks")
	f.StringVar(&flags.description, "description", "", "add a custom description")
}

// chartInput is what install and upgrade render: a chart, the values given on the command line,
// and the cluster's capabilities.
type chartInput struct {
	chart  *chartv2.Chart
	values map[string]any
	caps   *common.Capabilities
	// postRenderer is the --post-renderer plugin; nil without one.
	postRenderer postrenderer.PostRenderer
	// proof is the chart's verification (--verify); nil when it was not verified.
	proof *release.Provenance
	// encrypted are the paths of the values that came from an encrypted values file.
	encrypted [][]string
}

// newChartSession merges the values, finds the post-renderer and locates and loads the chart ref
// names (bad input fails before the cluster is contacted), then connects to the cluster and reads
// its capabilities. The operation's one deadline (--timeout) starts here: the fetch and the reads
// are bounded by it, and the operation has what is left.
func newChartSession(cmd *cobra.Command, streams Streams, ref string, flags *installFlags) (*session, *chartInput, error) {
	flags.wait.Began = time.Now()
	// The operation itself stops at its deadline, at a safe point: only the preparation ends with
	// this context.
	ctx, cancel := flags.wait.Bound(cmd.Context())
	defer cancel()
	vals, err := flags.values.MergeValues()
	if err != nil {
		return nil, nil, err
	}
	pr, err := flags.postRender.renderer(cmd)
	if err != nil {
		return nil, nil, err
	}
	ch, proof, err := loadChart(ctx, cmd, streams, ref, flags.source)
	if err != nil {
		return nil, nil, err
	}
	s, err := newSession(ctx, cmd, streams.ErrOut)
	if err != nil {
		return nil, nil, err
	}
	caps, err := s.capabilities(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s, &chartInput{chart: ch, values: vals.Values, caps: caps, postRenderer: pr, proof: proof, encrypted: vals.Encrypted}, nil
}

// printResult prints what an operation did to the progress stream, and the release it recorded as
// Helm prints it (for a dry run, its hooks and manifest too), with -o json|yaml with the changes
// under berth's own key. A failed operation prints nothing but its error.
func printResult(streams Streams, format output.Format, hideNotes bool, res *lifecycle.Result, err error) error {
	if summary := summarize(res); summary != "" {
		fmt.Fprintln(streams.ErrOut, summary)
	}
	if res != nil && res.Plan != nil {
		fmt.Fprintf(streams.ErrOut, "Plan (server-side dry run, nothing was changed):\n%s", res.Plan)
	}
	if err != nil {
		return err
	}
	rel := res.Release
	if hideNotes && format == output.Table && rel != nil && rel.Info != nil {
		// As Helm's --hide-notes: the table leaves them out; the record and -o json|yaml keep them.
		r, info := *rel, *rel.Info
		info.Notes = ""
		r.Info = &info
		rel = &r
	}
	return format.Write(streams.Out, resultWriter{statusWriter: statusWriter{rel: rel}, report: resultReport(res)})
}

// summarize says in one line what an operation's own run changed, and how long it took; nothing
// for a dry run.
func summarize(res *lifecycle.Result) string {
	if res == nil || len(res.Runs) == 0 {
		return ""
	}
	counts := map[engine.Change]int{}
	for _, c := range changes(res.Runs) {
		counts[c.Change]++
	}
	var parts []string
	for _, c := range []engine.Change{engine.Created, engine.Configured, engine.Unchanged, engine.Kept, engine.Deleted, engine.Gone} {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no object changed")
	}
	line := fmt.Sprintf("done: %s in %s", strings.Join(parts, ", "), res.Duration.Round(time.Millisecond))
	if len(res.Actions) > 1 {
		// More than what was asked: an interrupted operation was finished or undone first.
		acts := make([]string, len(res.Actions))
		for i, a := range res.Actions {
			acts[i] = string(a)
		}
		line += " (" + strings.Join(acts, ", then ") + ")"
	}
	return line
}

// addAtomicFlag adds --atomic, Helm's deprecated spelling of --rollback-on-failure, with Helm's
// warning.
func addAtomicFlag(f *pflag.FlagSet, rollbackOnFailure *bool) {
	f.BoolVar(rollbackOnFailure, "atomic", false, "deprecated")
	_ = f.MarkDeprecated("atomic", "use --rollback-on-failure instead")
}
