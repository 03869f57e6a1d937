// Package crds holds the CustomResourceDefinitions of berth's controller API, generated from the
// Go types in ../v1alpha1 by `make generate`.
package crds

import _ "embed"

// Release is the CustomResourceDefinition of berth.dev/v1alpha1 Release, as YAML.
//
//go:embed berth.dev_releases.yaml
var Release []byte
