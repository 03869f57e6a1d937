package chart

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// renderRequest is what the renderer reads on its standard input: one template step. The
// cluster's credentials travel here, never in the renderer's arguments or environment.
type renderRequest struct {
	Chart        wireChart            `json:"chart"`
	Top          wireValue            `json:"top"`
	Capabilities *common.Capabilities `json:"capabilities,omitempty"`
	EnableDNS    bool                 `json:"enableDNS,omitempty"`
	Cluster      *wireCluster         `json:"cluster,omitempty"`
}

// wireChart is a chart as Helm serialises it in a release record (JSON), with what the engine
// reads of it (metadata, templates, files) and, unlike the record, its dependencies.
type wireChart struct {
	Metadata     *chartv2.Metadata `json:"metadata"`
	Templates    []*common.File    `json:"templates,omitempty"`
	Files        []*common.File    `json:"files,omitempty"`
	Dependencies []wireChart       `json:"dependencies,omitempty"`
}

// wireValue is a value of the templates' data with its Go type, so that the renderer sees the
// same types the parent holds: an int prints as an int, a float64 as a float64 (JSON alone would
// make every number a float64, and 1000000 print as 1e+06).
type wireValue struct {
	T string               `json:"t"`
	S string               `json:"s,omitempty"`
	L []wireValue          `json:"l,omitempty"`
	M map[string]wireValue `json:"m,omitempty"`
}

// wireCluster is what lookup needs of a rest.Config: where the cluster is and the credentials.
type wireCluster struct {
	Host            string                           `json:"host"`
	APIPath         string                           `json:"apiPath,omitempty"`
	BearerToken     string                           `json:"bearerToken,omitempty"`
	BearerTokenFile string                           `json:"bearerTokenFile,omitempty"`
	Username        string                           `json:"username,omitempty"`
	Password        string                           `json:"password,omitempty"`
	Impersonate     rest.ImpersonationConfig         `json:"impersonate"`
	Insecure        bool                             `json:"insecure,omitempty"`
	ServerName      string                           `json:"serverName,omitempty"`
	CAData          []byte                           `json:"caData,omitempty"`
	CertData        []byte                           `json:"certData,omitempty"`
	KeyData         []byte                           `json:"keyData,omitempty"`
	UserAgent       string                           `json:"userAgent,omitempty"`
	QPS             float32                          `json:"qps,omitempty"`
	Burst           int                              `json:"burst,omitempty"`
	Exec            *clientcmdapi.ExecConfig         `json:"exec,omitempty"`
	AuthProvider    *clientcmdapi.AuthProviderConfig `json:"authProvider,omitempty"`
}

// encodeRequest writes step as the renderer's request.
func encodeRequest(step TemplateStep) ([]byte, error) {
	top := maps.Clone(step.Top)
	req := renderRequest{Chart: toWireChart(step.Chart), EnableDNS: step.EnableDNS}
	if caps, ok := top["Capabilities"].(*common.Capabilities); ok {
		req.Capabilities = caps
		delete(top, "Capabilities")
	}
	var err error
	if req.Top, err = toWire(top); err != nil {
		return nil, err
	}
	if step.Cluster != nil {
		if req.Cluster, err = toWireCluster(step.Cluster); err != nil {
			return nil, err
		}
	}
	return json.Marshal(req)
}

// decodeRequest reads a request of at most limit bytes from r.
func decodeRequest(r io.Reader, limit int64) (TemplateStep, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return TemplateStep{}, err
	}
	if int64(len(data)) > limit {
		return TemplateStep{}, fmt.Errorf("render request is over %d bytes", limit)
	}
	var req renderRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return TemplateStep{}, fmt.Errorf("read render request: %w", err)
	}
	ch, err := fromWireChart(req.Chart)
	if err != nil {
		return TemplateStep{}, err
	}
	top, err := fromWire(req.Top)
	if err != nil {
		return TemplateStep{}, err
	}
	values, ok := top.(common.Values)
	if !ok {
		return TemplateStep{}, errors.New("render request: its data is not a map")
	}
	if req.Capabilities != nil {
		values["Capabilities"] = req.Capabilities
	}
	step := TemplateStep{Chart: ch, Top: values, EnableDNS: req.EnableDNS}
	if req.Cluster != nil {
		step.Cluster = req.Cluster.config()
	}
	return step, nil
}

func toWireChart(ch *chartv2.Chart) wireChart {
	w := wireChart{Metadata: ch.Metadata, Templates: ch.Templates, Files: ch.Files}
	for _, dep := range ch.Dependencies() {
		w.Dependencies = append(w.Dependencies, toWireChart(dep))
	}
	return w
}

func fromWireChart(w wireChart) (*chartv2.Chart, error) {
	if w.Metadata == nil {
		return nil, errors.New("render request: a chart has no metadata")
	}
	ch := &chartv2.Chart{Metadata: w.Metadata, Templates: slices.DeleteFunc(w.Templates, isNilFile), Files: slices.DeleteFunc(w.Files, isNilFile)}
	for _, d := range w.Dependencies {
		dep, err := fromWireChart(d)
		if err != nil {
			return nil, err
		}
		ch.AddDependency(dep)
	}
	return ch, nil
}

func isNilFile(f *common.File) bool { return f == nil }

// toWire tags v with its type. Types other than the ones YAML, JSON and --set produce travel
// as JSON.
func toWire(v any) (wireValue, error) {
	switch v := v.(type) {
	case nil:
		return wireValue{T: "nil"}, nil
	case string:
		return wireValue{T: "string", S: v}, nil
	case bool:
		return wireValue{T: "bool", S: strconv.FormatBool(v)}, nil
	case int:
		return wireValue{T: "int", S: strconv.Itoa(v)}, nil
	case int64:
		return wireValue{T: "int64", S: strconv.FormatInt(v, 10)}, nil
	case float64:
		return wireValue{T: "float64", S: strconv.FormatFloat(v, 'g', -1, 64)}, nil
	case []any:
		w := wireValue{T: "list", L: make([]wireValue, len(v))}
		for i, e := range v {
			var err error
			if w.L[i], err = toWire(e); err != nil {
				return wireValue{}, err
			}
		}
		return w, nil
	case map[string]any:
		return toWireMap("map", v)
	case common.Values:
		return toWireMap("values", v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return wireValue{}, fmt.Errorf("render request: a value of type %T: %w", v, err)
	}
	return wireValue{T: "json", S: string(data)}, nil
}

func toWireMap(t string, m map[string]any) (wireValue, error) {
	w := wireValue{T: t, M: make(map[string]wireValue, len(m))}
	for k, e := range m {
		var err error
		if w.M[k], err = toWire(e); err != nil {
			return wireValue{}, err
		}
	}
	return w, nil
}

func fromWire(w wireValue) (any, error) {
	var err error
	switch w.T {
	case "nil":
		return nil, nil
	case "string":
		return w.S, nil
	case "bool":
		return strconv.ParseBool(w.S)
	case "int":
		return strconv.Atoi(w.S)
	case "int64":
		return strconv.ParseInt(w.S, 10, 64)
	case "float64":
		return strconv.ParseFloat(w.S, 64)
	case "list":
		l := make([]any, len(w.L))
		for i, e := range w.L {
			if l[i], err = fromWire(e); err != nil {
				return nil, err
			}
		}
		return l, nil
	case "map", "values":
		m := make(map[string]any, len(w.M))
		for k, e := range w.M {
			if m[k], err = fromWire(e); err != nil {
				return nil, err
			}
		}
		if w.T == "values" {
			return common.Values(m), nil
		}
		return m, nil
	case "json":
		var v any
		err = json.Unmarshal([]byte(w.S), &v)
		return v, err
	}
	return nil, fmt.Errorf("render request: unknown value type %q", w.T)
}

// toWireCluster is what lookup needs of cfg, with the TLS files it names read.
func toWireCluster(cfg *rest.Config) (*wireCluster, error) {
	c := rest.CopyConfig(cfg)
	if err := rest.LoadTLSFiles(c); err != nil {
		return nil, fmt.Errorf("render request: %w", err)
	}
	w := &wireCluster{
		Host: c.Host, APIPath: c.APIPath, BearerToken: c.BearerToken, BearerTokenFile: c.BearerTokenFile,
		Username: c.Username, Password: c.Password, Impersonate: c.Impersonate,
		Insecure: c.Insecure, ServerName: c.ServerName, CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData,
		UserAgent: c.UserAgent, QPS: c.QPS, Burst: c.Burst, Exec: c.ExecProvider, AuthProvider: c.AuthProvider,
	}
	if w.Exec != nil {
		exec := *w.Exec
		exec.Config = nil // the cluster's exec extension: a runtime.Object that does not travel
		w.Exec = &exec
	}
	return w, nil
}

func (w *wireCluster) config() *rest.Config {
	return &rest.Config{
		Host: w.Host, APIPath: w.APIPath, BearerToken: w.BearerToken, BearerTokenFile: w.BearerTokenFile,
		Username: w.Username, Password: w.Password, Impersonate: w.Impersonate,
		TLSClientConfig: rest.TLSClientConfig{Insecure: w.Insecure, ServerName: w.ServerName, CAData: w.CAData, CertData: w.CertData, KeyData: w.KeyData},
		UserAgent:       w.UserAgent, QPS: w.QPS, Burst: w.Burst, ExecProvider: w.Exec, AuthProvider: w.AuthProvider,
	}
}

// The renderer's answer on its standard output: 'F' then, per file, its name and its content,
// each as a uvarint length and the bytes; or 'E' then the template error's message.
const (
	answerFiles = 'F'
	answerError = 'E'
)

// writeFiles writes files as the renderer's answer, in path order.
func writeFiles(w *bufio.Writer, files map[string]string) error {
	w.WriteByte(answerFiles)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		writeString(w, name)
		writeString(w, files[name])
	}
	return w.Flush()
}

// writeError writes a template error as the renderer's answer.
func writeError(w *bufio.Writer, err error) error {
	w.WriteByte(answerError)
	writeString(w, err.Error())
	return w.Flush()
}

func writeString(w *bufio.Writer, s string) {
	w.Write(binary.AppendUvarint(nil, uint64(len(s))))
	w.WriteString(s)
}

// readAnswer reads the renderer's answer, all of which is in data: the files, or the template's
// error.
func readAnswer(data []byte) (map[string]string, error) {
	if len(data) == 0 {
		return nil, errors.New("the renderer answered nothing")
	}
	kind, rest := data[0], data[1:]
	var strs []string
	for len(rest) > 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, errors.New("the renderer's answer is cut short")
		}
		strs = append(strs, string(rest[k:k+int(n)]))
		rest = rest[k+int(n):]
	}
	switch {
	case kind == answerError && len(strs) == 1:
		return nil, &renderedError{msg: strs[0]}
	case kind == answerFiles && len(strs)%2 == 0:
		files := make(map[string]string, len(strs)/2)
		for i := 0; i < len(strs); i += 2 {
			files[strs[i]] = strs[i+1]
		}
		return files, nil
	}
	return nil, errors.New("the renderer's answer is not one")
}

// renderedError is a template error as the renderer reported it: Helm's message.
type renderedError struct{ msg string }

func (e *renderedError) Error() string { return e.msg }
