// Package crds holds the CustomResourceDefinitions of berth's controller API, generated from the
// Go types in ../v1alpha1 by `make generate`.
package crds

import _ "embed"

// Release is the CustomResourceDefinition of berth.dev/v1alpha1 Release, as YAML.
//
//go:embed berth.dev_releases.yaml
var Release []byte

// Rollout is the CustomResourceDefinition of berth.dev/v1alpha1 Rollout, as YAML.
//
//go:embed berth.dev_rollouts.yaml
var Rollout []byte

// All are the CustomResourceDefinitions of the API, in the order they are generated.
func All() [][]byte { return [][]byte{Release, Rollout} }
