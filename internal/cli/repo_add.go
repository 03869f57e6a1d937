package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
)

// deprecatedRepos are the repositories that were deleted for good, and where their charts went.
var deprecatedRepos = map[string]string{
	"//kubernetes-charts.storage.googleapis.com":           "https://charts.helm.sh/stable",
	"//kubernetes-charts-incubator.storage.googleapis.com": "https://charts.helm.sh/incubator",
}

type repoAddFlags struct {
	entry                repo.Entry
	passwordStdin        bool
	forceUpdate          bool
	allowDeprecatedRepos bool
	timeout              time.Duration
}

func newRepoAddCommand(streams Streams) *cobra.Command {
	var flags repoAddFlags
	cmd := &cobra.Command{
		Use:   "add [NAME] [URL]",
		Short: "add a chart repository",
		Long: `Add a chart repository under NAME. Its index is downloaded first: a repository
that cannot be reached, refuses the credentials or has no valid index.yaml is
not added, and Helm's files stay as they were.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e := flags.entry
			e.Name, e.URL = args[0], args[1]
			if !flags.allowDeprecatedRepos {
				for old, replacement := range deprecatedRepos {
					if strings.Contains(e.URL, old) {
						return fmt.Errorf("repo %q is no longer available; try %q instead", e.URL, replacement)
					}
				}
			}
			if e.Username != "" && e.Password == "" {
				password, err := readPassword(streams, flags.passwordStdin)
				if err != nil {
					return err
				}
				e.Password = password
			}
			res, err := source.AddRepository(cmd.Context(), helmSettings(cmd), e, source.AddOptions{Force: flags.forceUpdate, Timeout: flags.timeout})
			if err != nil {
				return explainRepositoryError(err, true)
			}
			if res == source.Unchanged {
				fmt.Fprintf(streams.Out, "%q already exists with the same configuration, skipping\n", e.Name)
				return nil
			}
			fmt.Fprintf(streams.Out, "%q has been added to your repositories\n", e.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.entry.Username, "username", "", "chart repository username")
	f.StringVar(&flags.entry.Password, "password", "", "chart repository password")
	f.BoolVar(&flags.passwordStdin, "password-stdin", false, "read chart repository password from stdin")
	f.BoolVar(&flags.forceUpdate, "force-update", false, "replace (overwrite) the repo if it already exists")
	f.StringVar(&flags.entry.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	f.StringVar(&flags.entry.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	f.StringVar(&flags.entry.CAFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&flags.entry.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the repository")
	f.BoolVar(&flags.allowDeprecatedRepos, "allow-deprecated-repos", false, "by default, this command will not allow adding official repos that have been permanently deleted. This disables that behavior")
	f.BoolVar(&flags.entry.PassCredentialsAll, "pass-credentials", false, "pass credentials to all domains")
	f.DurationVar(&flags.timeout, "timeout", getter.DefaultHTTPTimeout*time.Second, "time to wait for the index file download to complete")
	return cmd
}

// readPassword reads a repository password as Helm does: all of stdin with --password-stdin
// (without its final newline), else a prompt on the terminal.
func readPassword(streams Streams, fromStdin bool) (string, error) {
	if fromStdin {
		b, err := io.ReadAll(streams.In)
		if err != nil {
			return "", fmt.Errorf("read the password from stdin: %w", err)
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
	in, ok := streams.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return "", errors.New("--username without a password: give --password, or --password-stdin to read it from stdin")
	}
	fmt.Fprint(streams.Out, "Password: ")
	b, err := term.ReadPassword(int(in.Fd()))
	fmt.Fprintln(streams.Out)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	return string(b), nil
}
