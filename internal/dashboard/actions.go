package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/diff"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/reconcile"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/valuemask"
)

// maxActionBody bounds what a page sends with an action.
const maxActionBody = 64 << 10

// actionRequest is what a page sends to plan or take an action on a release.
type actionRequest struct {
	Action    string `json:"action"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision is the revision a rollback goes back to; 0 is the one before the last.
	Revision int `json:"revision"`
}

// planView is what an action would do: the plan berth diff shows, and what would block it.
type planView struct {
	Action string `json:"action"`
	// Text is berth diff's own text of the plan.
	Text    string       `json:"text"`
	Summary diff.Summary `json:"summary"`
	// Blocked is the error that would stop the action (a blocked deletion, a preflight finding),
	// with its blockers named.
	Blocked  string `json:"blocked,omitempty"`
	Blockers any    `json:"blockers,omitempty"`
}

// resultView is what an action did.
type resultView struct {
	Message string `json:"message"`
}

// readAction reads and checks an action request.
func readAction(r *request, actions ...string) (actionRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxActionBody+1))
	if err != nil {
		return actionRequest{}, err
	}
	return parseAction(body, actions...)
}

// parseAction reads an action request a page sent: one of actions, naming a release.
func parseAction(body []byte, actions ...string) (actionRequest, error) {
	var a actionRequest
	if len(body) > maxActionBody {
		return a, &InputError{Msg: "the request is too large"}
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return a, &InputError{Msg: "the request is not an action: " + err.Error()}
	}
	if a.Namespace == "" || a.Name == "" {
		return a, &InputError{Msg: "namespace and name of the release are needed"}
	}
	if a.Revision < 0 {
		return a, &InputError{Msg: fmt.Sprintf("revision %d: want a revision number", a.Revision)}
	}
	if !slices.Contains(actions, a.Action) {
		return a, &InputError{Msg: fmt.Sprintf("action %q: want one of %v", a.Action, actions)}
	}
	return a, nil
}

// deps are an operation's collaborators on namespace, with the user's credentials. An action
// meets berth doctor's preflight as the CLI's operations do: what blocks stops it.
func (s *Server) deps(clients *kube.Clients, namespace, command string) (lifecycle.Deps, error) {
	c := *clients
	c.Namespace = namespace
	store, err := s.store(&c, namespace)
	if err != nil {
		return lifecycle.Deps{}, err
	}
	holder := release.Self(command)
	if s.opts.Holder != "" {
		holder.Who = s.opts.Holder
	}
	d := lifecycle.NewDeps(&c, store, holder, func(engine.Event) {})
	dc := doctor.ClusterOf(&c, store)
	d.Preflight = func(ctx context.Context, op release.Operation, name string, reqs []doctor.Request) error {
		if _, perr := doctor.Preflight(ctx, dc, op, namespace, name, reqs); perr != nil {
			return perr
		}
		return nil
	}
	return d, nil
}

// plan shows what a rollback or an uninstall would do, changing nothing: the operation's own
// preparation, as a server-side dry run, as berth diff rollback and berth diff uninstall show it.
func (s *Server) plan(r *request) (any, error) {
	if !s.opts.AllowActions {
		return nil, &ActionsOffError{}
	}
	a, err := readAction(r, "rollback", "uninstall")
	if err != nil {
		return nil, err
	}
	d, err := s.deps(r.clients, a.Namespace, "berth dashboard: plan "+a.Action+" "+a.Name)
	if err != nil {
		return nil, err
	}
	var pv *lifecycle.Preview
	switch a.Action {
	case "rollback":
		pv, err = lifecycle.PreviewRollback(r.ctx, d, lifecycle.RollbackOptions{Name: a.Name, Namespace: a.Namespace, Version: a.Revision, HistoryMax: 10})
	case "uninstall":
		pv, err = lifecycle.PreviewUninstall(r.ctx, d, lifecycle.UninstallOptions{Name: a.Name, Cascade: metav1.DeletePropagationForeground})
	}
	if pv == nil {
		return nil, err
	}
	opts := diff.DefaultOptions()
	opts.ShowSecrets = s.opts.RevealSecrets
	if !opts.ShowSecrets {
		history, herr := d.Store.History(r.ctx, a.Name)
		if herr != nil && !errors.Is(herr, release.ErrNotFound) {
			return nil, herr
		}
		for _, rel := range append(history, pv.Release) {
			if rel != nil {
				opts.Secrets = append(opts.Secrets, valuemask.Strings(rel.Config, release.EncryptedValuesOf(rel))...)
			}
		}
	}
	res, cerr := diff.Compute(pv, opts)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	v := planView{Action: a.Action, Text: res.Text(false), Summary: res.Summary}
	if err != nil {
		v.Blocked, v.Blockers = err.Error(), blockersOf(err)
	}
	return v, nil
}

// rollback rolls a release back to a revision, with the user's credentials.
func (s *Server) rollback(r *request) (any, error) {
	if !s.opts.AllowActions {
		return nil, &ActionsOffError{}
	}
	a, err := readAction(r, "rollback")
	if err != nil {
		return nil, err
	}
	d, err := s.deps(r.clients, a.Namespace, fmt.Sprintf("berth dashboard: rollback %s %d", a.Name, a.Revision))
	if err != nil {
		return nil, err
	}
	res, err := lifecycle.Rollback(r.ctx, d, lifecycle.RollbackOptions{Name: a.Name, Namespace: a.Namespace, Version: a.Revision, HistoryMax: 10,
		WaitOptions: lifecycle.WaitOptions{Timeout: s.opts.ActionTimeout, Began: time.Now()}})
	if err != nil {
		return nil, err
	}
	return resultView{Message: fmt.Sprintf("Rollback was a success: release %s is at revision %d", a.Name, res.Release.Version)}, nil
}

// uninstall uninstalls a release, with the user's credentials, and waits until its objects are
// gone, as berth uninstall does.
func (s *Server) uninstall(r *request) (any, error) {
	if !s.opts.AllowActions {
		return nil, &ActionsOffError{}
	}
	a, err := readAction(r, "uninstall")
	if err != nil {
		return nil, err
	}
	d, err := s.deps(r.clients, a.Namespace, "berth dashboard: uninstall "+a.Name)
	if err != nil {
		return nil, err
	}
	res, err := lifecycle.Uninstall(r.ctx, d, lifecycle.UninstallOptions{Name: a.Name, Cascade: metav1.DeletePropagationForeground,
		WaitOptions: lifecycle.WaitOptions{Wait: true, Timeout: s.opts.ActionTimeout, Began: time.Now()}})
	if err != nil {
		return nil, err
	}
	if len(res.Left) > 0 {
		return resultView{Message: fmt.Sprintf("release %q is not uninstalled: %d object(s) are still in the cluster", a.Name, len(res.Left))}, nil
	}
	return resultView{Message: fmt.Sprintf("release %q uninstalled", a.Name)}, nil
}

// retry asks the controller for one more attempt at a Release object, as berth reconcile release
// does, without waiting for it: the page follows it.
func (s *Server) retry(r *request) (any, error) {
	if !s.opts.AllowActions {
		return nil, &ActionsOffError{}
	}
	a, err := readAction(r, "retry")
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(r.clients.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	value, err := reconcile.Request(r.ctx, c, types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, time.Now())
	if err != nil {
		return nil, err
	}
	return resultView{Message: fmt.Sprintf("Release %s/%s: another attempt requested (%s = %s)", a.Namespace, a.Name, v1alpha1.ReconcileRequestAnnotation, value)}, nil
}
