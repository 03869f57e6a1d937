package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ErrModified is an update of a plugin whose git working tree was changed.
var ErrModified = errors.New("plugin repo was modified")

// ErrNoSource is an update of a plugin that is not a git working tree: nothing says where to
// update it from.
var ErrNoSource = errors.New("cannot get information about plugin source")

// git runs git with args in dir within ctx and returns what it printed.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out := &limitedBuffer{max: 1 << 20}
	env := environ(map[string]string{"GIT_TERMINAL_PROMPT": "0"})
	if err := run(ctx, "git", append([]string{"-C", dir}, args...), env, out); err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

// cloneRepo clones the git repository opts.Source into a staging directory of opts.Dir, checks
// out opts.Version, and moves it into place under the last element of the source's path, as
// Helm does.
func cloneRepo(ctx context.Context, opts InstallOptions) (*Plugin, error) {
	staging, err := os.MkdirTemp(opts.Dir, ".install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	clone := filepath.Join(staging, "repo")
	if _, err := git(ctx, staging, "clone", "--quiet", "--", opts.Source, clone); err != nil {
		return nil, err
	}
	if opts.Version != "" {
		ref, err := solveVersion(ctx, clone, opts.Version, opts.Source)
		if err != nil {
			return nil, err
		}
		if _, err := git(ctx, clone, "checkout", "--quiet", ref); err != nil {
			return nil, err
		}
	}
	return stage(clone, opts.Dir, strings.TrimSuffix(filepath.Base(opts.Source), ".git"))
}

// solveVersion is the git reference version names: itself when it is one, else the highest
// tag that satisfies it as a semver constraint.
func solveVersion(ctx context.Context, dir, version, source string) (string, error) {
	if _, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", version+"^{commit}"); err == nil {
		return version, nil
	}
	constraint, err := semver.NewConstraint(version)
	if err != nil {
		return "", err
	}
	tags, err := git(ctx, dir, "tag", "--list")
	if err != nil {
		return "", err
	}
	var versions []*semver.Version
	for _, t := range strings.Fields(tags) {
		if v, err := semver.NewVersion(t); err == nil {
			versions = append(versions, v)
		}
	}
	sort.Sort(sort.Reverse(semver.Collection(versions)))
	for _, v := range versions {
		if constraint.Check(v) {
			return v.Original(), nil
		}
	}
	return "", fmt.Errorf("requested version %q does not exist for plugin %q", version, source)
}

// pull updates the git working tree dir as Helm's VCS installer does: refused when it was
// modified; tags fetched; a branch checked out pulled (a tag or commit checked out stays).
func pull(ctx context.Context, dir string) error {
	if !exists(filepath.Join(dir, ".git")) {
		return ErrNoSource
	}
	if status, err := git(ctx, dir, "status", "--porcelain"); err != nil {
		return err
	} else if status != "" {
		return ErrModified
	}
	if _, err := git(ctx, dir, "fetch", "--quiet", "--tags", "origin"); err != nil {
		return err
	}
	if _, err := git(ctx, dir, "symbolic-ref", "-q", "HEAD"); err != nil {
		return nil
	}
	_, err := git(ctx, dir, "pull", "--quiet")
	return err
}
