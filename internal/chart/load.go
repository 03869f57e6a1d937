// Package chart loads and renders Helm charts with Helm's own SDK, and splits the result into the
// release's resources, hooks, CRDs and notes. It never talks to a cluster: the caller passes the
// cluster's capabilities.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// Load loads a chart from a directory or a packaged .tgz with Helm's loader, within
// LocalBounds. Charts of API version v1 and v2 (what Helm v4 calls chart v2) are supported. The
// chart's dependencies must be present in its charts/ directory.
func Load(path string) (*chartv2.Chart, error) {
	return LoadWithin(path, "", LocalBounds())
}

// LoadWithin is Load of a chart within b, checked as it streams before Helm's loader holds any
// of it (Check): a *ContentSizeError or an *AliasError naming it name (path when "").
func LoadWithin(path, name string, b Bounds) (*chartv2.Chart, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("load chart %s: no such file or directory: give the path of a chart directory or a packaged chart (.tgz)", path)
		}
		return nil, fmt.Errorf("load chart %s: %w", path, err)
	}
	if err := Check(name, path, b); err != nil {
		return nil, err
	}
	loaded, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w: check that it is a chart directory with a valid Chart.yaml or a packaged chart (.tgz)", path, err)
	}
	return Loaded(path, loaded)
}

// LoadArchive loads a packaged chart (.tgz) from memory with Helm's loader, as LoadWithin loads
// one from a file; name says where the package comes from.
func LoadArchive(name string, data []byte, b Bounds) (*chartv2.Chart, error) {
	if err := CheckArchive(name, bytes.NewReader(data), b); err != nil {
		return nil, err
	}
	loaded, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w: check that it is a packaged chart (.tgz), as helm package makes it", name, err)
	}
	return Loaded(name, loaded)
}

// Loaded checks that a chart Helm's loader loaded from path is of an API version berth renders
// and has its dependencies, and returns it.
func Loaded(path string, loaded helmchart.Charter) (*chartv2.Chart, error) {
	ch, ok := loaded.(*chartv2.Chart)
	if !ok {
		return nil, fmt.Errorf("load chart %s: chart API version %T is not supported: use apiVersion v2 in Chart.yaml", path, loaded)
	}
	if deps := ch.Metadata.Dependencies; len(deps) > 0 {
		reqs := make([]helmchart.Dependency, 0, len(deps))
		for _, d := range deps {
			reqs = append(reqs, d)
		}
		if err := action.CheckDependencies(ch, reqs); err != nil {
			return nil, fmt.Errorf("load chart %s: %w: run 'helm dependency build %s'", path, err, path)
		}
	}
	return ch, nil
}
