package chartpkg

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Create makes a new chart at path, whose last element is the chart's name, as helm create
// does: Helm's default chart, or a copy of starter, named by Starter. It returns the chart's
// directory. A starter that cannot be found is an *Error of KindNoStarter, and nothing is
// written.
func Create(path, starter, startersDir string) (string, error) {
	name, parent := filepath.Base(path), filepath.Dir(path)
	if starter == "" {
		return chartutil.Create(name, parent)
	}
	src, err := Starter(starter, startersDir)
	if err != nil {
		return "", err
	}
	meta := &chartv2.Metadata{
		Name:        name,
		Description: "A Helm chart for Kubernetes",
		Type:        "application",
		Version:     "0.1.0",
		AppVersion:  "0.1.0",
		APIVersion:  chartv2.APIVersionV2,
	}
	if err := chartutil.CreateFrom(meta, parent, src); err != nil {
		return "", err
	}
	return filepath.Join(parent, name), nil
}

// Starter returns where the starter named starter is: starter itself when it is an absolute
// path (as in Helm); else the starter of that name in startersDir (Helm's
// $HELM_DATA_HOME/starters); else, beyond Helm, the directory or archive starter names relative
// to the working directory.
func Starter(starter, startersDir string) (string, error) {
	if filepath.IsAbs(starter) {
		if err := exists(starter); err != nil {
			return "", &Error{Kind: KindNoStarter, Path: starter, Name: starter, Err: err}
		}
		return starter, nil
	}
	named := filepath.Join(startersDir, starter)
	err := exists(named)
	if err == nil {
		return named, nil
	}
	if exists(starter) == nil {
		return starter, nil
	}
	return "", &Error{Kind: KindNoStarter, Path: named, Name: starter, Err: err}
}

func exists(path string) error {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fs.ErrNotExist
	}
	return err
}
