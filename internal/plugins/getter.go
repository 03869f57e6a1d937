package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/getter"
)

// GetterOptions bound the runs of getter plugins.
type GetterOptions struct {
	// Env is Helm's environment (EnvSettings.EnvVars), given to each plugin over the process's.
	Env map[string]string
	// Timeout bounds one run; 0 leaves it to the context.
	Timeout time.Duration
	// MaxBytes is the most a plugin may write (the chart or index it fetches).
	MaxBytes int64
}

// GetterError is a getter plugin that failed to fetch a reference.
type GetterError struct {
	Plugin, URL string
	// Timeout is the bound that ended the run, when one did.
	Timeout time.Duration
	Err     error
}

func (e *GetterError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("getter plugin %s: fetch %s: no answer within %s", e.Plugin, e.URL, e.Timeout)
	}
	return fmt.Sprintf("getter plugin %s: fetch %s: %v", e.Plugin, e.URL, e.Err)
}

func (e *GetterError) Unwrap() error { return e.Err }

// Getters returns Helm getter providers of the subprocess getter plugins in p, whose runs end
// (the plugin's processes killed) when ctx does or after opts.Timeout. Plugins of another
// runtime are left out: skipped lists them.
func Getters(ctx context.Context, p []*Plugin, opts GetterOptions) (providers getter.Providers, skipped []*Plugin) {
	for _, pl := range p {
		if pl.Type != TypeGetter {
			continue
		}
		if pl.Runtime != "subprocess" {
			skipped = append(skipped, pl)
			continue
		}
		pl := pl
		providers = append(providers, getter.Provider{
			Schemes: pl.Protocols,
			New: func(options ...getter.Option) (getter.Getter, error) {
				return &pluginGetter{ctx: ctx, p: pl, opts: opts, options: options}, nil
			},
		})
	}
	return providers, skipped
}

// pluginGetter runs a subprocess getter plugin for each URL, as Helm's does: the plugin's
// command with the certificate, key and CA files and the URL as its last four arguments, the
// credentials in HELM_PLUGIN_USERNAME and HELM_PLUGIN_PASSWORD, and the content on stdout.
type pluginGetter struct {
	ctx     context.Context
	p       *Plugin
	opts    GetterOptions
	options []getter.Option
}

func (g *pluginGetter) Get(href string, options ...getter.Option) (*bytes.Buffer, error) {
	fail := func(err error) (*bytes.Buffer, error) {
		return nil, &GetterError{Plugin: g.p.Name, URL: redact(href), Err: err}
	}
	u, err := url.Parse(href)
	if err != nil {
		return fail(err)
	}
	idx := slices.IndexFunc(g.p.ProtocolCommands, func(c ProtocolCommand) bool { return slices.Contains(c.Protocols, u.Scheme) })
	if idx < 0 {
		return fail(fmt.Errorf("no downloader found for protocol %q", u.Scheme))
	}
	o := readOptions(append(slices.Clone(g.options), options...))
	extra := map[string]string{
		"HELM_PLUGIN_NAME": g.p.Name, "HELM_PLUGIN_DIR": g.p.Dir,
		"HELM_PLUGIN_USERNAME": o.str("username"), "HELM_PLUGIN_PASSWORD": o.str("password"),
		"HELM_PLUGIN_PASS_CREDENTIALS_ALL": strconv.FormatBool(o.boolean("passCredentialsAll")),
	}
	for k, v := range g.opts.Env {
		if _, ok := extra[k]; !ok {
			extra[k] = v
		}
	}
	env := environ(extra)
	main, args, err := prepare(g.p.ProtocolCommands[idx].PlatformCommand, false, env)
	if err != nil {
		return fail(err)
	}
	args = append(args, o.str("certFile"), o.str("keyFile"), o.str("caFile"), href)
	ctx, cancel := g.ctx, context.CancelFunc(func() {})
	if g.opts.Timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, g.opts.Timeout, errTimedOut)
	}
	defer cancel()
	out := &limitedBuffer{max: g.opts.MaxBytes}
	if out.max <= 0 {
		out.max = 1 << 62
	}
	if err := run(ctx, filepath.Join(g.p.Dir, main), args, env, out); err != nil {
		if errors.Is(err, errTimedOut) {
			return nil, &GetterError{Plugin: g.p.Name, URL: redact(href), Timeout: g.opts.Timeout, Err: context.DeadlineExceeded}
		}
		return fail(err)
	}
	return &out.Buffer, nil
}

// errTimedOut is the cause of a run that took longer than GetterOptions.Timeout.
var errTimedOut = errors.New("plugin run timed out")

// redact is u without its password.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

// getterOptions are the values Helm's getter options set. Helm keeps them in an unexported
// struct that only its own getters read: they are read here by applying the options to a
// value of that struct's type and reading its fields by name, so that a plugin gets the
// credentials and TLS files Helm's own plugin getter would give it.
type getterOptions struct{ v reflect.Value }

func readOptions(options []getter.Option) getterOptions {
	t := reflect.TypeOf(getter.Option(nil))
	ptr := reflect.New(t.In(0).Elem())
	for _, opt := range options {
		if opt != nil {
			reflect.ValueOf(opt).Call([]reflect.Value{ptr})
		}
	}
	return getterOptions{v: ptr.Elem()}
}

func (o getterOptions) str(name string) string {
	f := o.v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

func (o getterOptions) boolean(name string) bool {
	f := o.v.FieldByName(name)
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}
