package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
)

// recordRelease is the deployed revision version of release name in namespace of the chart at
// path (generation 1), as an install records it: the chart, the values, the manifest.
func recordRelease(ctx context.Context, path, name, namespace string, version int) (*release.Release, error) {
	ch, err := chart.Load(path)
	if err != nil {
		return nil, err
	}
	vals := map[string]any{"generation": 1, "hooks": true}
	r, err := chart.Render(ctx, ch, vals, chart.RenderOptions{ReleaseName: name, Namespace: namespace})
	if err != nil {
		return nil, err
	}
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	return &release.Release{Name: name, Namespace: namespace, Version: version, ApplyMethod: release.ApplyMethod,
		Chart: r.Chart, Config: r.Config, Manifest: r.Manifest, Hooks: r.ReleaseHooks,
		Info: &releasev1.Info{FirstDeployed: now, LastDeployed: now, Status: common.StatusDeployed,
			Description: "Install complete", Notes: r.Notes}}, nil
}

// helmRecordSize is the size of the data of the Secret Helm's driver writes for rel: its JSON,
// gzipped at the best level, in base64.
func helmRecordSize(rel *release.Release) (int, error) {
	b, err := json.Marshal(rel)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(b); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(buf.Len()), nil
}

// recordSizeOf is the size of the record Helm writes for the chart c.
func recordSizeOf(ctx context.Context, c chartSpec, dir string) (int, error) {
	path, err := c.write(dir)
	if err != nil {
		return 0, err
	}
	rel, err := recordRelease(ctx, path, releaseName, "default", 1)
	if err != nil {
		return 0, fmt.Errorf("chart %s: %w", c.Name, err)
	}
	return helmRecordSize(rel)
}
