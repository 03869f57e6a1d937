package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/valuemask"
)

type upgradeFlags struct {
	installFlags
	install              bool
	reuseValues          bool
	resetValues          bool
	resetThenReuseValues bool
	historyMax           int
	cleanupOnFail        bool
	allowUnverified      bool
}

func newUpgradeCommand(streams Streams) *cobra.Command {
	var flags upgradeFlags
	cmd := &cobra.Command{
		Use:   "upgrade RELEASE CHART",
		Short: "upgrade a release to a new chart or new values",
		Long: `Upgrade a release to a new version of its chart or new values.

The new objects are validated by the API server before the first change, then
applied with server-side apply; objects that left the chart are deleted by their
exact identity (group, kind, namespace, name), unless they carry
helm.sh/resource-policy: keep. Values follow Helm: without --reuse-values or
--reset-values, the previous values are reused only when no new ones are given.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeReleaseThenChart,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, o, err := flags.setup(cmd, streams, args)
			if err != nil {
				return err
			}
			res, err := lifecycle.Upgrade(cmd.Context(), s.deps, o)
			// A template's error can quote a value: none that came encrypted.
			err = valuemask.Err(err, valuemask.Strings(o.Values, o.EncryptedValues))
			return printResult(streams, flags.output, flags.hideNotes, res, err)
		},
	}
	flags.addFlags(cmd)
	flags.addOutputFlags(cmd, "upgrade")
	return cmd
}

// setup turns upgrade's flags and arguments (RELEASE CHART) into the upgrade's options, for berth
// upgrade and berth diff upgrade alike: flags that contradict each other are refused first, then
// the chart is loaded and the cluster contacted (newChartSession).
func (flags *upgradeFlags) setup(cmd *cobra.Command, streams Streams, args []string) (*session, lifecycle.UpgradeOptions, error) {
	strategy, err := flags.valuesStrategy()
	if err != nil {
		return nil, lifecycle.UpgradeOptions{}, err
	}
	if err := flags.check(cmd); err != nil {
		return nil, lifecycle.UpgradeOptions{}, err
	}
	flags.defaults(cmd)
	if err := flags.keepVerifying(cmd, args[0]); err != nil {
		return nil, lifecycle.UpgradeOptions{}, err
	}
	s, c, err := newChartSession(cmd, streams, args[1], &flags.installFlags)
	if err != nil {
		return nil, lifecycle.UpgradeOptions{}, err
	}
	return s, flags.options(args[0], s, c, strategy), nil
}

// options are the upgrade's options for release name.
func (flags upgradeFlags) options(name string, s *session, c *chartInput, strategy chart.ValuesStrategy) lifecycle.UpgradeOptions {
	return lifecycle.UpgradeOptions{
		Name: name, Namespace: s.clients.Namespace, Chart: c.chart, Values: c.values, ValuesStrategy: strategy,
		WaitOptions: flags.wait, Install: flags.install, CreateNamespace: flags.createNamespace,
		TakeOwnership: flags.takeOwnership, RollbackOnFailure: flags.rollbackOnFailure, NoHooks: flags.noHooks, DryRun: flags.dryRun,
		HistoryMax: flags.historyMax, Description: flags.description, Capabilities: c.caps,
		Labels: flags.labels, Provenance: c.proof, EncryptedValues: c.encrypted, PostRenderer: c.postRenderer, CRDs: flags.crdPolicy(), ForceReplace: flags.forceReplace,
		CleanupOnFail: flags.cleanupOnFail, Rendering: flags.render, AllowUnverified: flags.allowUnverified,
	}
}

// keepVerifying keeps the verification of release name's last revision for an upgrade that
// reuses its values: --reuse-values (or --reset-then-reuse-values) keeps the release's settings,
// its verification among them, unless the flags say otherwise. A PGP-verified release is
// verified again (--verify), a notation-verified one with notation's own files (--notation), and
// one verified with cosign asks for the cosign flags again, whose key or identities it does not
// keep. A release not found is left to the upgrade to report.
func (flags *upgradeFlags) keepVerifying(cmd *cobra.Command, name string) error {
	if !(flags.reuseValues || flags.resetThenReuseValues) || cmd.Flags().Changed("verify") {
		return nil
	}
	store, err := releaseStore(cmd.Context(), cmd)
	if err != nil {
		return err
	}
	last, err := store.Last(cmd.Context(), name)
	if errors.Is(err, release.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	p := proofOf(last)
	switch {
	case p == nil:
	case p.Provider == release.ProviderPGP:
		flags.source.Verify = true
	case p.Provider == release.ProviderCosign && !flags.allowUnverified && !signatureFlagGiven(cmd):
		return fmt.Errorf("release %q runs a chart verified with cosign, signed by %s: --reuse-values keeps that verification, but the key or identity it used is not kept in the release: give --%s, or the keyless flags, again (or --allow-unverified to upgrade without)", name, p.Signer, flagCosignKey)
	case p.Provider == release.ProviderNotation && !signatureFlagGiven(cmd):
		// notation's trust policy and store are the user's own files: verify with them again.
		if err := cmd.Flags().Set(flagNotation, "true"); err != nil {
			return err
		}
	}
	return nil
}

// defaults sets what Helm's settings default: --history-max from HELM_MAX_HISTORY.
func (flags *upgradeFlags) defaults(cmd *cobra.Command) {
	if !cmd.Flags().Changed("history-max") {
		flags.historyMax = helmSettings(cmd).MaxHistory
	}
}

// addFlags adds upgrade's flags but --dry-run and --output, which berth diff upgrade has its
// own way.
func (flags *upgradeFlags) addFlags(cmd *cobra.Command) {
	flags.addChartFlags(cmd)
	f := cmd.Flags()
	f.BoolVarP(&flags.install, "install", "i", false, "if the release does not exist, install it")
	f.BoolVar(&flags.createNamespace, "create-namespace", false, "with --install, create the release namespace if not present")
	addCRDsFlag(f, &flags.crds, lifecycle.CRDsSkip, `; with --install, an install creates the missing ones unless --crds says otherwise`)
	f.BoolVar(&flags.skipCRDs, "skip-crds", false, "if set, no CRDs will be installed when an upgrade is performed with install flag enabled. By default, CRDs are installed if not already present, when an upgrade is performed with install flag enabled (the same as --crds skip)")
	addRenderFlags(f, &flags.render, &flags.disableOpenAPIValidation, "upgrade")
	addServerSideFlags(cmd, false)
	f.BoolVar(&flags.cleanupOnFail, "cleanup-on-fail", false, "allow deletion of new resources created in this upgrade when upgrade fails: the objects that did not exist before it are deleted, and waited for until gone, once the failure is recorded (the last third of --timeout is kept for it, as for --rollback-on-failure)")
	f.BoolVar(&flags.rollbackOnFailure, "rollback-on-failure", false, "if the upgrade fails, roll back to the deployed revision; implies --wait")
	f.BoolVar(&flags.allowUnverified, "allow-unverified", false, "upgrade a release verified with cosign with --reuse-values without verifying the new chart, and let the rollback that undoes a failed upgrade of a verified chart go back to a revision whose chart was not verified")
	addWatchFlags(f, &flags.wait.Watch, "upgrade", " (with --rollback-on-failure, it is rolled back to the deployed revision)")
	f.StringToStringVarP(&flags.labels, "labels", "l", nil, "Labels that would be added to release metadata. Should be separated by comma. Original release labels will be merged with upgrade labels. You can unset label using null.")
	f.BoolVar(&flags.reuseValues, "reuse-values", false, "merge the new values over the last release's, rendering with its chart defaults")
	f.BoolVar(&flags.resetValues, "reset-values", false, "forget the last release's values; use the chart's defaults and the new values")
	f.BoolVar(&flags.resetThenReuseValues, "reset-then-reuse-values", false, "merge the new values over the last release's, rendering with the new chart's defaults")
	f.IntVar(&flags.historyMax, "history-max", 10, "limit the maximum number of revisions saved per release (HELM_MAX_HISTORY sets the default). Use 0 for no limit")
}

func (f upgradeFlags) valuesStrategy() (chart.ValuesStrategy, error) {
	n := 0
	s := chart.ValuesDefault
	if f.reuseValues {
		n, s = n+1, chart.ValuesReuse
	}
	if f.resetValues {
		n, s = n+1, chart.ValuesReset
	}
	if f.resetThenReuseValues {
		n, s = n+1, chart.ValuesResetThenReuse
	}
	if n > 1 {
		return "", errors.New("--reuse-values, --reset-values and --reset-then-reuse-values exclude each other: give one")
	}
	return s, nil
}
