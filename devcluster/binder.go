package main

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// runBinder assigns every unscheduled Pod that asks for the default scheduler to a node: the one
// its node affinity names by metadata.name (as DaemonSet Pods do), or the next one in turn.
// Resources and taints are not considered; the simulated nodes have room for everything.
func runBinder(ctx context.Context, c kubernetes.Interface, nodes []string) {
	factory := informers.NewSharedInformerFactoryWithOptions(c, 10*time.Second,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	var next atomic.Uint64
	sem := make(chan struct{}, 16)
	bind := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			return
		}
		if s := pod.Spec.SchedulerName; s != "" && s != corev1.DefaultSchedulerName {
			return
		}
		node := affinityNode(pod, nodes)
		if node == "" {
			node = nodes[int(next.Add(1)-1)%len(nodes)]
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			err := c.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
			if err != nil {
				// The resync brings the Pod back if it is still unscheduled.
				klog.V(2).InfoS("bind failed", "pod", klog.KObj(pod), "node", node, "err", err)
			}
		}()
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    bind,
		UpdateFunc: func(_, obj any) { bind(obj) },
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// affinityNode returns the node a Pod's required node affinity names by metadata.name, if it is
// one of ours.
func affinityNode(pod *corev1.Pod, nodes []string) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			for _, v := range f.Values {
				if slices.Contains(nodes, v) {
					return v
				}
			}
		}
	}
	return ""
}
