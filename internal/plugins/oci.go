package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	orasreg "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// pluginLayerTypes are the layer media types Helm's OCI installer pulls.
var pluginLayerTypes = []string{"application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip"}

// maxManifestBytes bounds a plugin artifact's manifest.
const maxManifestBytes = 4 << 20

// Registry says how to reach an OCI registry: the HTTP client (TLS settings and all), plain
// HTTP, and the credentials of each registry host.
type Registry struct {
	Client     *http.Client
	PlainHTTP  bool
	Credential auth.CredentialFunc
}

// OCIErrorKind tells apart why a plugin could not be pulled from a registry.
type OCIErrorKind int

const (
	// OCIBadReference is a reference that names no plugin artifact: no tag, a bad name.
	OCIBadReference OCIErrorKind = iota
	// OCINotFound is a repository or tag the registry does not have.
	OCINotFound
	// OCIDenied is a registry that refused the credentials, or asked for some.
	OCIDenied
	// OCIUnreachable is a registry that could not be reached.
	OCIUnreachable
	// OCINotPlugin is an artifact that is not a Helm plugin (a chart, an image).
	OCINotPlugin
	// OCIOtherName is a plugin artifact without an archive named after its repository.
	OCIOtherName
	// OCIFailed is any other failure of the pull.
	OCIFailed
)

// OCIError is a plugin that could not be pulled from Ref.
type OCIError struct {
	Ref  string
	Kind OCIErrorKind
	Err  error
}

func (e *OCIError) Error() string { return fmt.Sprintf("pull: %v", e.Err) }
func (e *OCIError) Unwrap() error { return e.Err }

// kindError is an error of a pull that says its kind.
type kindError struct {
	kind OCIErrorKind
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// OCIPlugin is a plugin artifact pulled from a registry.
type OCIPlugin struct {
	// Name is the plugin's name in the reference: its repository's last component.
	Name string
	// Ref is what was pulled, REGISTRY/REPOSITORY:TAG, and Digest its manifest's digest.
	Ref, Digest string
	// Data is the plugin archive; Prov its provenance file, nil when it has none.
	Data, Prov []byte
}

// PullOCI pulls the plugin artifact ref (oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]) as Helm's OCI
// installer does, within ctx: an OCI image manifest whose artifact type (or, without one,
// config media type) is Helm's plugin type, with a layer titled NAME-VERSION.tgz and,
// optionally, one titled NAME-VERSION.tgz.prov. version is the tag of a reference without one.
func PullOCI(ctx context.Context, ref, version string, reg Registry) (*OCIPlugin, error) {
	fail := func(kind OCIErrorKind, err error) (*OCIPlugin, error) {
		return nil, &OCIError{Ref: ref, Kind: kind, Err: err}
	}
	r, name, err := parseOCIRef(ref, version)
	if err != nil {
		return fail(OCIBadReference, err)
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return fail(OCIBadReference, err)
	}
	repo.PlainHTTP = reg.PlainHTTP
	repo.Client = &auth.Client{Client: reg.Client, Credential: reg.Credential, Cache: auth.NewCache()}
	desc, manifest, err := fetchManifest(ctx, repo, r.Reference)
	if err != nil {
		return fail(pullErrorKind(err), err)
	}
	layer, provLayer, err := pluginLayers(manifest, name)
	if err != nil {
		kind := OCINotPlugin
		if k, ok := err.(*kindError); ok {
			kind = k.kind
		}
		return fail(kind, err)
	}
	out := &OCIPlugin{Name: name, Ref: r.String(), Digest: desc.Digest.String()}
	if out.Data, err = fetchLayer(ctx, repo, layer); err != nil {
		return fail(pullErrorKind(err), err)
	}
	if len(out.Data) < 2 || out.Data[0] != 0x1f || out.Data[1] != 0x8b {
		return fail(OCINotPlugin, errors.New("plugin data is not a gzip compressed archive"))
	}
	if provLayer != nil {
		if out.Prov, err = fetchLayer(ctx, repo, *provLayer); err != nil {
			return fail(pullErrorKind(err), err)
		}
	}
	return out, nil
}

// TagError says which tag to pull is not known: the reference has none and no version was
// given (Tag and Version empty), or its tag and the version given differ.
type TagError struct {
	Tag, Version string
}

func (e *TagError) Error() string {
	if e.Tag == "" {
		return "the reference has no tag"
	}
	return fmt.Sprintf("the reference's tag %s and the version %s differ", e.Tag, e.Version)
}

// parseOCIRef parses an oci:// reference as Helm's registry client does ("+" in a tag is "_"),
// with version as the tag of a reference that has none, and names its plugin.
func parseOCIRef(ref, version string) (orasreg.Reference, string, error) {
	raw := strings.TrimPrefix(ref, registry.OCIScheme+"://")
	if i := strings.LastIndex(raw, ":"); i >= 0 && !strings.Contains(raw[i:], "/") && !strings.Contains(raw, "@") {
		raw = raw[:i] + strings.ReplaceAll(raw[i:], "+", "_")
	}
	r, err := orasreg.ParseReference(raw)
	if err != nil {
		return r, "", err
	}
	version = strings.ReplaceAll(version, "+", "_")
	tag := r.Reference
	switch {
	case tag == "" && version == "":
		return r, "", &TagError{}
	case tag == "":
		tag = version
	case version != "" && version != tag:
		return r, "", &TagError{Tag: tag, Version: version}
	}
	r.Reference = tag
	if err := r.ValidateReference(); err != nil {
		return r, "", err
	}
	name := r.Repository[strings.LastIndex(r.Repository, "/")+1:]
	return r, name, nil
}

// fetchManifest fetches and parses the OCI image manifest reference of repo.
func fetchManifest(ctx context.Context, repo *remote.Repository, reference string) (ocispec.Descriptor, ocispec.Manifest, error) {
	var m ocispec.Manifest
	desc, rc, err := repo.Manifests().FetchReference(ctx, reference)
	if errors.Is(err, errdef.ErrNotFound) {
		return desc, m, fmt.Errorf("no such repository or tag in the registry: %w", errdef.ErrNotFound)
	}
	if err != nil {
		return desc, m, err
	}
	defer rc.Close()
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return desc, m, &kindError{kind: OCINotPlugin, err: fmt.Errorf("expected an OCI image manifest, got %s", desc.MediaType)}
	}
	if desc.Size > maxManifestBytes {
		return desc, m, fmt.Errorf("manifest is larger than %d bytes", maxManifestBytes)
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return desc, m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return desc, m, &kindError{kind: OCINotPlugin, err: fmt.Errorf("unable to parse manifest: %w", err)}
	}
	return desc, m, nil
}

// pluginLayers checks that m is a plugin artifact and finds its archive and provenance layers,
// with Helm's messages.
func pluginLayers(m ocispec.Manifest, name string) (layer ocispec.Descriptor, prov *ocispec.Descriptor, err error) {
	switch {
	case m.ArtifactType != "" && m.ArtifactType != registry.PluginArtifactType:
		return layer, nil, fmt.Errorf("expected artifact type %s, got %s", registry.PluginArtifactType, m.ArtifactType)
	case m.ArtifactType == "" && m.Config.MediaType != registry.PluginArtifactType:
		return layer, nil, fmt.Errorf("expected config media type %s for legacy compatibility, got %s", registry.PluginArtifactType, m.Config.MediaType)
	}
	var found *ocispec.Descriptor
	for i := range m.Layers {
		d := &m.Layers[i]
		title := d.Annotations[ocispec.AnnotationTitle]
		if !strings.HasPrefix(title, name+"-") {
			continue
		}
		switch {
		case found == nil && strings.HasSuffix(title, ".tgz"):
			found = d
		case prov == nil && strings.HasSuffix(title, ".tgz.prov"):
			prov = d
		default:
			continue
		}
		if !slices.Contains(pluginLayerTypes, d.MediaType) {
			return layer, nil, fmt.Errorf("layer %s has media type %s, not one of %s", title, d.MediaType, strings.Join(pluginLayerTypes, ", "))
		}
	}
	if found == nil {
		return layer, nil, &kindError{kind: OCIOtherName, err: fmt.Errorf("required layer matching pattern %s-VERSION.tgz not found in manifest", name)}
	}
	return *found, prov, nil
}

// fetchLayer fetches the blob d of repo, up to maxArchiveBytes, checking its digest.
func fetchLayer(ctx context.Context, repo *remote.Repository, d ocispec.Descriptor) ([]byte, error) {
	if d.Size > maxArchiveBytes {
		return nil, fmt.Errorf("layer %s is larger than %d bytes", d.Digest, maxArchiveBytes)
	}
	return content.FetchAll(ctx, repo.Blobs(), d)
}

// pullErrorKind classifies an error of a registry request.
func pullErrorKind(err error) OCIErrorKind {
	var ke *kindError
	var resp *errcode.ErrorResponse
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &ke):
		return ke.kind
	case errors.Is(err, errdef.ErrNotFound):
		return OCINotFound
	case errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return OCINotFound
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return OCIDenied
	case errors.As(err, &opErr), errors.As(err, &netErr) && !netErr.Timeout():
		return OCIUnreachable
	}
	return OCIFailed
}

// InstallOCI installs the plugin artifact opts.Source (oci://...) into opts.Dir as Helm's OCI
// installer does: pulled within ctx through reg, checked with Verify against its provenance
// layer, installed under the reference's plugin name and kept as NAME-VERSION.tgz (with its
// .prov). Until the install hook, a failure leaves opts.Dir as it was.
func InstallOCI(ctx context.Context, opts InstallOptions, reg Registry) (*Installed, error) {
	_, name, err := parseOCIRef(opts.Source, opts.Version)
	if err != nil {
		return nil, &OCIError{Ref: opts.Source, Kind: OCIBadReference, Err: err}
	}
	if _, err := destination(opts.Dir, name); err != nil {
		return nil, err
	}
	art, err := PullOCI(ctx, opts.Source, opts.Version, reg)
	if err != nil {
		return nil, err
	}
	m, err := archiveMetadata(art.Data)
	if err != nil {
		return nil, fmt.Errorf("failed to extract plugin metadata from tarball: %w", err)
	}
	var v *provenance.Verification
	if opts.Verify {
		if art.Prov == nil {
			return nil, errors.New("plugin verification failed: no provenance file (.prov) found")
		}
		if v, err = verify(art.Data, art.Prov, fmt.Sprintf("%s-%s.tgz", m.Name, m.Version), opts.Keyring); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	p, err := unpack(opts, art.Data, art.Prov, name)
	if err != nil {
		return nil, err
	}
	if err := p.RunHook(ctx, HookInstall, opts.Hooks); err != nil {
		return nil, err
	}
	return &Installed{Plugin: p, Kind: SourceOCI, Verification: v}, nil
}
