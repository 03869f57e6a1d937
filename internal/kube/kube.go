// Package kube builds Kubernetes clients the way kubectl and Helm do: from --kubeconfig,
// --kube-context, KUBECONFIG, -n/--namespace and Helm's other --kube-* settings.
package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/yamlbound"
)

const (
	// DefaultQPS and DefaultBurst are generous: an install of a large chart makes three calls an
	// object (read, dry run, apply), a few hundred at once, and client-side throttling would
	// make it wait for nothing. The engine's bounded concurrency keeps the load in check; the API
	// server's priority and fairness protects it.
	DefaultQPS   = 500
	DefaultBurst = 1000
	userAgent    = "berth"
)

// Flags select the cluster, user and namespace, as kubectl's and Helm's flags of the same names do
// (Helm's settings fill them from its --kube-* flags and HELM_KUBE* variables).
type Flags struct {
	// Kubeconfig is the path of the kubeconfig file; empty means KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context to use; empty means its current context.
	Context string
	// Namespace overrides the context's namespace; empty means the context's, then "default".
	Namespace string
	// APIServer overrides the context's server address.
	APIServer string
	// Token is a bearer token that overrides the context's credentials.
	Token string
	// AsUser and AsGroups are the user and groups to impersonate.
	AsUser   string
	AsGroups []string
	// CAFile is a certificate authority file for the API server's certificate.
	CAFile string
	// TLSServerName is the name to check the API server's certificate against.
	TLSServerName string
	// InsecureSkipTLSVerify does not check the API server's certificate.
	InsecureSkipTLSVerify bool
	// QPS and Burst limit the requests per second, as Helm's --qps and --burst-limit do: zero
	// means DefaultQPS and DefaultBurst; a negative Burst turns client-side throttling off.
	QPS   float32
	Burst int
}

// Clients are the clients of one cluster and the namespace commands act in.
type Clients struct {
	Config *rest.Config
	// Namespace is the effective namespace: the flag, else the context's, else "default".
	Namespace string
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	// Metadata reads objects' metadata alone.
	Metadata metadata.Interface
	// Discovery asks the API server what it serves on first use and keeps the answers.
	Discovery *Discovery
	// Mapper is Discovery's: it discovers on first use; Reset it after creating CRDs so their
	// kinds are found.
	Mapper meta.ResettableRESTMapper
	// Source names the kubeconfig and context the clients were built from, for messages.
	Source string
}

// Load reads the kubeconfig and builds the clients. It does not contact the cluster; see Reachable.
func (f Flags) Load() (*Clients, error) {
	loader := f.Loader()
	if err := f.checkAliases(loader); err != nil {
		return nil, err
	}
	source := f.describe(loader)
	cfg, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("%s: no configuration found: give a kubeconfig file or set KUBECONFIG", source)
		}
		return nil, fmt.Errorf("%s: load: %w", source, err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("%s: namespace: %w", source, err)
	}
	if ns == "" {
		ns = "default"
	}
	cfg.QPS, cfg.Burst = f.QPS, f.Burst
	return newClients(cfg, ns, source, DefaultDiscoveryLimits())
}

// NewClients builds clients from a ready configuration (tests use this with a test cluster's config).
// Its QPS and Burst are taken as Flags takes them.
func NewClients(cfg *rest.Config, namespace string) (*Clients, error) {
	return NewClientsWithin(cfg, namespace, DefaultDiscoveryLimits())
}

// NewClientsWithin is NewClients whose discovery is bounded by limits (RemoteDiscoveryLimits
// for a server another party names).
func NewClientsWithin(cfg *rest.Config, namespace string, limits DiscoveryLimits) (*Clients, error) {
	return newClients(rest.CopyConfig(cfg), namespace, fmt.Sprintf("server %q", cfg.Host), limits)
}

// newClients builds the clients of cfg, which it may change, their discovery within limits.
func newClients(cfg *rest.Config, namespace, source string, limits DiscoveryLimits) (*Clients, error) {
	throttle(cfg)
	BoundRequests(cfg)
	countDiscovery(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = userAgent
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client for %s: %w", source, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client for %s: %w", source, err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create metadata client for %s: %w", source, err)
	}
	disc := NewDiscoveryWithin(client.Discovery(), limits)
	return &Clients{
		Config:    cfg,
		Namespace: namespace,
		Client:    client,
		Dynamic:   dyn,
		Metadata:  meta,
		Discovery: disc,
		Mapper:    disc.Mapper(),
		Source:    source,
	}, nil
}

// WithDiscovery returns a copy of c that reads discovery and maps kinds through d, which
// clients of the same API server share, instead of asking for itself.
func (c *Clients) WithDiscovery(d *Discovery) *Clients {
	out := *c
	out.Discovery, out.Mapper = d, d.Mapper()
	return &out
}

// Reachable asks the API server for its version and returns an error naming the kubeconfig and
// context when it does not answer. Discovery keeps the version it answered, which the
// operation's capabilities then read without asking again.
func (c *Clients) Reachable(ctx context.Context) error {
	_, err := c.Discovery.ServerVersion(ctx)
	if err != nil {
		return fmt.Errorf("kubernetes cluster unreachable (%s, server %q): %w", c.Source, c.Config.Host, err)
	}
	return nil
}

// Loader is the kubeconfig loader with f's overrides applied, the one kubectl's and Helm's
// flags of the same names build.
func (f Flags) Loader() clientcmd.ClientConfig {
	groups := f.AsGroups
	return (&genericclioptions.ConfigFlags{
		KubeConfig:       &f.Kubeconfig,
		Context:          &f.Context,
		Namespace:        &f.Namespace,
		APIServer:        &f.APIServer,
		BearerToken:      &f.Token,
		Impersonate:      &f.AsUser,
		ImpersonateGroup: &groups,
		CAFile:           &f.CAFile,
		TLSServerName:    &f.TLSServerName,
		Insecure:         &f.InsecureSkipTLSVerify,
	}).ToRawKubeConfigLoader()
}

// checkAliases refuses, by its file, a kubeconfig whose YAML aliases add more than
// yamlbound.Local once expanded, before the loader expands them. A file that cannot be read is
// left to the loader to name.
func (f Flags) checkAliases(loader clientcmd.ClientConfig) error {
	files := []string{f.Kubeconfig}
	if f.Kubeconfig == "" {
		files = loader.ConfigAccess().GetLoadingPrecedence()
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if err := yamlbound.Check(data, yamlbound.Local); err != nil {
			return fmt.Errorf("kubeconfig %q: %w", file, err)
		}
	}
	return nil
}

// describe names the kubeconfig files and the context: kubeconfig "FILE", context "NAME".
func (f Flags) describe(loader clientcmd.ClientConfig) string {
	files := f.Kubeconfig
	if files == "" {
		files = strings.Join(loader.ConfigAccess().GetLoadingPrecedence(), string(filepath.ListSeparator))
	}
	name := f.Context
	if name == "" {
		if raw, err := loader.RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	if name == "" {
		return fmt.Sprintf("kubeconfig %q", files)
	}
	return fmt.Sprintf("kubeconfig %q, context %q", files, name)
}

// throttle sets cfg's client-side rate limit from its QPS and Burst, read as Flags reads them.
func throttle(cfg *rest.Config) {
	switch {
	case cfg.Burst < 0:
		// client-go makes no rate limiter for a negative QPS.
		cfg.QPS, cfg.Burst = -1, 0
		return
	case cfg.Burst == 0:
		cfg.Burst = DefaultBurst
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if float32(cfg.Burst) < cfg.QPS {
		cfg.Burst = int(cfg.QPS)
	}
}
