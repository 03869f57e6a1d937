package plugins

import (
	"context"
	"fmt"
	"io"
)

// The events a plugin's hooks run on.
const (
	HookInstall = "install"
	HookUpdate  = "update"
	HookDelete  = "delete"
)

// RunHook runs p's hook of event, if it has one, within ctx, as Helm does: with
// HELM_PLUGIN_NAME and HELM_PLUGIN_DIR set, what it writes going to out.
func (p *Plugin) RunHook(ctx context.Context, event string, out io.Writer) error {
	cmds := p.Hooks[event]
	if len(cmds) == 0 || p.Runtime != "subprocess" {
		return nil
	}
	env := environ(map[string]string{"HELM_PLUGIN_NAME": p.Name, "HELM_PLUGIN_DIR": p.Dir})
	main, args, err := prepare(cmds, p.expandHookArgs, env)
	if err != nil {
		return fmt.Errorf("plugin %s hook for %q: %w", p.Name, event, err)
	}
	if err := runTo(ctx, main, args, env, out); err != nil {
		return fmt.Errorf("plugin %s hook for %q exited with error: %w", p.Name, event, err)
	}
	return nil
}
