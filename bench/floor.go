package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/resource"
)

// The floor is the closest a tool can come on this machine: the same objects, applied with the
// smallest client-go loop. No release record, no plan, no journal, no ordering beyond what the
// API demands (CRDs Established before their custom resources), every object of a phase at once,
// no rate limit; then one watch per resource type until every object is Current (kstatus) or
// gone. Hooks run one after another, as every tool must run them.

const floorUserAgent = "berth-bench-floor"

// floorTimeout bounds one floor operation.
const floorTimeout = 10 * time.Minute

func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	op := fs.String("op", "", "install, upgrade or uninstall")
	chartDir := fs.String("chart", "", "chart directory")
	release := fs.String("release", "bench", "release name the chart is rendered for")
	namespace := fs.String("namespace", "", "namespace (must exist)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	generation := fs.Int("generation", 1, "value of .Values.generation")
	hooks := fs.Bool("hooks", true, "value of .Values.hooks")
	ordered := fs.Bool("ordered", false, "apply the chart's resource groups (helm.sh/resource-group) one after another, each waited for, in the ordered case's order; uninstall them in reverse")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *chartDir == "" || *namespace == "" || *kubeconfig == "" {
		return errors.New("floor: --chart, --namespace and --kubeconfig are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), floorTimeout)
	defer cancel()
	f, err := newFloor(*kubeconfig, *namespace)
	if err != nil {
		return err
	}
	ch, err := chart.Load(*chartDir)
	if err != nil {
		return err
	}
	r, err := chart.Render(ctx, ch, map[string]any{"generation": *generation, "hooks": *hooks},
		chart.RenderOptions{ReleaseName: *release, Namespace: *namespace, IsUpgrade: *op == "upgrade"})
	if err != nil {
		return err
	}
	groups := [][]*unstructured.Unstructured{r.Resources}
	if *ordered {
		groups = groupsOf(r.Resources)
	}
	switch *op {
	case "install":
		return f.install(ctx, r, groups, resource.HookPreInstall, resource.HookPostInstall)
	case "upgrade":
		return f.install(ctx, r, groups, resource.HookPreUpgrade, resource.HookPostUpgrade)
	case "uninstall":
		return f.uninstall(ctx, r, groups)
	default:
		return fmt.Errorf("floor: --op must be install, upgrade or uninstall, not %q", *op)
	}
}

type floor struct {
	namespace string
	dynamic   dynamic.Interface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
}

func newFloor(kubeconfig, namespace string) (*floor, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = floorUserAgent
	cfg.QPS = -1 // no client-side rate limit
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &floor{namespace: namespace, dynamic: dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}, nil
}

// install applies the chart's objects group after group (one group: all at once), each waited
// for until current.
func (f *floor) install(ctx context.Context, r *chart.Rendered, groups [][]*unstructured.Unstructured, pre, post resource.HookEvent) error {
	if err := f.hooks(ctx, r.Hooks, pre); err != nil {
		return err
	}
	if len(r.CRDs) > 0 {
		if err := f.applyAll(ctx, r.CRDs); err != nil {
			return err
		}
		if err := f.waitCurrent(ctx, r.CRDs); err != nil {
			return err
		}
		if err := f.waitServed(ctx, r.Resources); err != nil {
			return err
		}
	}
	for _, g := range groups {
		if err := f.applyAll(ctx, g); err != nil {
			return err
		}
		if err := f.waitCurrent(ctx, g); err != nil {
			return err
		}
	}
	return f.hooks(ctx, r.Hooks, post)
}

// uninstall deletes the chart's objects group after group in reverse (one group: all at once),
// each waited for until gone.
func (f *floor) uninstall(ctx context.Context, r *chart.Rendered, groups [][]*unstructured.Unstructured) error {
	if err := f.hooks(ctx, r.Hooks, resource.HookPreDelete); err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	for _, objs := range slices.Backward(groups) {
		g, gctx := errgroup.WithContext(ctx)
		for _, obj := range objs {
			g.Go(func() error {
				ri, err := f.resourceFor(obj)
				if err != nil {
					return err
				}
				return ri.Delete(gctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg})
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if err := f.waitFor(ctx, objs, func(obj *unstructured.Unstructured) bool { return obj == nil }); err != nil {
			return err
		}
	}
	return nil
}

// groupsOf splits objs by their resource group, in the ordered case's order (orderedGroups),
// objects of no group last, without the annotation the API server refuses.
func groupsOf(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	groups := make([][]*unstructured.Unstructured, len(orderedGroups)+1)
	for _, obj := range objs {
		obj = obj.DeepCopy()
		a := obj.GetAnnotations()
		i := slices.Index(orderedGroups, a["helm.sh/resource-group"])
		if i < 0 {
			i = len(orderedGroups)
		}
		delete(a, "helm.sh/depends-on/resource-groups")
		obj.SetAnnotations(a)
		groups[i] = append(groups[i], obj)
	}
	return slices.DeleteFunc(groups, func(g []*unstructured.Unstructured) bool { return len(g) == 0 })
}

// hooks runs the hooks of event one after another, each to its outcome, then deletes those with
// the hook-succeeded policy.
func (f *floor) hooks(ctx context.Context, hooks []resource.Hook, event resource.HookEvent) error {
	var done []*unstructured.Unstructured
	for _, h := range resource.HooksFor(hooks, event) {
		obj := h.Object.DeepCopy()
		ri, err := f.resourceFor(obj)
		if err != nil {
			return err
		}
		// Watch before creating, so that the outcome cannot be missed.
		w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + obj.GetName()})
		if err != nil {
			return err
		}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			w.Stop()
			return err
		}
		err = untilComplete(ctx, w, created.GetUID())
		w.Stop()
		if err != nil {
			return fmt.Errorf("hook %s: %w", obj.GetName(), err)
		}
		if h.HasDeletePolicy(resource.HookSucceeded) {
			done = append(done, created)
		}
	}
	bg := metav1.DeletePropagationBackground
	g, gctx := errgroup.WithContext(ctx)
	for _, obj := range done {
		g.Go(func() error {
			ri, err := f.resourceFor(obj)
			if err != nil {
				return err
			}
			return ri.Delete(gctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		})
	}
	return g.Wait()
}

// untilComplete waits for the Job with uid to complete.
func untilComplete(ctx context.Context, w watch.Interface, uid types.UID) error {
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch ended")
			}
			obj, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || obj.GetUID() != uid {
				continue
			}
			for _, c := range conditions(obj) {
				if c["status"] != "True" {
					continue
				}
				switch c["type"] {
				case "Complete":
					return nil
				case "Failed":
					return fmt.Errorf("failed: %v", c["message"])
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func conditions(obj *unstructured.Unstructured) []map[string]any {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []map[string]any
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// applyAll server-side applies every object at once.
func (f *floor) applyAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, obj := range objs {
		g.Go(func() error {
			ri, err := f.resourceFor(obj)
			if err != nil {
				return err
			}
			_, err = ri.Apply(gctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: floorUserAgent, Force: true})
			if err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

func (f *floor) waitCurrent(ctx context.Context, objs []*unstructured.Unstructured) error {
	return f.waitFor(ctx, objs, func(obj *unstructured.Unstructured) bool {
		if obj == nil {
			return false
		}
		res, err := status.Compute(obj)
		return err == nil && res.Status == status.CurrentStatus
	})
}

// waitFor watches every resource type of objs until done holds for each object (nil when the
// object does not exist).
func (f *floor) waitFor(ctx context.Context, objs []*unstructured.Unstructured, done func(*unstructured.Unstructured) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type key struct {
		gvr  schema.GroupVersionResource
		name string
	}
	byType := map[schema.GroupVersionResource]dynamic.ResourceInterface{}
	pending := map[key]bool{}
	for _, obj := range objs {
		ri, gvr, err := f.resource(obj)
		if err != nil {
			return err
		}
		byType[gvr] = ri
		pending[key{gvr, obj.GetName()}] = true
	}
	var mu sync.Mutex
	changed := make(chan struct{}, 1)
	errs := make(chan error, len(byType))
	update := func(gvr schema.GroupVersionResource, name string, obj *unstructured.Unstructured) {
		k := key{gvr, name}
		mu.Lock()
		if _, tracked := pending[k]; tracked {
			pending[k] = !done(obj)
		}
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	for gvr, ri := range byType {
		list, err := ri.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for i := range list.Items {
			present[list.Items[i].GetName()] = true
			update(gvr, list.Items[i].GetName(), &list.Items[i])
		}
		for k := range pending {
			if k.gvr == gvr && !present[k.name] {
				update(gvr, k.name, nil)
			}
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return err
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					errs <- fmt.Errorf("watch %s: %v", gvr.Resource, ev.Object)
					return
				}
				if ev.Type == watch.Deleted {
					update(gvr, obj.GetName(), nil)
				} else {
					update(gvr, obj.GetName(), obj)
				}
			}
		}()
	}
	for {
		mu.Lock()
		left := 0
		for _, p := range pending {
			if p {
				left++
			}
		}
		mu.Unlock()
		if left == 0 {
			return nil
		}
		select {
		case <-changed:
		case err := <-errs:
			return err
		case <-ctx.Done():
			return fmt.Errorf("%d objects not done: %w", left, ctx.Err())
		}
	}
}

// servedPoll is how often the floor asks discovery again for kinds an Established CRD defines:
// discovery has no watch, and the API server serves a new kind shortly after Established.
const servedPoll = 50 * time.Millisecond

// waitServed waits until discovery serves the kind of every object, as every tool must before it
// applies custom resources of just-installed CRDs.
func (f *floor) waitServed(ctx context.Context, objs []*unstructured.Unstructured) error {
	for {
		f.mapper.Reset()
		var missing error
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			if _, err := f.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				missing = fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
				break
			}
		}
		if missing == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return missing
		case <-time.After(servedPoll):
		}
	}
}

func (f *floor) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	ri, _, err := f.resource(obj)
	return ri, err
}

func (f *floor) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, schema.GroupVersionResource, error) {
	gvk := obj.GroupVersionKind()
	m, err := f.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, schema.GroupVersionResource{}, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	if m.Scope.Name() == "namespace" {
		obj.SetNamespace(f.namespace)
		return f.dynamic.Resource(m.Resource).Namespace(f.namespace), m.Resource, nil
	}
	return f.dynamic.Resource(m.Resource), m.Resource, nil
}
