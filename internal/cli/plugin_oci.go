package cli

import (
	"context"
	"errors"
	"fmt"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/berthdev/berth/internal/plugins"
)

// pluginRegistry is how berth reaches the registry of an oci:// plugin: the download's HTTP
// client (its TLS flags), --plain-http, and --username/--password when both are given, else
// the credentials `helm registry login` stored (Helm's registry config, then Docker's). Given
// credentials go to host, the reference's registry, only.
func pluginRegistry(settings *helmcli.EnvSettings, host string, flags pluginInstallFlags) (plugins.Registry, error) {
	client, err := pluginClient(flags)
	if err != nil {
		return plugins.Registry{}, err
	}
	reg := plugins.Registry{Client: client, PlainHTTP: flags.plainHTTP}
	if flags.username != "" && flags.password != "" {
		cred := auth.Credential{Username: flags.username, Password: flags.password}
		reg.Credential = func(_ context.Context, h string) (auth.Credential, error) {
			if h != host {
				return auth.EmptyCredential, nil
			}
			return cred, nil
		}
		return reg, nil
	}
	opts := credentials.StoreOptions{AllowPlaintextPut: true, DetectDefaultNativeStore: true}
	store, err := credentials.NewStore(settings.RegistryConfig, opts)
	if err != nil {
		return reg, fmt.Errorf("read the registry config %s: %w", settings.RegistryConfig, err)
	}
	var s credentials.Store = store
	if docker, err := credentials.NewStoreFromDocker(opts); err == nil {
		s = credentials.NewStoreWithFallbacks(store, docker)
	}
	reg.Credential = credentials.Credential(s)
	return reg, nil
}

// explainOCIPluginError adds what to do to the errors of pulling a plugin from a registry.
func explainOCIPluginError(err error) error {
	var oe *plugins.OCIError
	if !errors.As(err, &oe) {
		return explainPluginError(err)
	}
	switch oe.Kind {
	case plugins.OCIBadReference:
		var te *plugins.TagError
		if errors.As(err, &te) && te.Tag != "" {
			return &hintedError{err: err, hint: "give the tag once: in the reference (REPOSITORY:TAG) or with --version, not both"}
		}
		return &hintedError{err: err, hint: "name the plugin as oci://REGISTRY/REPOSITORY:TAG (or give the tag with --version)"}
	case plugins.OCINotFound:
		return &hintedError{err: err, hint: "check the repository and the tag; the plugin's name is the repository's last component"}
	case plugins.OCIDenied:
		return &hintedError{err: err, hint: "log in with `berth registry login`, or give --username and --password"}
	case plugins.OCIUnreachable:
		return &hintedError{err: err, hint: "check the registry's address; a registry without TLS needs --plain-http"}
	case plugins.OCIOtherName:
		return &hintedError{err: err, hint: "a plugin's artifact is pushed to a repository named after the plugin (REGISTRY/.../NAME:TAG)"}
	case plugins.OCINotPlugin:
		return &hintedError{err: err, hint: "the reference is no Helm plugin artifact: a chart is pulled with `berth pull`"}
	}
	return err
}
