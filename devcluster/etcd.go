package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func runEtcd(args []string) error {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory")
	clientURL := fs.String("client-url", "", "client URL to listen on")
	peerURL := fs.String("peer-url", "", "peer URL to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cu, err := url.Parse(*clientURL)
	if err != nil {
		return fmt.Errorf("etcd: client url: %w", err)
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		return fmt.Errorf("etcd: peer url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "devcluster"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	// A throwaway test cluster: durability across power loss is not worth the fsync latency.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd: start: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		return fmt.Errorf("etcd: not ready after a minute")
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcd: %w", err)
	}
}
