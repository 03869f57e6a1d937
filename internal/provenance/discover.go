package provenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
)

// Media types of the signatures Verify reads.
const (
	MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	MediaTypeSimpleSigning  = "application/vnd.dev.cosign.simplesigning.v1+json"
	AnnotationCosignSig     = "dev.cosignproject.cosign/signature"
)

var errEnoughReferrers = errors.New("enough referrers")

// referrers lists the manifests whose subject is the chart, of the given artifact type, at most
// MaxSignatures of them.
func (v *verification) referrers(ctx context.Context, artifactType string) ([]ocispec.Descriptor, error) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: v.opts.Digest}
	var found []ocispec.Descriptor
	// A store's predecessors may not carry their artifact type: those are kept and told apart by
	// their contents.
	keep := func(descs []ocispec.Descriptor) error {
		for _, d := range descs {
			if artifactType != "" && d.ArtifactType != "" && d.ArtifactType != artifactType {
				continue
			}
			if len(found) == v.lim.MaxSignatures {
				return errEnoughReferrers
			}
			found = append(found, d)
		}
		return nil
	}
	var err error
	if rl, ok := v.opts.Repository.(registry.ReferrerLister); ok {
		err = rl.Referrers(ctx, subject, artifactType, keep)
	} else {
		var descs []ocispec.Descriptor
		descs, err = v.opts.Repository.Predecessors(ctx, subject)
		if err == nil {
			err = keep(descs)
		}
	}
	switch {
	case errors.Is(err, errEnoughReferrers):
		return nil, v.bounds("the signatures referring to the chart", int64(v.lim.MaxSignatures))
	case errors.Is(err, errdef.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, v.fail(ReasonRegistry, "list referrers", err)
	}
	return found, nil
}

// fetch reads a blob or manifest of at most limit bytes and checks its digest.
func (v *verification) fetch(ctx context.Context, desc ocispec.Descriptor, what string, limit int64) ([]byte, error) {
	if desc.Size > limit {
		return nil, v.bounds(fmt.Sprintf("%s %s (%d bytes)", what, desc.Digest, desc.Size), limit)
	}
	rc, err := v.opts.Repository.Fetch(ctx, desc)
	if err != nil {
		return nil, v.fail(ReasonRegistry, "fetch "+what+" "+string(desc.Digest), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, v.fail(ReasonRegistry, "read "+what+" "+string(desc.Digest), err)
	}
	if int64(len(data)) > limit {
		return nil, v.bounds(what+" "+string(desc.Digest), limit)
	}
	if desc.Digest.Validate() != nil || desc.Digest.Algorithm().FromBytes(data) != desc.Digest {
		return nil, v.fail(ReasonUntrusted, what+" "+string(desc.Digest)+" does not match its digest", nil)
	}
	return data, nil
}

// manifest reads and parses an image manifest.
func (v *verification) manifest(ctx context.Context, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	data, err := v.fetch(ctx, desc, "manifest", v.lim.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, v.fail(ReasonNoSignature, "manifest "+string(desc.Digest), err)
	}
	return m, nil
}

// ParseManifest parses a signature's OCI image manifest.
func ParseManifest(data []byte) (*ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	for _, l := range m.Layers {
		if err := l.Digest.Validate(); err != nil {
			return nil, fmt.Errorf("parse manifest: layer digest: %w", err)
		}
	}
	return &m, nil
}

// sigTag is cosign's tag schema for the signatures of a digest: sha256-<hex>.sig.
func sigTag(d digest.Digest) string {
	return fmt.Sprintf("%s-%s.sig", d.Algorithm(), d.Encoded())
}

// tagged resolves cosign's signature tag; it returns nil when there is none.
func (v *verification) tagged(ctx context.Context) (*ocispec.Descriptor, error) {
	desc, err := v.opts.Repository.Resolve(ctx, sigTag(v.opts.Digest))
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, v.fail(ReasonRegistry, "resolve "+sigTag(v.opts.Digest), err)
	}
	return &desc, nil
}
