package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/source"
)

func newRepoCommand(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repo add|remove|list|index|update [ARGS]",
		Short: "add, list, remove, update, and index chart repositories",
		Long: `Add, list, remove, update and index chart repositories.

berth shares Helm's repositories file and index cache (HELM_REPOSITORY_CONFIG,
HELM_REPOSITORY_CACHE, --repository-config, --repository-cache): a repository
added with 'helm repo add' is there for berth, and the other way round.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newRepoAddCommand(streams))
	cmd.AddCommand(newRepoListCommand(streams))
	cmd.AddCommand(newRepoUpdateCommand(streams))
	cmd.AddCommand(newRepoRemoveCommand(streams), newRepoIndexCommand(streams))
	return cmd
}

// explainRepositoryError adds what to do to the errors of adding, updating and removing
// repositories. adding says the error is that of `repo add`, whose flags fix what an updated
// repository's entry lacks.
func explainRepositoryError(err error, adding bool) error {
	var re *source.RepositoryError
	var none *source.NoRepositoryError
	switch {
	case errors.As(err, &re):
		fix := "with"
		if !adding {
			fix = fmt.Sprintf("with `berth repo add %s %s --force-update` and", re.Name, re.URL)
		}
		var hint string
		switch re.Kind {
		case source.KindUnreachable:
			hint = "check the URL, the network and any proxy (HTTPS_PROXY)"
		case source.KindUnauthorized:
			hint = fmt.Sprintf("give the repository's credentials %s --username and --password-stdin", fix)
		case source.KindTLS:
			hint = fmt.Sprintf("give the CA that signed the server's certificate %s --ca-file (or skip the check with --insecure-skip-tls-verify)", fix)
		case source.KindMissing:
			hint = "there is no index.yaml at that URL: give the URL of a chart repository"
		case source.KindTimeout:
			hint = "check the URL, the network and any proxy (HTTPS_PROXY), then try again (--timeout bounds the download)"
		case source.KindCanceled:
			return err
		default:
			hint = "check that the URL is that of a chart repository (it serves index.yaml)"
		}
		if adding {
			hint = "nothing was added: " + hint
		} else {
			hint = "its cached index is kept: " + hint
		}
		return &hintedError{err: err, hint: hint}
	case errors.Is(err, source.ErrRepositoryExists):
		return &hintedError{err: err, hint: "choose another name, or replace it with --force-update"}
	case errors.As(err, &none):
		return &hintedError{err: err, hint: "list the repositories with `berth repo list`"}
	case errors.Is(err, source.ErrNoRepositories):
		return &hintedError{err: err, hint: "add one with `berth repo add NAME URL`"}
	}
	return err
}
