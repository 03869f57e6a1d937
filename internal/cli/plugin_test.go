package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/plugins"
	"github.com/berthdev/berth/internal/source"
)

// TestPluginErrorsSayWhatToDo: each error of installing, updating and removing plugins, and a
// reference no getter serves, is followed by what to do about it.
func TestPluginErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unknown plugin", &plugins.NotFoundError{Name: "s3"}, "plugin s3 not found: list the installed plugins with `berth plugin list`"},
		{"installed already", &plugins.ExistsError{Name: "s3", Path: "/p/s3"}, "`berth plugin uninstall s3`"},
		{"no plugin.yaml", fmt.Errorf("install plugin /d: %w", plugins.ErrNoMetadata), "plugin.yaml) missing: a plugin is a directory with a plugin.yaml"},
		{"no such source", plugins.ErrNoSuchSource, "give a plugin directory, an archive (.tgz)"},
		{"not verifiable", plugins.ErrNotVerifiable, "Use --verify=false to skip verification"},
		{"update without source", plugins.ErrNoSource, "only a plugin installed from a git repository can be updated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := explainPluginError(tt.err).Error(); !strings.Contains(got, tt.want) {
				t.Errorf("explainPluginError: %q, want %q in it", got, tt.want)
			}
		})
	}
	noGetter := &source.Error{Ref: "gs://b/c.tgz", Kind: source.KindNoGetter, Err: &source.NoGetterError{Scheme: "gs", PluginsDir: "/p"}}
	got := explainSourceError(noGetter).Error()
	for _, want := range []string{`scheme "gs"`, "`berth plugin install`", "`berth plugin list`"} {
		if !strings.Contains(got, want) {
			t.Errorf("explainSourceError of a scheme no getter serves: %q, want %q in it", got, want)
		}
	}
	for kind, want := range map[plugins.OCIErrorKind]string{
		plugins.OCIBadReference: "oci://REGISTRY/REPOSITORY:TAG",
		plugins.OCINotFound:     "check the repository and the tag",
		plugins.OCIDenied:       "`berth registry login`",
		plugins.OCIUnreachable:  "--plain-http",
		plugins.OCINotPlugin:    "no Helm plugin artifact",
		plugins.OCIOtherName:    "named after the plugin",
	} {
		err := fmt.Errorf("install plugin oci://r/p:1: %w", &plugins.OCIError{Ref: "oci://r/p:1", Kind: kind, Err: errors.New("x")})
		if got := explainOCIPluginError(err).Error(); !strings.Contains(got, want) {
			t.Errorf("explainOCIPluginError of kind %d: %q, want %q in it", kind, got, want)
		}
	}
	if errors.Unwrap(explainPluginError(plugins.ErrModified)) != plugins.ErrModified {
		t.Error("explainPluginError hides the error it explains")
	}
}
