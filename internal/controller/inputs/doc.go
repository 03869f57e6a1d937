// Package inputs reads what a Release's spec names that the controller reads besides its
// chart: the keys of the ConfigMaps and Secrets of its namespace (KeyReader, MissingError), its
// values (spec.valuesFrom read in order and merged over by spec.values: ReadValues, MergeValues,
// bounded by the Max* limits, ValuesError, LimitError), and the kubeconfig of its cluster
// (spec.kubeConfig), from the Secret's bytes to a client configuration, refusing what a Release
// may not make the controller do (ReadKubeConfig, KubeConfigReach, KubeConfigError).
//
// It returns typed errors that never hold a value's content; turning them into a Release's
// condition reasons is the controller's (package controller).
package inputs
