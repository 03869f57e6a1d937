// Package inputs reads what a Release's spec names that the controller reads besides its
// chart: the kubeconfig of its cluster (spec.kubeConfig), from the Secret's bytes to a client
// configuration, refusing what a Release may not make the controller do (ReadKubeConfig,
// KubeConfigReach, KubeConfigError).
//
// It reads bytes the controller has fetched and returns typed errors; fetching them, and turning
// the errors into a Release's condition reasons, is the controller's (package controller).
package inputs
