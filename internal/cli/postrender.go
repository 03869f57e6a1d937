package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/postrenderer"
)

// postRenderFlags are Helm v4's --post-renderer (the name of a postrenderer/v1 plugin) and
// --post-renderer-args.
type postRenderFlags struct {
	plugin string
	args   []string
}

func addPostRenderFlags(f *pflag.FlagSet, p *postRenderFlags) {
	f.StringVar(&p.plugin, "post-renderer", "", "the name of a postrenderer type plugin to be used for post rendering. If it exists, the plugin will be used")
	f.StringArrayVar(&p.args, "post-renderer-args", nil, "an argument to the post-renderer (can specify multiple)")
}

// renderer finds the post-renderer plugin in Helm's plugins directory (HELM_PLUGINS); nil when
// none is asked for.
func (p postRenderFlags) renderer(cmd *cobra.Command) (postrenderer.PostRenderer, error) {
	if p.plugin == "" {
		if len(p.args) > 0 {
			return nil, fmt.Errorf("--post-renderer-args given without --post-renderer")
		}
		return nil, nil
	}
	settings := helmSettings(cmd)
	pr, err := postrenderer.NewPostRendererPlugin(settings, p.plugin, p.args...)
	if err != nil {
		return nil, fmt.Errorf("--post-renderer %q: %w: install a plugin of type postrenderer/v1 under %s (HELM_PLUGINS)", p.plugin, err, settings.PluginsDirectory)
	}
	return pr, nil
}
