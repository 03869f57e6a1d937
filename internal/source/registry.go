package source

import (
	"context"
	"fmt"
	"io"

	"helm.sh/helm/v4/pkg/action"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/registry"
)

// LoginOptions are those of Helm's registry login: credentials and how to reach the registry.
type LoginOptions struct {
	Username, Password        string
	CertFile, KeyFile, CAFile string
	// Insecure allows a TLS registry whose certificate is not verified.
	Insecure bool
	// PlainHTTP logs in over HTTP instead of HTTPS.
	PlainHTTP bool
}

// Login checks username and password against the registry at host and, when it accepts them,
// stores them in the registry config file (settings.RegistryConfig), as helm registry login
// does; out receives Helm's "Login Succeeded". A failed login stores nothing.
func Login(ctx context.Context, settings *helmcli.EnvSettings, host string, opts LoginOptions, out io.Writer) error {
	fail := func(err error) error {
		return &RegistryError{Op: OpLogin, Host: host, Kind: classify(err, true), Err: err}
	}
	// Helm's login panics on unreadable certificate or CA files: check them first.
	if opts.CertFile != "" && opts.KeyFile != "" || opts.CAFile != "" {
		if _, err := tlsConfig(RegistryOptions{CertFile: opts.CertFile, KeyFile: opts.KeyFile, CAFile: opts.CAFile}); err != nil {
			return fail(err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	rc, err := NewRegistryClient(settings, RegistryOptions{}, out)
	if err != nil {
		return fail(err)
	}
	err = action.NewRegistryLogin(&action.Configuration{RegistryClient: rc}).Run(out, host, opts.Username, opts.Password,
		action.WithCertFile(opts.CertFile), action.WithKeyFile(opts.KeyFile), action.WithCAFile(opts.CAFile),
		action.WithInsecure(opts.Insecure), action.WithPlainHTTPLogin(opts.PlainHTTP))
	if err != nil {
		return fail(err)
	}
	return nil
}

// Logout removes the credentials stored for host from the registry config file, as helm
// registry logout does; out receives Helm's "Removing login credentials for HOST".
func Logout(_ context.Context, settings *helmcli.EnvSettings, host string, out io.Writer) error {
	rc, err := NewRegistryClient(settings, RegistryOptions{}, out)
	if err == nil {
		err = action.NewRegistryLogout(&action.Configuration{RegistryClient: rc}).Run(out, host)
	}
	if err != nil {
		return &RegistryError{Op: OpLogout, Host: host, Err: err}
	}
	return nil
}

// Push uploads the packaged chart at chartPath (and its .prov file, if there is one) to the
// registry repository remote (oci://HOST/PATH) as remote/NAME:VERSION, as helm push does; out
// receives what Helm reports (the pushed reference and its digest).
func Push(ctx context.Context, settings *helmcli.EnvSettings, chartPath, remote string, opts RegistryOptions, out io.Writer) error {
	fail := func(err error) error {
		e := &RegistryError{Op: OpPush, Ref: remote, Err: err}
		if registry.IsOCI(remote) {
			e.Host = OCIHost(remote)
			e.Kind = classify(err, hasCredentials(ctx, settings, e.Host, opts))
		}
		return e
	}
	if !registry.IsOCI(remote) {
		return fail(fmt.Errorf("%q is not an oci:// reference", remote))
	}
	rc, err := NewRegistryClient(settings, opts, out)
	if err != nil {
		return fail(err)
	}
	push := action.NewPushWithOpts(action.WithPushConfig(&action.Configuration{RegistryClient: rc}),
		action.WithTLSClientConfig(opts.CertFile, opts.KeyFile, opts.CAFile),
		action.WithInsecureSkipTLSVerify(opts.InsecureSkipTLSVerify),
		action.WithPlainHTTP(opts.PlainHTTP),
		action.WithPushOptWriter(out))
	push.Settings = settings
	msg, err := push.Run(chartPath, remote)
	if err != nil {
		return fail(err)
	}
	_, err = fmt.Fprint(out, msg)
	return err
}
