package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/berthdev/berth/internal/source"
)

func newRegistryCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "login to or logout from a registry",
		Long: `This command consists of multiple subcommands to interact with registries.

Credentials are kept where helm keeps them (--registry-config, HELM_REGISTRY_CONFIG),
so a 'helm registry login' serves berth and a 'berth registry login' serves helm.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newRegistryLoginCommand(streams), newRegistryLogoutCommand(streams))
	return cmd
}

type registryLoginFlags struct {
	source.LoginOptions
	passwordStdin bool
}

func newRegistryLoginCommand(streams Streams) *cobra.Command {
	var flags registryLoginFlags
	cmd := &cobra.Command{
		Use:   "login [host]",
		Short: "login to a registry",
		Long: `Authenticate to a remote registry. The credentials are stored only once the
registry accepted them.

For example for Github Container Registry:

    echo "$GITHUB_TOKEN" | berth registry login ghcr.io -u $GITHUB_USER --password-stdin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := flags.LoginOptions
			var err error
			opts.Username, opts.Password, err = usernamePassword(streams, opts.Username, opts.Password, flags.passwordStdin)
			if err != nil {
				return err
			}
			return withRegistryHint(source.Login(cmd.Context(), helmSettings(cmd), args[0], opts, streams.Out))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&flags.Username, "username", "u", "", "registry username")
	f.StringVarP(&flags.Password, "password", "p", "", "registry password or identity token")
	f.BoolVar(&flags.passwordStdin, "password-stdin", false, "read password or identity token from stdin")
	f.BoolVar(&flags.Insecure, "insecure", false, "allow connections to TLS registry without certs")
	f.StringVar(&flags.CertFile, "cert-file", "", "identify registry client using this SSL certificate file")
	f.StringVar(&flags.KeyFile, "key-file", "", "identify registry client using this SSL key file")
	f.StringVar(&flags.CAFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&flags.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart upload")
	return cmd
}

func newRegistryLogoutCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "logout [host]",
		Short: "logout from a registry",
		Long:  `Remove credentials stored for a remote registry.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRegistryHint(source.Logout(cmd.Context(), helmSettings(cmd), args[0], streams.Out))
		},
	}
}

// usernamePassword returns the credentials to log in with, as helm registry login takes them:
// the password from stdin with --password-stdin, else from --password (with a warning), else
// asked for on the terminal (with the username, when it was not given).
func usernamePassword(streams Streams, username, password string, fromStdin bool) (string, string, error) {
	switch {
	case fromStdin:
		b, err := io.ReadAll(streams.In)
		if err != nil {
			return "", "", fmt.Errorf("read password from stdin: %w", err)
		}
		password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		return username, password, nil
	case password != "":
		fmt.Fprintln(streams.ErrOut, "WARNING: using --password via the CLI is insecure. Use --password-stdin")
		return username, password, nil
	}
	in, ok := streams.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return "", "", errors.New("no password: give it with --password-stdin (or --password), or run on a terminal to be asked for it")
	}
	r := bufio.NewReader(in)
	if username == "" {
		fmt.Fprint(streams.ErrOut, "Username: ")
		line, err := r.ReadString('\n')
		if err != nil {
			return "", "", fmt.Errorf("read username: %w", err)
		}
		username = strings.TrimSpace(line)
	}
	prompt, missing := "Password: ", "password required"
	if username == "" {
		prompt, missing = "Token: ", "token required"
	}
	fmt.Fprint(streams.ErrOut, prompt)
	b, err := term.ReadPassword(int(in.Fd()))
	fmt.Fprintln(streams.ErrOut)
	if err != nil {
		return "", "", fmt.Errorf("read password: %w", err)
	}
	if len(b) == 0 {
		return "", "", errors.New(missing)
	}
	return username, string(b), nil
}

// withRegistryHint adds to a chart source or registry error what to do about its cause. Other
// errors are returned as they are.
func withRegistryHint(err error) error {
	var (
		srcErr *source.Error
		regErr *source.RegistryError
		hint   string
	)
	switch {
	case errors.As(err, &srcErr) && srcErr.Host != "" && strings.Contains(srcErr.Version, "@"):
		hint = "--version takes a version or a range, not a digest: put the digest in the reference (oci://HOST/PATH/CHART@sha256:...), with --version to check that it is that version's"
	case errors.As(err, &srcErr) && srcErr.Host != "":
		hint = registryHint(srcErr.Kind, srcErr.Host, false)
	case errors.As(err, &regErr):
		hint = registryHint(regErr.Kind, regErr.Host, regErr.Op == source.OpLogin)
	}
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w; %s", err, hint)
}

// registryHint says what to do about a failure of kind at the registry host; login is true for
// a failed registry login, whose flags differ.
func registryHint(kind source.Kind, host string, login bool) string {
	switch kind {
	case source.KindUnreachable:
		return fmt.Sprintf("cannot reach the registry %s: check its host and port and that it is up", host)
	case source.KindTLS:
		if login {
			return fmt.Sprintf("the certificate of %s is not trusted: give its CA with --ca-file (or skip the check with --insecure)", host)
		}
		return fmt.Sprintf("the certificate of %s is not trusted: give its CA with --ca-file (or skip the check with --insecure-skip-tls-verify)", host)
	case source.KindPlainHTTP:
		return fmt.Sprintf("%s serves plain HTTP: add --plain-http", host)
	case source.KindNoCredentials:
		return fmt.Sprintf("%s asks for credentials: log in with `berth registry login %s`, or give --username and --password", host, host)
	case source.KindUnauthorized:
		if login {
			return fmt.Sprintf("%s refused the username and password: check them; nothing was stored", host)
		}
		return fmt.Sprintf("%s refused the credentials: check --username and --password, or log in again with `berth registry login %s`", host, host)
	case source.KindNotFound:
		return "no such chart, version or digest in the registry: check the reference and --version"
	case source.KindDigestMismatch:
		return "the digest is not that of the version asked for: give the digest `berth push` printed, or drop --version"
	case source.KindNotServed:
		return fmt.Sprintf("%s named the chart's digest but did not serve its content: check the reference, or push the chart there again", host)
	case source.KindNotChart:
		return "the artifact is not a Helm chart: give the reference of a chart pushed with `berth push` or `helm push`"
	default:
		return ""
	}
}
