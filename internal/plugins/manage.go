package plugins

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Uninstall removes the installed plugin p (its directory, or the link to it), with the archive
// and provenance file Helm kept beside it in dir, then runs its delete hook.
func Uninstall(ctx context.Context, p *Plugin, dir string, hooks io.Writer) error {
	if err := os.RemoveAll(p.Dir); err != nil {
		return err
	}
	if p.Version != "" {
		kept := filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", p.Name, p.Version))
		_ = os.Remove(kept)
		_ = os.Remove(kept + ".prov")
	}
	return p.RunHook(ctx, HookDelete, hooks)
}

// Update updates the installed plugin p from where it came, as Helm does: a plugin that is a
// git working tree (itself, or the directory it links to) is pulled; any other has no source
// to update from. It then runs the update hook of the plugin as it now is.
func Update(ctx context.Context, p *Plugin, hooks io.Writer) error {
	dir, err := filepath.EvalSymlinks(p.Dir)
	if err != nil {
		return err
	}
	if err := pull(ctx, dir); err != nil {
		return err
	}
	updated, err := Load(dir)
	if err != nil {
		return err
	}
	updated.Dir = p.Dir
	return updated.RunHook(ctx, HookUpdate, hooks)
}
