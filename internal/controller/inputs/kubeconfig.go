package inputs

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berthdev/berth/internal/yamlbound"
)

// maxKubeConfig bounds the kubeconfig a Release's Secret holds: a kubeconfig with a CA bundle
// and a client certificate is a few KiB.
const maxKubeConfig = 512 << 10

// KubeConfigReach is what a Release's kubeconfig may make the controller do beyond connecting,
// over verified TLS, straight to its server. Each is refused by default: the controller would
// connect from its own network position wherever a Release's author says.
type KubeConfigReach struct {
	// InsecureTLS allows insecure-skip-tls-verify: true.
	InsecureTLS bool
	// Proxy allows proxy-url.
	Proxy bool
	// PlainHTTP allows http:// servers (credentials sent in the clear).
	PlainHTTP bool
}

// The flags of berth controller that allow what KubeConfigReach names: a refusal names the one
// that would allow it.
const (
	FlagAllowKubeConfigInsecureTLS = "--allow-kubeconfig-insecure-tls"
	FlagAllowKubeConfigProxy       = "--allow-kubeconfig-proxy"
	FlagAllowKubeConfigHTTP        = "--allow-kubeconfig-http"
)

// KubeConfigError is a kubeconfig a Release names that the controller will not use; the
// controller gives the Release the reason InvalidKubeConfig for it.
type KubeConfigError struct {
	Namespace, Secret, Key string
	// Field is the kubeconfig's field at fault (users[NAME].user.exec), if one is.
	Field string
	Msg   string
	// Allow is the flag of berth controller that would allow the field, when one would.
	Allow string
	// Err is the typed cause, when there is one (a *yamlbound.ExpansionError).
	Err error
}

func (e *KubeConfigError) Unwrap() error { return e.Err }

func (e *KubeConfigError) Error() string {
	where := fmt.Sprintf("kubeconfig in Secret/%s/%s key %s", e.Namespace, e.Secret, e.Key)
	if e.Field != "" {
		where += ": " + e.Field
	}
	msg := where + ": " + e.Msg
	if e.Allow != "" {
		msg += "; the controller allows it only when started with " + e.Allow
	}
	return msg
}

// ReadKubeConfig reads a kubeconfig of a Release and returns the client configuration of its
// current context. What would make the controller run a command (exec, auth-provider) or read
// one of its own files (certificate-authority, client-certificate, client-key, tokenFile) is
// refused, whichever context it is in: a Release's author must not do either as the controller.
// So are, unless allow allows them, a cluster that skips TLS verification, goes through a proxy,
// or whose server is plain HTTP. A kubeconfig over maxKubeConfig is refused unread, and one whose
// YAML aliases expand past yamlbound.Tenant unconverted.
func ReadKubeConfig(data []byte, ns, secret, key string, allow KubeConfigReach) (*rest.Config, error) {
	fail := func(field, format string, args ...any) error {
		return &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > maxKubeConfig {
		return nil, fail("", "is %d bytes, more than %d KiB: a kubeconfig of one cluster is a few KiB", len(data), maxKubeConfig>>10)
	}
	// The loader converts the kubeconfig to JSON, expanding every alias: what they add is
	// counted first.
	if err := yamlbound.Check(data, yamlbound.Tenant); err != nil {
		return nil, &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Msg: err.Error(), Err: err}
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message can quote the content, credentials included: only its line.
		return nil, fail("", "not a kubeconfig: it does not parse as YAML or JSON%s", lineOf(err))
	}
	if err := refuseLocal(cfg, fail); err != nil {
		return nil, err
	}
	if err := refuseReach(cfg, allow, ns, secret, key); err != nil {
		return nil, err
	}
	if cfg.CurrentContext == "" {
		return nil, fail("current-context", "is empty: name the context to use")
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fail("", "%s", FirstLine(err.Error()))
	}
	if rc.Host == "" {
		return nil, fail("clusters[].cluster.server", "is empty")
	}
	// A server without a scheme is plain HTTP when the cluster has no TLS data.
	if u, _, err := rest.DefaultServerUrlFor(rc); err != nil {
		return nil, fail("clusters[].cluster.server", "is not a URL")
	} else if u.Scheme != "https" && !(u.Scheme == "http" && allow.PlainHTTP) {
		e := &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: "clusters[].cluster.server",
			Msg: fmt.Sprintf("is %s://%s, not https: the controller would send the credentials in the clear", u.Scheme, u.Host)}
		if u.Scheme == "http" {
			e.Allow = FlagAllowKubeConfigHTTP
		}
		return nil, e
	}
	return rc, nil
}

// refuseReach refuses every cluster of cfg that skips TLS verification, goes through a proxy or
// has a plain HTTP server, unless allow allows it.
func refuseReach(cfg *clientcmdapi.Config, allow KubeConfigReach, ns, secret, key string) error {
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		refuse := func(field, flag, msg string) error {
			return &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: fmt.Sprintf("clusters[%s].cluster.%s", name, field), Msg: msg, Allow: flag}
		}
		switch {
		case c.InsecureSkipTLSVerify && !allow.InsecureTLS:
			return refuse("insecure-skip-tls-verify", FlagAllowKubeConfigInsecureTLS,
				"is true: anyone on the way could answer as the cluster; put the cluster's CA in certificate-authority-data")
		case c.ProxyURL != "" && !allow.Proxy:
			return refuse("proxy-url", FlagAllowKubeConfigProxy,
				"is set: the controller goes through no proxy a Release names; remove it")
		}
		// A server without a scheme is judged where it is used (ReadKubeConfig).
		if u, err := url.Parse(c.Server); err == nil && strings.EqualFold(u.Scheme, "http") && !allow.PlainHTTP {
			return refuse("server", FlagAllowKubeConfigHTTP,
				fmt.Sprintf("is http://%s: the controller would send the credentials in the clear; use https://", u.Host))
		}
	}
	return nil
}

// lineOf is " (line N)" when err names the line of a YAML error, else "".
func lineOf(err error) string {
	if n, ok := YAMLLine(err); ok {
		return " (line " + n + ")"
	}
	return ""
}

// refuseLocal refuses every user and cluster of cfg that runs a command or reads a file.
func refuseLocal(cfg *clientcmdapi.Config, fail func(field, format string, args ...any) error) error {
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		field := func(f string) string { return fmt.Sprintf("users[%s].user.%s", name, f) }
		switch {
		case u.Exec != nil:
			return fail(field("exec"), "runs a command (%s) to get credentials: a Release may not make the controller run commands; put a token or client certificate data in the kubeconfig", u.Exec.Command)
		case u.AuthProvider != nil:
			return fail(field("auth-provider"), "uses the auth provider %s: a Release may not make the controller run one; put a token or client certificate data in the kubeconfig", u.AuthProvider.Name)
		case u.TokenFile != "":
			return fail(field("tokenFile"), "reads a file of the controller's: put the token in token")
		case u.ClientCertificate != "":
			return fail(field("client-certificate"), "reads a file of the controller's: put the certificate in client-certificate-data")
		case u.ClientKey != "":
			return fail(field("client-key"), "reads a file of the controller's: put the key in client-key-data")
		}
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		if cfg.Clusters[name].CertificateAuthority != "" {
			return fail(fmt.Sprintf("clusters[%s].cluster.certificate-authority", name), "reads a file of the controller's: put the CA in certificate-authority-data")
		}
	}
	return nil
}

// yamlLine finds the line number at the head of a YAML parser's message.
var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+):`)

// YAMLLine is the line a YAML parser's error names at its head, if it names one: what an input's
// refusal may say of a parse error, whose message can quote the input.
func YAMLLine(err error) (string, bool) {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return m[1], true
	}
	return "", false
}

// FirstLine is the first line of s, for a condition's message; a line that introduces what
// follows (ending in ":", a validation's failures, say) goes with the first of it.
func FirstLine(s string) string {
	line, rest, _ := strings.Cut(s, "\n")
	for strings.HasSuffix(line, ":") && strings.TrimSpace(rest) != "" {
		var next string
		next, rest, _ = strings.Cut(rest, "\n")
		line += " " + strings.TrimSpace(next)
	}
	return line
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
