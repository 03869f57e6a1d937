package source_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/testnet"
	"github.com/berthdev/berth/test/testca"
)

// cliFetch is one of the fetches of the CLI's commands (repo add, repo update, pull,
// dependency update) from the repository at repoURL, through a fetcher of o: prepare readies it
// (files, a resolver) and returns the fetch, which runs within ctx.
type cliFetch struct {
	name    string
	prepare func(t *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, repoURL string) func(ctx context.Context) error
}

// cliFetches are the CLI's fetches of a chart repository. A repository with TLS is given the
// CA file caFile.
func cliFetches(caFile string) []cliFetch {
	entry := func(url string) *repo.Entry { return &repo.Entry{Name: "charts", URL: url, CAFile: caFile} }
	return []cliFetch{
		{name: "repo add", prepare: func(_ *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, url string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := source.AddRepository(ctx, settings, *entry(url), source.AddOptions{Fetcher: source.NewFetcher(o)})
				return err
			}
		}},
		{name: "repo update", prepare: func(t *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, url string) func(context.Context) error {
			addRepositories(t, settings, entry(url))
			return func(ctx context.Context) error {
				res, err := source.UpdateRepositories(ctx, settings, nil, source.UpdateOptions{Fetcher: source.NewFetcher(o)})
				if err != nil {
					return err
				}
				return res[0].Err
			}
		}},
		{name: "pull with a repository URL", prepare: func(t *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, url string) func(context.Context) error {
			var opts source.Options
			opts.RepoURL, opts.CaFile = url, caFile
			r, dest := newResolver(t, settings, opts, o), t.TempDir()
			return func(ctx context.Context) error {
				_, err := r.Pull(ctx, "web", source.PullOptions{DestDir: dest})
				return err
			}
		}},
		{name: "pull of a chart's URL", prepare: func(t *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, url string) func(context.Context) error {
			var opts source.Options
			opts.CaFile = caFile
			r, dest := newResolver(t, settings, opts, o), t.TempDir()
			return func(ctx context.Context) error {
				_, err := r.Pull(ctx, url+"/charts/web-0.1.0.tgz", source.PullOptions{DestDir: dest})
				return err
			}
		}},
		{name: "dependency update", prepare: func(t *testing.T, settings *helmcli.EnvSettings, o source.FetchOptions, url string) func(context.Context) error {
			addRepositories(t, settings, entry(url))
			r, dir := newResolver(t, settings, source.Options{}, o), chartWithDependencies(t, url)
			return func(ctx context.Context) error {
				return r.Dependencies(ctx, dir, source.DependencyOptions{}, source.DependencyUpdate)
			}
		}},
	}
}

// wantTimeoutOf checks that err has a TimeoutError naming host and step, and that its message
// names the host.
func wantTimeoutOf(t *testing.T, err error, host string, step source.TimeoutStep) {
	t.Helper()
	var timeout *source.TimeoutError
	if !errors.As(err, &timeout) {
		t.Fatalf("got %v, want a TimeoutError", err)
	}
	if timeout.Host != host || timeout.Step != step {
		t.Errorf("timeout of host %q at %q, want %q at %q (%v)", timeout.Host, timeout.Step, host, step, err)
	}
	if msg := err.Error(); !containsAll(msg, host, "timed out") {
		t.Errorf("error %q does not name host %s and say it timed out", msg, host)
	}
}

// TestCLIFetchesFromSilentServersTimeOut: a server that takes the connection and never answers
// fails each fetch of the CLI's commands when a step of its request takes longer than the
// fetcher allows, with a TimeoutError naming the host: over plain HTTP, the wait for the
// response; over TLS, the handshake, with the TLS settings of the repository.
func TestCLIFetchesFromSilentServersTimeOut(t *testing.T) {
	ca := testca.New(t)
	caFile := writeTemp(t, ca.PEM)
	for _, tt := range []struct {
		name, scheme string
		opts         func(*source.FetchOptions)
		deadline     time.Duration // of the fetch's context
		step         source.TimeoutStep
	}{
		{name: "response header timeout", scheme: "http", opts: func(o *source.FetchOptions) { o.ResponseHeaderTimeout = 100 * time.Millisecond },
			deadline: time.Minute, step: source.StepResponseHeaders},
		{name: "TLS handshake timeout", scheme: "https", opts: func(o *source.FetchOptions) { o.TLSHandshakeTimeout = 100 * time.Millisecond },
			deadline: time.Minute, step: source.StepTLSHandshake},
		{name: "the fetch's deadline", scheme: "http", opts: func(*source.FetchOptions) {}, deadline: 200 * time.Millisecond, step: source.StepFetch},
	} {
		for _, fetch := range cliFetches(caFile) {
			t.Run(tt.name+", "+fetch.name, func(t *testing.T) {
				silent, _ := testnet.SilentListener(t)
				o := patient()
				tt.opts(&o)
				ctx, cancel := context.WithTimeout(t.Context(), tt.deadline)
				defer cancel()
				run := fetch.prepare(t, settingsIn(t), o, tt.scheme+"://"+silent)
				err := run(ctx)
				wantTimeoutOf(t, err, silent, tt.step)
				if fetch.name == "pull with a repository URL" || fetch.name == "pull of a chart's URL" {
					var srcErr *source.Error
					if !errors.As(err, &srcErr) || srcErr.Kind != source.KindTimeout {
						t.Errorf("got %v, want a source.Error of kind %q", err, source.KindTimeout)
					}
				}
				var repoErr *source.RepositoryError
				if fetch.name == "repo add" || fetch.name == "repo update" {
					if !errors.As(err, &repoErr) || repoErr.Kind != source.KindTimeout {
						t.Errorf("got %v, want a RepositoryError of kind %q", err, source.KindTimeout)
					}
				}
			})
		}
	}
}

// TestCLIFetchesFromSilentServersAreCanceled: each fetch of the CLI's commands from a server that
// takes the connection and never answers returns when its context is canceled (Ctrl-C), with an
// error that says so, whatever the fetcher's own timeouts.
func TestCLIFetchesFromSilentServersAreCanceled(t *testing.T) {
	for _, fetch := range cliFetches("") {
		t.Run(fetch.name, func(t *testing.T) {
			silent, arrived := testnet.SilentListener(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			run := fetch.prepare(t, settingsIn(t), patient(), "http://"+silent)
			done := make(chan error, 1)
			go func() { done <- run(ctx) }()
			<-arrived
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want an error that is context.Canceled", err)
			}
		})
	}
}

// containsAll reports whether s contains each of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestCLIFetchesSizeLimits: the CLI's fetches take a repository index and a chart up to the
// fetcher's limits, and fail with a TooLargeError beyond.
func TestCLIFetchesSizeLimits(t *testing.T) {
	srv := startRecorder(t, false)
	big := []byte("apiVersion: v1\nentries: {}\n# " + strings.Repeat("x", 4096) + "\n")
	srv.mu.Lock()
	srv.files["/index.yaml"] = big
	srv.files["/charts/web-0.1.0.tgz"] = big
	srv.mu.Unlock()
	o := source.DefaultFetchOptions()
	o.MaxIndexBytes, o.MaxChartBytes = 1024, 1024

	_, err := source.AddRepository(t.Context(), settingsIn(t), repo.Entry{Name: "big", URL: srv.URL}, source.AddOptions{Fetcher: source.NewFetcher(o)})
	var repoErr *source.RepositoryError
	var large *source.TooLargeError
	if !errors.As(err, &repoErr) || repoErr.Kind != source.KindTooLarge || !errors.As(err, &large) || large.Limit != 1024 {
		t.Errorf("repo add of a large index: got %v, want a RepositoryError of kind %q with a TooLargeError", err, source.KindTooLarge)
	}

	_, err = newResolver(t, settingsIn(t), source.Options{}, o).Pull(t.Context(), srv.URL+"/charts/web-0.1.0.tgz", source.PullOptions{DestDir: t.TempDir()})
	var srcErr *source.Error
	if !errors.As(err, &srcErr) || srcErr.Kind != source.KindTooLarge || !errors.As(err, &large) {
		t.Errorf("pull of a large chart: got %v, want a source.Error of kind %q with a TooLargeError", err, source.KindTooLarge)
	}

	o.MaxIndexBytes, o.MaxChartBytes = 1<<20, 1<<20
	if _, err := source.AddRepository(t.Context(), settingsIn(t), repo.Entry{Name: "big", URL: srv.URL}, source.AddOptions{Fetcher: source.NewFetcher(o)}); err != nil {
		t.Errorf("repo add of an index within the limit: %v", err)
	}
}
