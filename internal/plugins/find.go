package plugins

import (
	"fmt"
	"path/filepath"
)

// Found are the plugins of some directories, and those that did not load.
type Found struct {
	Plugins []*Plugin
	// Broken are the errors of the directories with a plugin.yaml that did not load: Helm
	// skips them with a warning.
	Broken []error
}

// Find returns the plugins under the directories of dirs (a list of paths, as HELM_PLUGINS is:
// each plugin is a directory of one of them), of type typ when typ is not empty. Two plugins of
// one name in one directory are an error, as in Helm.
func Find(dirs string, typ string) (Found, error) {
	var found Found
	for _, dir := range filepath.SplitList(dirs) {
		matches, err := filepath.Glob(filepath.Join(dir, "*", FileName))
		if err != nil {
			return Found{}, fmt.Errorf("search for plugins in %s: %w", dir, err)
		}
		names := map[string]string{}
		for _, m := range matches {
			p, err := Load(filepath.Dir(m))
			if err != nil {
				found.Broken = append(found.Broken, err)
				continue
			}
			if other, ok := names[p.Name]; ok {
				return Found{}, fmt.Errorf("two plugins claim the name %q at %q and %q", p.Name, other, p.Dir)
			}
			names[p.Name] = p.Dir
			if typ == "" || p.Type == typ {
				found.Plugins = append(found.Plugins, p)
			}
		}
	}
	return found, nil
}

// Named returns the installed plugin called name.
func Named(dirs, name string) (*Plugin, error) {
	found, err := Find(dirs, "")
	if err != nil {
		return nil, err
	}
	for _, p := range found.Plugins {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, &NotFoundError{Name: name}
}
