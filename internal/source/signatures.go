package source

import (
	"context"
	"errors"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
)

// ErrNotSigned is why a chart that is not in an OCI registry cannot be verified with cosign or
// notation: a chart of a Helm repository or on disk has no place for their signatures.
var ErrNotSigned = errors.New("cosign and notation verify charts of OCI registries (oci://) only: a chart of a Helm repository or on disk has no signature they would find")

// verifySignatures verifies the cosign or notation signatures of the chart ref names,
// name@dgst in its registry, with k's options, through the registry session rc (its bounded,
// authorized requests), and notes the proof in k. Its failure is a *provenance.Error naming ref,
// the digest and the reason.
func (r *Resolver) verifySignatures(ctx context.Context, rc *registrySession, k *verifier, ref, name, dgst string) error {
	repo, err := rc.repository(name)
	if err != nil {
		return err
	}
	proof, err := provenance.Verify(ctx, provenance.VerifyOptions{
		Repository: repo,
		Reference:  ref,
		Digest:     digest.Digest(dgst),
		Cosign:     k.cosign,
		Notation:   k.notation,
		Limits:     r.verifyLimits(),
	})
	if err != nil {
		return err
	}
	k.proof = &release.Provenance{
		Provider: string(proof.Provider),
		Digest:   string(proof.Digest),
		Signer:   proof.Signer,
		Issuer:   proof.Issuer,
		LogIndex: proof.LogIndex,
		Verified: time.Now().UTC(),
	}
	return nil
}

// verifyLimits bound a verification by r's fetcher: its manifests within the limit of any
// manifest it reads, and the whole within its request timeout.
func (r *Resolver) verifyLimits() provenance.Limits {
	l := provenance.DefaultLimits()
	l.MaxManifestBytes = maxManifestBytes
	if t := r.fetcher().opts.RequestTimeout; t > 0 {
		l.Timeout = t
	}
	return l
}
