// Package plugins holds end-to-end tests of Helm's plugins and client commands in berth: getter
// plugins serving chart references of their schemes, berth plugin list|install|uninstall|update
// side by side with Helm v4's own binary on the same HELM_PLUGINS, berth env and berth repo index.
package plugins

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
