package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/release"
)

type dashboardFlags struct {
	address       string
	port          int
	noBrowser     bool
	allowActions  bool
	revealSecrets bool
	timeout       time.Duration
}

// DefaultDashboardPort is the port berth dashboard listens on unless --port says otherwise.
const DefaultDashboardPort = 7741

// dashboardShutdownGrace is how long the dashboard lets requests under way finish once it is
// told to stop.
const dashboardShutdownGrace = 5 * time.Second

func newDashboardCommand(streams Streams) *cobra.Command {
	var flags dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "serve a web view of every release, its history, its objects and what blocks it",
		Long: `Serve berth's dashboard, a web view of the releases of every context of your
kubeconfig: Helm's records, whoever wrote them (berth or helm), and the berth
controller's Release objects. For each release it shows its revision history,
a diff of manifests or values between any two revisions and against the live
objects, its live objects with whether each is ready and what holds those being
deleted (finalizers, dependents) or unreadable (a missing permission), its
hooks with the outcome of their last run and the tails of their logs, an
operation under way or interrupted (its journal and watch window), and berth
doctor's findings for its namespace. The pages follow the cluster: what an
operation run from a terminal changes shows as it happens.

The dashboard acts only with your kubeconfig's credentials, so it shows what you
may see. It listens on 127.0.0.1 unless --address says otherwise, and opens your
browser unless --no-browser is given. Secrets, and values that came from a
values file encrypted with SOPS, are masked unless --reveal-secrets.

With --allow-actions, a release can be rolled back or uninstalled, and a
Release object retried, from its page: each action first shows its plan (the
plan berth diff shows, from a server-side dry run) and runs only once
confirmed, with your credentials; what the API server refuses is shown. Actions
are taken only from the dashboard's own pages: a request from another site is
refused.`,
		Example: `  # look at the releases of every context of your kubeconfig
  berth dashboard

  # on another port, without opening a browser, with rollback and uninstall
  berth dashboard --port 9000 --no-browser --allow-actions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.run(cmd, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.address, "address", "127.0.0.1", "the address to listen on; anyone who reaches it sees what your credentials may see")
	f.IntVar(&flags.port, "port", DefaultDashboardPort, "the port to listen on; 0 picks a free one")
	f.BoolVar(&flags.noBrowser, "no-browser", false, "do not open the dashboard in a browser")
	f.BoolVar(&flags.allowActions, "allow-actions", false, "allow rollback, uninstall and retry from the dashboard, each after its plan is confirmed")
	f.BoolVar(&flags.revealSecrets, "reveal-secrets", false, "show the values of Secrets and of encrypted values files; without it each is masked")
	f.DurationVar(&flags.timeout, "timeout", dashboard.DefaultActionTimeout, "time to wait for a rollback or an uninstall started from the dashboard")
	return cmd
}

func (flags dashboardFlags) run(cmd *cobra.Command, streams Streams) error {
	if flags.port < 0 || flags.port > 65535 {
		return fmt.Errorf("invalid --port %d: want 0 to 65535", flags.port)
	}
	if flags.timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: want a duration above 0", flags.timeout)
	}
	if net.ParseIP(flags.address) == nil && flags.address != "localhost" {
		return fmt.Errorf("invalid --address %q: want an IP address such as 127.0.0.1, or localhost", flags.address)
	}
	kf := kubeFlags(cmd)
	raw, err := kf.Loader().RawConfig()
	if err != nil {
		return fmt.Errorf("read the kubeconfig: %w", err)
	}
	var contexts []string
	for name := range raw.Contexts {
		contexts = append(contexts, name)
	}
	slices.Sort(contexts)
	current := raw.CurrentContext
	if kf.Context != "" {
		if _, ok := raw.Contexts[kf.Context]; !ok {
			return fmt.Errorf("context %q is not in the kubeconfig: it has %v", kf.Context, contexts)
		}
		current = kf.Context
	}
	if len(contexts) == 0 {
		if kf.APIServer == "" {
			return fmt.Errorf("the kubeconfig names no context: give a kubeconfig file (--kubeconfig, KUBECONFIG) with one")
		}
		contexts, current = []string{""}, ""
	}
	driver, err := release.ParseDriver(os.Getenv("HELM_DRIVER"))
	if err != nil {
		return fmt.Errorf("HELM_DRIVER: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(flags.address, strconv.Itoa(flags.port)))
	if err != nil {
		return fmt.Errorf("listen on %s port %d: %w; pass another --port (0 picks a free one)", flags.address, flags.port, err)
	}
	addr := ln.Addr().String()
	if flags.address == "localhost" {
		addr = net.JoinHostPort("localhost", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	srv, err := dashboard.New(dashboard.Options{
		Flags: kf, Contexts: contexts, Current: current, Driver: driver,
		AllowActions: flags.allowActions, RevealSecrets: flags.revealSecrets, ActionTimeout: flags.timeout,
	}, addr)
	if err != nil {
		ln.Close()
		return err
	}
	url := "http://" + addr + "/"
	fmt.Fprintf(streams.Out, "berth dashboard: %s (Ctrl-C stops it)\n", url)
	if ip := net.ParseIP(flags.address); ip != nil && !ip.IsLoopback() {
		fmt.Fprintf(streams.ErrOut, "warning: listening on %s: whoever reaches it sees what your credentials may see\n", flags.address)
	}
	if flags.allowActions {
		fmt.Fprintln(streams.ErrOut, "actions are allowed: rollback, uninstall and retry, each after its plan is confirmed")
	}
	if !flags.noBrowser {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(streams.ErrOut, "could not open a browser (%v): open %s yourself\n", err, url)
		}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-cmd.Context().Done():
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), dashboardShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// openBrowser opens url in the user's browser, without waiting for it.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
