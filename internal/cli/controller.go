package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/controller/inputs"
)

type controllerFlags struct {
	concurrency             int
	metricsBindAddress      string
	metricsSecure           bool
	healthProbeBindAddress  string
	leaderElect             bool
	leaderElectionNamespace string
	cacheDir                string
	defaultServiceAccount   string
	statusChartOutput       bool
	requireVerified         bool
	cloudKMSDecryption      bool
	allowedSigners          []string
	allowedIssuers          []string
	watchSecrets            bool
	watchLabelSelector      string
	kubeConfigReach         inputs.KubeConfigReach
	maxTimeout              time.Duration
	maxIndexSize            string
	recordExpansionLimit    string
	fetchesPerNamespace     int
	minFetchRate            string
	renderMemory            string
	renderCPU               time.Duration
	renderOutput            string
	renderObjects           int
	concurrentRenders       int
}

func newControllerCommand(streams Streams) *cobra.Command {
	var flags controllerFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "run the controller that reconciles berth.dev/v1alpha1 Releases",
		Long: `Run the controller that reconciles Release objects (berth.dev/v1alpha1): it
installs each Release's chart, upgrades it when the chart version or the values
change, and uninstalls it when the Release is deleted, with the same lifecycle
as berth install, upgrade and uninstall. Every cluster call for a release is
made as the Release's spec.serviceAccountName (--default-service-account, or
the namespace's default account, when empty), never with the controller's own
rights; a Release whose account does not exist is Stalled
(ServiceAccountNotFound) and nothing is done as it. Releases are recorded in
Helm's format in their target namespace, so helm list sees them.

It runs in a cluster (with its ServiceAccount) or, for development, against
--kubeconfig. -n/--namespace limits it to the Releases of one namespace.
The CustomResourceDefinition must be installed first.

--watch-label-selector makes it one shard of several: it reconciles, watches
and caches only the Releases the selector selects (the chart runs a shard
with sharding.berth.dev/key=NAME for each of its sharding.shards, and its main
controller with !sharding.berth.dev/key). Each shard elects its leader with a
Lease of its own, so shards never wait for each other. A Release may depend on
(spec.dependsOn) a Release of another shard: it reads it from the API server,
and sees it become Ready within 30 seconds.

A Release's kubeconfig (spec.kubeConfig) is refused (InvalidKubeConfig) when
it runs a command or reads a file, and, unless a flag allows it, when it skips
TLS verification (--allow-kubeconfig-insecure-tls), names a proxy
(--allow-kubeconfig-proxy) or a plain HTTP server (--allow-kubeconfig-http):
the controller would connect from its own network position wherever a
Release's author says.

Every reconcile ends: its work at the Release's spec.timeout, at most
--max-timeout, and everything a minute later. One namespace's Releases are
reconciled by at most all the workers (--concurrency) but one, so that a
namespace whose Releases wait for what never comes leaves a worker to the
others.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flags.maxTimeout < 0 {
				return fmt.Errorf("invalid --max-timeout %s: give 0 (no maximum) or a positive duration like 1h", flags.maxTimeout)
			}
			maxIndex, err := resource.ParseQuantity(flags.maxIndexSize)
			if err != nil || maxIndex.Value() <= 0 {
				return fmt.Errorf("invalid --max-index-size %q: give a positive size like 4Mi or 16Mi", flags.maxIndexSize)
			}
			recordLimit, err := resource.ParseQuantity(flags.recordExpansionLimit)
			if err != nil || recordLimit.Value() <= 0 {
				return fmt.Errorf("invalid --record-expansion-limit %q: give a positive size like 32Mi or 64Mi", flags.recordExpansionLimit)
			}
			minRate, err := resource.ParseQuantity(flags.minFetchRate)
			if err != nil || minRate.Value() < 0 {
				return fmt.Errorf("invalid --min-fetch-rate %q: give bytes a second like 1Ki, or 0 for no minimum", flags.minFetchRate)
			}
			if flags.fetchesPerNamespace < 1 {
				return fmt.Errorf("invalid --fetches-per-namespace %d: give at least 1", flags.fetchesPerNamespace)
			}
			limits, err := flags.renderLimits()
			if err != nil {
				return err
			}
			// A selector that does not parse is refused before the cluster is touched.
			if _, err := controller.ParseShard(flags.watchLabelSelector); err != nil {
				return fmt.Errorf("invalid --watch-label-selector: %w", err)
			}
			// So is a storage driver the controller keeps no records with.
			driver, err := controller.ParseStorageDriver(os.Getenv(controller.EnvStorageDriver))
			if err != nil {
				return err
			}
			logger := logr.FromSlogHandler(slog.NewTextHandler(streams.ErrOut, nil))
			ctrllog.SetLogger(logger)
			kf := kubeFlags(cmd)
			clients, err := kf.Load()
			if err != nil {
				return err
			}
			mgr, err := controller.NewManager(clients.Config, controller.Options{
				Concurrency:             flags.concurrency,
				MetricsBindAddress:      flags.metricsBindAddress,
				MetricsPlainHTTP:        !flags.metricsSecure,
				HealthProbeBindAddress:  flags.healthProbeBindAddress,
				LeaderElection:          flags.leaderElect,
				LeaderElectionNamespace: flags.leaderElectionNamespace,
				Namespace:               kf.Namespace,
				WatchLabelSelector:      flags.watchLabelSelector,
				CacheDir:                flags.cacheDir,
				Logger:                  logger,
				Identity:                podIdentity(),
				DefaultServiceAccount:   flags.defaultServiceAccount,
				StatusChartOutput:       flags.statusChartOutput,
				RequireVerified:         flags.requireVerified,
				CloudKMSDecryption:      flags.cloudKMSDecryption,
				AllowedSigners:          flags.allowedSigners,
				AllowedIssuers:          flags.allowedIssuers,
				NoSecretWatch:           !flags.watchSecrets,
				KubeConfigReach:         flags.kubeConfigReach,
				MaxTimeout:              flags.maxTimeout,
				MaxIndexBytes:           maxIndex.Value(),
				MaxRecordExpansion:      recordLimit.Value(),
				StorageDriver:           driver,
				FetchesPerNamespace:     flags.fetchesPerNamespace,
				MinFetchRate:            minRate.Value(),
				RenderLimits:            limits,
				RenderSlots:             flags.concurrentRenders,
			})
			if err != nil {
				return explainManagerError(err)
			}
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.IntVar(&flags.concurrency, "concurrency", 4, "how many Releases are reconciled at once")
	f.StringVar(&flags.metricsBindAddress, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint; "0" turns it off`)
	f.BoolVar(&flags.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients whose token the API server authenticates and authorizes for get on /metrics (false: plain HTTP to anyone)")
	f.StringVar(&flags.healthProbeBindAddress, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz probes; "0" turns them off`)
	f.BoolVar(&flags.leaderElect, "leader-elect", false, "elect a leader among the controller's replicas, so that one acts at a time")
	f.StringVar(&flags.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the controller's own namespace in a cluster, else --namespace)")
	f.StringVar(&flags.defaultServiceAccount, "default-service-account", "", "ServiceAccount (of the Release's namespace) that a Release naming none in spec.serviceAccountName acts as (default: the namespace's default account)")
	f.BoolVar(&flags.requireVerified, "require-verified", false, "release only charts verified before they are released: a Release without spec.chart.verify, or with a chart from a ConfigMap or Secret, is refused (VerificationRequired), so that no tenant can opt out")
	f.BoolVar(&flags.cloudKMSDecryption, "allow-cloud-kms-decryption", false, "let spec.valuesFrom[].decrypt decrypt SOPS values with the cloud KMS keys (AWS KMS, GCP KMS, Azure Key Vault, HashiCorp Vault, Huawei Cloud KMS) that the controller's own cloud identity may use, which every tenant then borrows. Without it only the age keys of a Release's own Secret decrypt, and a document that only a cloud KMS key holds is refused (DecryptionFailed)")
	f.StringArrayVar(&flags.allowedSigners, "allowed-signer", nil, "with --require-verified, a regular expression (anchored at both ends; repeat the flag for more) one of which a verified chart's signer must match: a PGP key's identity and id, a cosign key's fingerprint (sha256:HEX) or a keyless certificate's identity. A chart signed by anyone else is refused (VerificationRequired). Default: any signer")
	f.StringArrayVar(&flags.allowedIssuers, "allowed-issuer", nil, "with --require-verified, a regular expression (anchored at both ends; repeat the flag for more) one of which a keyless cosign signer's OIDC issuer must match; a chart whose signer another issuer vouched for is refused (VerificationRequired). Default: any issuer")
	f.BoolVar(&flags.statusChartOutput, "status-chart-output", false, "show what a chart's own code outputs (the end of a failed hook's logs, a template's fail or required message) in the Release's status.blockers[].logTail. Off by default: that output can print the release's values, Secrets included, and anyone who may view a Release's namespace reads its status. Events and conditions never carry it")
	f.BoolVar(&flags.watchSecrets, "watch-secrets", true, "watch the metadata of Secrets, to reconcile at once a Release whose values, chart credentials or kubeconfig Secret changed. It needs list and watch on Secrets, which RBAC cannot limit to metadata: the controller's account may then read every Secret's data, though it asks for none. false: no right on Secrets; such a change is seen at the Release's next reconcile (its interval)")
	f.StringVar(&flags.watchLabelSelector, "watch-label-selector", "", "reconcile, watch and cache only the Releases this label selector selects, e.g. sharding.berth.dev/key=shard1, or !sharding.berth.dev/key for the Releases of no shard. The leader election Lease is then the shard's own, berth-controller-HASH.berth.dev (HASH: the first 8 hex digits of the SHA-256 of the selector, its requirements sorted by key), so that one shard's replicas elect one leader and shards never contend; without it, berth-controller.berth.dev")
	f.BoolVar(&flags.kubeConfigReach.InsecureTLS, strings.TrimPrefix(inputs.FlagAllowKubeConfigInsecureTLS, "--"), false, "use a Release's kubeconfig whose cluster sets insecure-skip-tls-verify: true (by default refused: anyone between the controller and the server could answer as the cluster)")
	f.BoolVar(&flags.kubeConfigReach.Proxy, strings.TrimPrefix(inputs.FlagAllowKubeConfigProxy, "--"), false, "use a Release's kubeconfig whose cluster sets proxy-url (by default refused: the controller would connect through whatever proxy a Release's author names)")
	f.BoolVar(&flags.kubeConfigReach.PlainHTTP, strings.TrimPrefix(inputs.FlagAllowKubeConfigHTTP, "--"), false, "use a Release's kubeconfig whose server is http:// (by default refused: its credentials would go in the clear)")
	f.StringVar(&flags.maxIndexSize, "max-index-size", "4Mi", "largest Helm repository index.yaml a Release may fetch, e.g. 16Mi; a larger one is refused (ChartUnavailable). Parsing an index takes some 35 times its size in memory, so raise the controller's memory limit with it")
	f.StringVar(&flags.recordExpansionLimit, "record-expansion-limit", "32Mi", "most a release's record, its parts or its journal may expand to once decompressed, and at most 20 times its compressed size beyond 4Mi; one that expands further is not read (InvalidRecord). A record of 3 MiB, as the largest berth stores, expands to some 26 MiB; decoding one holds about twice that, and the decodes under way share twice this limit")
	f.IntVar(&flags.fetchesPerNamespace, "fetches-per-namespace", controller.DefaultFetchesPerNamespace, "how many of the controller's 4 chart fetches one namespace's Releases may have under way at once; namespaces waiting for a fetch take turns, so that one namespace's slow repositories never hold every fetch")
	def := chart.DefaultRenderLimits()
	f.StringVar(&flags.renderMemory, "render-memory", resource.NewQuantity(def.Memory, resource.BinarySI).String(), "memory each render of a Release's chart may take: its templates run in a renderer process of their own, stopped past this (RenderBudgetExceeded)")
	f.DurationVar(&flags.renderCPU, "render-cpu", def.CPU, "CPU time each render of a Release's chart may spend (whole seconds); a template that loops is stopped past it, and at the Release's timeout in any case")
	f.StringVar(&flags.renderOutput, "render-output", resource.NewQuantity(def.Output, resource.BinarySI).String(), "most a render of a Release's chart may write, its rendered files together")
	f.IntVar(&flags.renderObjects, "render-objects", def.Objects, "most YAML documents a render of a Release's chart may write")
	f.IntVar(&flags.concurrentRenders, "concurrent-renders", chart.DefaultRenderSlots, "how many renders run at once; each may take --render-memory beside the controller's own memory, so the controller's memory limit must hold this many")
	f.StringVar(&flags.minFetchRate, "min-fetch-rate", "1Ki", "fewest bytes a second a repository's or registry's answer may come at, measured over 10-second windows (the first a grace); a slower transfer is ended and its Release says which host, the rate and the minimum (ChartUnavailable). 0: no minimum")
	f.DurationVar(&flags.maxTimeout, "max-timeout", controller.DefaultMaxTimeout, "longest spec.timeout a Release is granted: one that asks for more runs each operation with this and has the condition TimeoutCapped. It bounds how long one Release holds a worker (its reconcile ends at most a minute after it); 0 grants any timeout")
	f.StringVar(&flags.cacheDir, "cache-dir", "", "directory of the controller's chart repository and chart caches (default: berth-controller in the user's cache directory)")
	return cmd
}

// podIdentity names the controller's Pod (namespace/name) from POD_NAMESPACE and POD_NAME,
// which its chart sets from the downward API; empty out of a cluster.
func podIdentity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		return ""
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns + "/" + name
	}
	return name
}

// renderLimits are the render budget the flags give, or an error naming the flag at fault.
func (f *controllerFlags) renderLimits() (chart.RenderLimits, error) {
	memory, err := resource.ParseQuantity(f.renderMemory)
	if err != nil || memory.Value() <= 0 {
		return chart.RenderLimits{}, fmt.Errorf("invalid --render-memory %q: give a positive size like 128Mi", f.renderMemory)
	}
	output, err := resource.ParseQuantity(f.renderOutput)
	if err != nil || output.Value() <= 0 {
		return chart.RenderLimits{}, fmt.Errorf("invalid --render-output %q: give a positive size like 32Mi", f.renderOutput)
	}
	switch {
	case f.renderCPU < time.Second:
		return chart.RenderLimits{}, fmt.Errorf("invalid --render-cpu %s: give at least 1s", f.renderCPU)
	case f.renderObjects < 1:
		return chart.RenderLimits{}, fmt.Errorf("invalid --render-objects %d: give at least 1", f.renderObjects)
	case f.concurrentRenders < 1:
		return chart.RenderLimits{}, fmt.Errorf("invalid --concurrent-renders %d: give at least 1", f.concurrentRenders)
	}
	return chart.RenderLimits{Memory: memory.Value(), CPU: f.renderCPU, Output: output.Value(), Objects: f.renderObjects}, nil
}

// explainManagerError words the controller's refusal of its options in the flags that gave them.
func explainManagerError(err error) error {
	if errors.Is(err, controller.ErrSignersWithoutRequire) {
		return errors.New("--allowed-signer and --allowed-issuer apply with --require-verified only: a chart that is not verified has no signer to check; add --require-verified")
	}
	return err
}
