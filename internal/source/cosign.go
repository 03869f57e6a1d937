package source

import (
	"context"
	"errors"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
)

// ErrNotSigned is why a chart that is not in an OCI registry cannot be verified with cosign:
// signatures of a chart in a Helm repository or on disk have no place cosign puts them.
var ErrNotSigned = errors.New("cosign verifies charts of OCI registries (oci://) only: a chart of a Helm repository or on disk has no signature cosign would find")

// verifyCosign verifies the cosign signatures of the chart ref names, name@dgst in its registry,
// with k's cosign options, through the registry session rc (its bounded, authorized requests),
// and notes the proof in k. Its failure is a *provenance.Error naming ref, the digest and the
// reason.
func (r *Resolver) verifyCosign(ctx context.Context, rc *registrySession, k *verifier, ref, name, dgst string) error {
	repo, err := rc.repository(name)
	if err != nil {
		return err
	}
	proof, err := provenance.Verify(ctx, provenance.VerifyOptions{
		Repository: repo,
		Reference:  ref,
		Digest:     digest.Digest(dgst),
		Cosign:     k.cosign,
		Limits:     r.verifyLimits(),
	})
	if err != nil {
		return err
	}
	k.proof = &release.Provenance{
		Provider: release.ProviderCosign,
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
