package cli

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"helm.sh/helm/v4/pkg/action"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/source"
)

type templateFlags struct {
	values               chart.ValueOptions
	includeCRDs          bool
	kubeVersion          string
	apiVersions          []string
	showOnly             []string
	generateName         bool
	skipTests            bool
	isUpgrade            bool
	skipSchemaValidation bool
	source               source.Options
	noHooks              bool
	nameTemplate         string
	outputDir            string
	useReleaseName       bool
	postRender           postRenderFlags
	enableDNS            bool
	sandbox              bool
	// dryRun is "client" (the default: nothing is read from a cluster) or "server" (Capabilities
	// and lookup read the cluster); validate is Helm's deprecated spelling of server.
	dryRun   string
	validate bool
}

// defaultTemplateName is the release name helm template uses when none is given.
const defaultTemplateName = "release-name"

func newTemplateCommand(streams Streams) *cobra.Command {
	var flags templateFlags
	cmd := &cobra.Command{
		Use:   "template [NAME] CHART",
		Short: "Render a chart locally and print what helm template prints",
		Long: `Render a chart's templates locally, exactly as helm template does, and print the
manifests followed by the hooks. Nothing is read from a cluster: lookups return
nothing, and Capabilities are Helm's defaults, changed with --kube-version and
--api-versions.

With --dry-run=server, the templates are rendered against the cluster of the
kubeconfig, as helm template --dry-run=server does: lookup reads it, and
Capabilities are its own (--kube-version and --api-versions are ignored).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, ref, err := templateNameAndChart(args, flags.generateName, flags.nameTemplate)
			if err != nil {
				return err
			}
			server, err := templateDryRun(flags.dryRun, flags.validate)
			if err != nil {
				return err
			}
			ch, _, err := loadChart(cmd.Context(), cmd, streams, ref, flags.source)
			if err != nil {
				return err
			}
			pr, err := flags.postRender.renderer(cmd)
			if err != nil {
				return err
			}
			render := chart.RenderOptions{
				ReleaseName:          name,
				Namespace:            templateNamespace(cmd),
				IsUpgrade:            flags.isUpgrade,
				IncludeCRDs:          flags.includeCRDs,
				SkipSchemaValidation: flags.skipSchemaValidation,
				EnableDNS:            flags.enableDNS,
				PostRenderer:         pr,
			}
			if flags.sandbox {
				if render.Templates, err = chart.NewSandbox(chart.DefaultRenderLimits(), 1); err != nil {
					return err
				}
			}
			if server {
				if err := withCluster(cmd, &render); err != nil {
					return err
				}
			}
			out, err := chart.Template(cmd.Context(), chart.TemplateOptions{
				Chart:       ch,
				Values:      flags.values,
				Render:      render,
				KubeVersion: flags.kubeVersion,
				APIVersions: flags.apiVersions,
				ShowOnly:    flags.showOnly,
				SkipTests:   flags.skipTests,
				NoHooks:     flags.noHooks,

				OutputDir:      flags.outputDir,
				UseReleaseName: flags.useReleaseName,
			})
			if _, werr := fmt.Fprint(streams.Out, out); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	f := cmd.Flags()
	addValueFlags(cmd, &flags.values)
	addChartSourceFlags(f, &flags.source)
	addPostRenderFlags(f, &flags.postRender)
	addDependencyUpdateFlag(f, &flags.source)
	f.BoolVar(&flags.includeCRDs, "include-crds", false, "include CRDs in the templated output")
	f.StringVar(&flags.kubeVersion, "kube-version", "", "Kubernetes version used for Capabilities.KubeVersion")
	f.StringSliceVarP(&flags.apiVersions, "api-versions", "a", nil, "Kubernetes api versions used for Capabilities.APIVersions (multiple can be specified)")
	f.StringArrayVarP(&flags.showOnly, "show-only", "s", nil, "only show manifests rendered from the given templates")
	f.BoolVarP(&flags.generateName, "generate-name", "g", false, "generate the name (and omit the NAME parameter)")
	f.BoolVar(&flags.skipTests, "skip-tests", false, "skip tests from templated output")
	f.BoolVar(&flags.isUpgrade, "is-upgrade", false, "set .Release.IsUpgrade instead of .Release.IsInstall")
	f.BoolVar(&flags.skipSchemaValidation, "skip-schema-validation", false, "if set, disables JSON schema validation")
	f.BoolVar(&flags.noHooks, "no-hooks", false, "prevent hooks from running during install")
	f.StringVar(&flags.nameTemplate, "name-template", "", "specify template used to name the release")
	f.StringVar(&flags.outputDir, "output-dir", "", "writes the executed templates to files in output-dir instead of stdout")
	f.BoolVar(&flags.useReleaseName, "release-name", false, "use release name in the output-dir path.")
	f.BoolVar(&flags.enableDNS, "enable-dns", false, "enable DNS lookups when rendering templates")
	addRenderSandboxFlag(f, &flags.sandbox)
	f.StringVar(&flags.dryRun, "dry-run", "client", `simulates the operation either client-side or server-side. Must be either: "client", or "server". '--dry-run=client simulates the operation client-side only and avoids cluster connections. '--dry-run=server' simulates/validates the operation on the server, requiring cluster connectivity.`)
	f.Lookup("dry-run").NoOptDefVal = "unset"
	f.BoolVar(&flags.validate, "validate", false, "deprecated")
	_ = f.MarkDeprecated("validate", "use '--dry-run=server' instead")
	cmd.MarkFlagsMutuallyExclusive("validate", "dry-run")
	addInertInstallFlags(cmd)
	return cmd
}

// addInertInstallFlags adds the flags helm template takes because it shares them with helm
// install, with Helm's help: they change nothing template prints, in helm as in berth, and are
// taken so that a helm template command line works as it is.
func addInertInstallFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	for _, b := range []struct{ name, usage string }{
		{"create-namespace", "create the release namespace if not present"},
		{"force-replace", "force resource updates by replacement"},
		{"force-conflicts", "if set server-side apply will force changes against conflicts"},
		{"replace", "reuse the given name, only if that name is a deleted release which remains in the history. This is unsafe in production"},
		{"wait-for-jobs", "if set and --wait enabled, will wait until all Jobs have been completed before marking the release as successful. It will wait for as long as --timeout"},
		{"disable-openapi-validation", "if set, the installation process will not validate rendered templates against the Kubernetes OpenAPI Schema"},
		{"rollback-on-failure", `if set, Helm will rollback (uninstall) the installation upon failure. The --wait flag will be default to "watcher" if --rollback-on-failure is set`},
		{"skip-crds", "if set, no CRDs will be installed. By default, CRDs are installed if not already present"},
		{"take-ownership", "if set, install will ignore the check for helm annotations and take ownership of the existing resources"},
	} {
		f.Bool(b.name, false, b.usage)
	}
	f.Bool("server-side", true, "object updates run in the server instead of the client")
	f.Duration("timeout", 300*time.Second, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
	f.String("description", "", "add a custom description")
	f.StringToStringP("labels", "l", nil, "Labels that would be added to release metadata. Should be divided by comma.")
	f.VarPF(waitFlag{&lifecycle.WaitOptions{}}, "wait", "", "wait until resources are ready (up to --timeout). Use '--wait' alone for 'watcher' strategy, or specify one of: 'watcher', 'hookOnly', 'legacy'. Default when flag is omitted: 'hookOnly'.").NoOptDefVal = "watcher"
	for name, msg := range map[string]string{
		"force": "use --force-replace instead", "atomic": "use --rollback-on-failure instead",
		"hide-notes":            "this flag has no effect for 'helm template' and will be removed in Helm 5",
		"render-subchart-notes": "this flag has no effect for 'helm template' and will be removed in Helm 5",
	} {
		f.Bool(name, false, "deprecated")
		_ = f.MarkDeprecated(name, msg)
	}
	cmd.MarkFlagsMutuallyExclusive("force-replace", "force-conflicts")
}

// templateDryRun reads helm template's --dry-run (value v) and --validate, as Helm does:
// whether the templates are rendered against the cluster.
func templateDryRun(v string, validate bool) (server bool, err error) {
	if validate {
		return true, nil
	}
	switch v {
	case "client", "unset":
		return false, nil
	case "server":
		return true, nil
	case "none":
		return false, fmt.Errorf(`invalid dry-run value (%q). Must be "server" or "client"`, v)
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf(`invalid dry-run value (%q). Must be "none", "server", or "client"`, v)
	}
	if !b {
		// helm template always pretends: there is no dry run to turn off
		return false, fmt.Errorf(`invalid dry-run value (%q). Must be "server" or "client"`, v)
	}
	return false, nil
}

// withCluster makes render read the cluster the flags select: its capabilities, and lookup.
func withCluster(cmd *cobra.Command, render *chart.RenderOptions) error {
	clients, err := loadClients(cmd.Context(), cmd)
	if err != nil {
		return err
	}
	caps, err := lifecycle.Capabilities(cmd.Context(), clients)
	if err != nil {
		return err
	}
	render.Capabilities, render.Cluster = caps, clients.Config
	return nil
}

// addValueFlags adds Helm's flags for values (-f, --set and friends) with Helm's help text.
func addValueFlags(cmd *cobra.Command, v *chart.ValueOptions) {
	f := cmd.Flags()
	f.StringSliceVarP(&v.ValueFiles, "values", "f", nil, "specify values in a YAML file (can specify multiple)")
	f.StringArrayVar(&v.Values, "set", nil, "set values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	f.StringArrayVar(&v.StringValues, "set-string", nil, "set STRING values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	f.StringArrayVar(&v.FileValues, "set-file", nil, "set values from respective files specified via the command line (can specify multiple or separate values with commas: key1=path1,key2=path2)")
	f.StringArrayVar(&v.JSONValues, "set-json", nil, "set JSON values on the command line (can specify multiple or separate values with commas: key1=jsonval1,key2=jsonval2 or using json format: {\"key1\": jsonval1, \"key2\": \"jsonval2\"})")
	f.StringArrayVar(&v.LiteralValues, "set-literal", nil, "set a literal STRING value on the command line")
}

// templateNameAndChart reads the arguments as helm template does: NAME CHART; or CHART alone, for
// the name --name-template renders, else "release-name" (with or without --generate-name, which
// helm template accepts but does not use).
func templateNameAndChart(args []string, generateName bool, nameTemplate string) (name, chartPath string, err error) {
	if len(args) == 2 {
		if generateName {
			return "", "", errors.New("cannot set --generate-name and also specify a name")
		}
		if nameTemplate != "" {
			return "", "", errors.New("cannot set --name-template and also specify a name")
		}
		return args[0], args[1], nil
	}
	if nameTemplate != "" {
		name, err := action.TemplateName(nameTemplate)
		if err != nil {
			return "", "", fmt.Errorf("invalid --name-template %q: %w", nameTemplate, err)
		}
		return name, args[0], nil
	}
	return defaultTemplateName, args[0], nil
}

// templateNamespace is the release namespace: --namespace, else the kubeconfig context's, else
// "default", as helm template takes it. The kubeconfig is only read, never contacted.
func templateNamespace(cmd *cobra.Command) string {
	flags := kubeFlags(cmd)
	if flags.Namespace != "" {
		return flags.Namespace
	}
	if clients, err := flags.Load(); err == nil && clients.Namespace != "" {
		return clients.Namespace
	}
	return "default"
}
