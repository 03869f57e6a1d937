package dashboard

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/valuemask"
)

// Bounds of a hook's log tail: its last lines, and at most this many bytes of them.
const (
	hookLogLines = 20
	hookLogBytes = 16 << 10
)

// hookView is one hook of a release's newest revision and the outcome of its last run.
type hookView struct {
	Name           string    `json:"name"`
	Kind           string    `json:"kind"`
	Events         []string  `json:"events"`
	Weight         int       `json:"weight"`
	DeletePolicies []string  `json:"deletePolicies,omitempty"`
	Phase          string    `json:"phase"`
	Started        time.Time `json:"started,omitzero"`
	Completed      time.Time `json:"completed,omitzero"`
	// Logs are the last lines of each of its Pods' containers still in the cluster, by
	// "pod/container"; a hook deleted once it succeeded has none.
	Logs map[string]string `json:"logs,omitempty"`
}

// hooks are the hooks of rel, in their recorded order, with the outcome of their last run and the
// tails of the logs of their Pods still in the cluster. Unless secrets are revealed, the values
// that came from an encrypted values file are masked in the logs.
func (s *Server) hooks(ctx context.Context, clients *kube.Clients, rel *release.Release) []hookView {
	var secrets []string
	if !s.opts.RevealSecrets {
		secrets = valuemask.Strings(rel.Config, release.EncryptedValuesOf(rel))
	}
	out := make([]hookView, 0, len(rel.Hooks))
	for _, h := range rel.Hooks {
		v := hookView{Name: h.Name, Kind: h.Kind, Weight: h.Weight, Phase: "not run",
			Started: h.LastRun.StartedAt, Completed: h.LastRun.CompletedAt}
		if h.LastRun.Phase != "" {
			v.Phase = string(h.LastRun.Phase)
		}
		for _, e := range h.Events {
			v.Events = append(v.Events, string(e))
		}
		for _, p := range h.DeletePolicies {
			v.DeletePolicies = append(v.DeletePolicies, string(p))
		}
		v.Logs = hookLogs(ctx, clients, rel.Namespace, h, secrets)
		out = append(out, v)
	}
	return out
}

// hookLogs reads the tails of the logs of a hook's Pods (the hook itself for a Pod, a Job's Pods)
// that are still in the cluster.
func hookLogs(ctx context.Context, clients *kube.Clients, namespace string, h *release.Hook, secrets []string) map[string]string {
	var meta struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(h.Manifest), &meta); err == nil && meta.Metadata.Namespace != "" {
		namespace = meta.Metadata.Namespace
	}
	pods := clients.Client.CoreV1().Pods(namespace)
	var names []corev1.Pod
	switch h.Kind {
	case "Pod":
		pod, err := pods.Get(ctx, h.Name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		names = append(names, *pod)
	case "Job":
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + h.Name, Limit: 5})
		if err != nil {
			return nil
		}
		names = list.Items
	default:
		return nil
	}
	out := map[string]string{}
	for _, pod := range names {
		for _, c := range pod.Spec.Containers {
			tail := int64(hookLogLines)
			limit := int64(hookLogBytes)
			stream, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail, LimitBytes: &limit}).Stream(ctx)
			key := pod.Name + "/" + c.Name
			if err != nil {
				out[key] = fmt.Sprintf("(no logs: %v)", err)
				continue
			}
			b, err := io.ReadAll(io.LimitReader(stream, hookLogBytes))
			stream.Close()
			if err != nil {
				out[key] = fmt.Sprintf("(logs cut short: %v)", err)
				continue
			}
			text := string(b)
			for _, s := range secrets {
				text = strings.ReplaceAll(text, s, valuemask.Mask)
			}
			out[key] = text
		}
	}
	return out
}

// operationView is the operation under way on a release, or left unfinished: who runs it, its
// journal's progress and its watch window.
type operationView struct {
	// Live: someone holds the release's lease now.
	Live   bool      `json:"live"`
	Holder string    `json:"holder,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// Interrupted says what was left unfinished, and what berth recover would do.
	Interrupted  string `json:"interrupted,omitempty"`
	Next         string `json:"next,omitempty"`
	NextRollback string `json:"nextRollback,omitempty"`
	// Journal is the operation's progress: its plan's steps and those done.
	Journal *journalView `json:"journal,omitempty"`
	Window  *windowView  `json:"window,omitempty"`
	Error   string       `json:"error,omitempty"`
}

type journalView struct {
	Operation string     `json:"operation"`
	Revision  int        `json:"revision"`
	State     string     `json:"state"`
	Holder    string     `json:"holder,omitempty"`
	Started   time.Time  `json:"started,omitzero"`
	Updated   time.Time  `json:"updated,omitzero"`
	Steps     []stepView `json:"steps"`
}

type stepView struct {
	ID   string `json:"id"`
	Done bool   `json:"done"`
}

// windowView is an operation's watch window: how long its objects are watched once ready.
type windowView struct {
	Revision int       `json:"revision"`
	Objects  int       `json:"objects"`
	For      string    `json:"for"`
	Started  time.Time `json:"started,omitzero"`
	LeftSecs float64   `json:"leftSeconds"`
	Done     bool      `json:"done"`
}

// inspect reads what operation is under way on release name, or was left unfinished; nil when
// there is none.
func inspect(ctx context.Context, store release.Store, name string) (*operationView, error) {
	in, err := lifecycle.Inspect(ctx, store, store.Journals(), store.Leases(), name)
	if err != nil || in == nil {
		return nil, err
	}
	var j *release.Journal
	v := &operationView{Live: in.Live}
	switch {
	case in.Live:
		v.Holder, v.Since, j = in.Holder.String(), in.Holder.Since, in.Running
	case in.Interrupted != nil:
		i := in.Interrupted
		v.Interrupted, v.Next, v.NextRollback, j = i.Describe(), i.Next(false), i.Next(true), i.Journal
	default:
		return nil, nil
	}
	if j != nil {
		jv := &journalView{Operation: string(j.Operation), Revision: j.Revision, State: string(j.State), Holder: j.Holder, Started: j.Started, Updated: j.Updated, Steps: []stepView{}}
		if j.Plan != nil {
			for _, st := range j.Plan.Steps {
				jv.Steps = append(jv.Steps, stepView{ID: st.ID, Done: j.StepDone(st.ID)})
			}
		}
		v.Journal = jv
	}
	if w := lifecycle.WindowOf(j); w != nil {
		v.Window = &windowView{Revision: w.Revision, Objects: len(w.Objects), For: w.For.String(), Started: w.Started, LeftSecs: w.Left(time.Now()).Seconds(), Done: w.Done}
	}
	return v, nil
}
