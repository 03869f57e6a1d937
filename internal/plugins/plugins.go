// Package plugins reads, installs and runs Helm v4 plugins where helm keeps them (HELM_PLUGINS):
// a plugin helm installed is one berth lists, and the other way round. Helm v4 keeps its plugin
// loader and installers in internal packages no other module can import, so this package reads
// plugin.yaml in Helm's two formats (apiVersion v1, and the legacy one without apiVersion) as
// Helm's loader does, and runs subprocess plugins as Helm's runtime does, with one difference:
// every subprocess runs under a context and is killed when the context ends.
package plugins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// FileName is the file that makes a directory a plugin.
const FileName = "plugin.yaml"

// The plugin types Helm v4 knows.
const (
	TypeCLI          = "cli/v1"
	TypeGetter       = "getter/v1"
	TypePostRenderer = "postrenderer/v1"
)

// validName is what Helm accepts as a plugin's name.
var validName = regexp.MustCompile("^[A-Za-z0-9_-]+$")

// ErrNoMetadata is a directory given as a plugin that has no plugin.yaml.
var ErrNoMetadata = errors.New("plugin metadata (plugin.yaml) missing")

// NotFoundError is a plugin asked for by name that is not installed.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("plugin %s not found", e.Name) }

// ExistsError is an install whose destination is taken: a plugin of that name (or a file) is
// there already.
type ExistsError struct{ Name, Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("plugin %s already exists at %s", e.Name, e.Path)
}

// Plugin is an installed plugin: its directory and what its plugin.yaml says.
type Plugin struct {
	Dir string
	Metadata
}

// Metadata is a plugin.yaml of either format, as Helm's loader reads it.
type Metadata struct {
	// APIVersion is "v1", or "legacy" for a plugin.yaml without apiVersion.
	APIVersion string
	Name       string
	// Type is cli/v1, getter/v1 or postrenderer/v1 (legacy plugins with downloaders are getters).
	Type string
	// Runtime is subprocess or extism/v1.
	Runtime   string
	Version   string
	SourceURL string
	// Protocols are the URL schemes a getter serves.
	Protocols []string
	// ProtocolCommands are the commands of a subprocess getter, by scheme.
	ProtocolCommands []ProtocolCommand
	// Hooks are the commands a subprocess plugin runs on install, update and delete.
	Hooks map[string][]PlatformCommand
	// expandHookArgs expands $VARIABLES in the hooks' arguments (not in legacy hooks, which
	// run through sh -c).
	expandHookArgs bool
}

// ProtocolCommand is the command of a getter for some schemes.
type ProtocolCommand struct {
	Protocols       []string          `json:"protocols"`
	PlatformCommand []PlatformCommand `json:"platformCommand"`
}

// metadataV1 is plugin.yaml with apiVersion v1.
type metadataV1 struct {
	APIVersion    string         `json:"apiVersion"`
	Name          string         `json:"name"`
	Type          string         `json:"type"`
	Runtime       string         `json:"runtime"`
	Version       string         `json:"version"`
	SourceURL     string         `json:"sourceURL,omitempty"`
	Config        map[string]any `json:"config"`
	RuntimeConfig map[string]any `json:"runtimeConfig"`
}

// subprocessConfig is the runtimeConfig of a subprocess plugin.
type subprocessConfig struct {
	PlatformCommand  []PlatformCommand            `json:"platformCommand"`
	PlatformHooks    map[string][]PlatformCommand `json:"platformHooks"`
	ProtocolCommands []ProtocolCommand            `json:"protocolCommands,omitempty"`
}

// metadataLegacy is plugin.yaml without apiVersion (Helm 3's format).
type metadataLegacy struct {
	Name            string                       `json:"name"`
	Version         string                       `json:"version"`
	Usage           string                       `json:"usage"`
	Description     string                       `json:"description"`
	PlatformCommand []PlatformCommand            `json:"platformCommand"`
	Command         string                       `json:"command"`
	IgnoreFlags     bool                         `json:"ignoreFlags"`
	PlatformHooks   map[string][]PlatformCommand `json:"platformHooks"`
	Hooks           map[string]string            `json:"hooks"`
	Downloaders     []struct {
		Protocols []string `json:"protocols"`
		Command   string   `json:"command"`
	} `json:"downloaders"`
}

// Load reads the plugin in dir.
func Load(dir string) (*Plugin, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoMetadata)
	}
	if err != nil {
		return nil, fmt.Errorf("read plugin %s: %w", dir, err)
	}
	m, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("load plugin %s: %w", dir, err)
	}
	return &Plugin{Dir: dir, Metadata: m}, nil
}

// parse reads plugin.yaml b in the format its apiVersion says.
func parse(b []byte) (Metadata, error) {
	var peek struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal(b, &peek); err != nil {
		return Metadata{}, err
	}
	var m Metadata
	var err error
	switch peek.APIVersion {
	case "":
		m, err = parseLegacy(b)
	case "v1":
		m, err = parseV1(b)
	default:
		return Metadata{}, fmt.Errorf("invalid plugin apiVersion: %q", peek.APIVersion)
	}
	if err != nil {
		return Metadata{}, err
	}
	return m, m.validate()
}

func parseV1(b []byte) (Metadata, error) {
	var v metadataV1
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		return Metadata{}, err
	}
	if v.Version == "" {
		return Metadata{}, errors.New("plugin `version` is required")
	}
	m := Metadata{APIVersion: v.APIVersion, Name: v.Name, Type: v.Type, Runtime: v.Runtime, Version: v.Version, SourceURL: v.SourceURL}
	if v.Type == TypeGetter {
		var c struct {
			Protocols []string `json:"protocols"`
		}
		if err := remarshal(v.Config, &c); err != nil {
			return Metadata{}, fmt.Errorf("config of %s: %w", v.Type, err)
		}
		if len(c.Protocols) == 0 {
			return Metadata{}, errors.New("config validation failed: getter has no protocols")
		}
		m.Protocols = c.Protocols
	}
	switch v.Runtime {
	case "subprocess":
		var rc subprocessConfig
		if err := remarshal(v.RuntimeConfig, &rc); err != nil {
			return Metadata{}, fmt.Errorf("failed to unmarshal runtimeConfig for subprocess runtime: %w", err)
		}
		m.ProtocolCommands, m.Hooks, m.expandHookArgs = rc.ProtocolCommands, rc.PlatformHooks, true
	case "extism/v1":
	default:
		return Metadata{}, fmt.Errorf("unsupported plugin runtime type: %q", v.Runtime)
	}
	return m, nil
}

func parseLegacy(b []byte) (Metadata, error) {
	var l metadataLegacy
	if err := yaml.Unmarshal(b, &l); err != nil {
		return Metadata{}, err
	}
	if len(l.PlatformCommand) > 0 && l.Command != "" {
		return Metadata{}, errors.New("both platformCommand and command are set")
	}
	if len(l.PlatformHooks) > 0 && len(l.Hooks) > 0 {
		return Metadata{}, errors.New("both platformHooks and hooks are set")
	}
	m := Metadata{APIVersion: "legacy", Name: l.Name, Version: l.Version, Type: TypeCLI, Runtime: "subprocess",
		Hooks: l.PlatformHooks, expandHookArgs: true}
	for i, d := range l.Downloaders {
		if d.Command == "" || len(d.Protocols) == 0 {
			return Metadata{}, fmt.Errorf("downloader %d has an empty command or no protocols", i)
		}
		m.Type = TypeGetter
		m.Protocols = append(m.Protocols, d.Protocols...)
		m.ProtocolCommands = append(m.ProtocolCommands, ProtocolCommand{Protocols: d.Protocols, PlatformCommand: []PlatformCommand{{Command: d.Command}}})
	}
	if len(m.Hooks) == 0 && len(l.Hooks) > 0 {
		m.Hooks, m.expandHookArgs = map[string][]PlatformCommand{}, false
		for event, command := range l.Hooks {
			m.Hooks[event] = []PlatformCommand{{Command: "sh", Args: []string{"-c", command}}}
		}
	}
	return m, nil
}

// validate checks m as Helm's loader does.
func (m Metadata) validate() error {
	var errs []error
	if !validName.MatchString(m.Name) {
		errs = append(errs, fmt.Errorf("invalid plugin name %q: must contain only a-z, A-Z, 0-9, _ and -", m.Name))
	}
	if m.Version != "" {
		if _, err := semver.StrictNewVersion(m.Version); err != nil {
			errs = append(errs, fmt.Errorf("invalid plugin version %q: must be valid semver", m.Version))
		}
	}
	if m.Type == "" {
		errs = append(errs, errors.New("empty type field"))
	}
	for i, p := range m.Protocols {
		if p == "" {
			errs = append(errs, fmt.Errorf("getter has empty protocol at index %d", i))
		}
	}
	return errors.Join(errs...)
}

// remarshal decodes the YAML map in into out, as Helm reads config and runtimeConfig.
func remarshal(in map[string]any, out any) error {
	b, err := yaml.Marshal(in)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}
