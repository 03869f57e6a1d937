package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/controller/remotes"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/kube"
)

// The reasons of a Release whose cluster (spec.kubeConfig) cannot be reached or used.
const (
	// ReasonClusterUnreachable: the cluster of the kubeconfig did not answer within the Release's
	// timeout.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonClusterAuthenticationFailed: the cluster refused the kubeconfig's credentials.
	ReasonClusterAuthenticationFailed = "ClusterAuthenticationFailed"
	// ReasonKubeConfigMissing: the Secret, or its key, that spec.kubeConfig names is not there.
	ReasonKubeConfigMissing = "KubeConfigMissing"
	// ReasonInvalidKubeConfig: the kubeconfig cannot be read, or asks for what a Release may not
	// make the controller do (run a command, read a file, skip TLS verification, go through a
	// proxy, speak plain HTTP), or is too large.
	ReasonInvalidKubeConfig = "InvalidKubeConfig"
	// ReasonClusterAnswerTooLarge: the cluster's server answered more than the controller reads
	// of an answer (kube.MaxAnswer, kube.MaxVersionAnswer for /version).
	ReasonClusterAnswerTooLarge = "ClusterAnswerTooLarge"
	// ReasonClusterDiscoveryTooLarge: the cluster's server lists more API group versions, or
	// answers more bytes of discovery together, than the controller reads of a cluster
	// (kube.MaxDiscoveryGroupVersions, kube.MaxDiscoveryBytes).
	ReasonClusterDiscoveryTooLarge = "ClusterDiscoveryTooLarge"
)

// defaultKubeConfigKey is the key of a kubeconfig Secret when spec.kubeConfig names none, the one
// Cluster API writes.
const defaultKubeConfigKey = "value"

// remoteRef is the cluster a Release releases into, when it is not the controller's own.
type remoteRef struct {
	// Secret and Key hold the kubeconfig, in the Release's namespace.
	Secret, Key string
	// Account, when set, is the ServiceAccount of the Release's namespace impersonated in that
	// cluster (spec.serviceAccountName); empty acts as the kubeconfig's identity.
	Account string
}

// withRemote sets d's cluster from spec.kubeConfig. With one, spec.serviceAccountName names an
// account of that cluster, and what the controller reads in its own cluster for the Release
// (the kubeconfig, values, charts) it reads as the namespace's default account.
func withRemote(d *desired, s v1alpha1.ReleaseSpec) {
	k := s.KubeConfig
	if k == nil {
		return
	}
	d.Remote = &remoteRef{Secret: k.SecretRef.Name, Key: k.SecretRef.Key, Account: s.ServiceAccountName}
	if d.Remote.Key == "" {
		d.Remote.Key = defaultKubeConfigKey
	}
	d.ServiceAccount = ""
}

// ClusterError is a Release's cluster that did not answer, or refused its credentials. It names
// the cluster by its server's host, never by what could carry a credential.
type ClusterError struct {
	Host    string
	Secret  string
	Timeout time.Duration
	Reason  string
	Err     error
}

func (e *ClusterError) Error() string {
	what := fmt.Sprintf("did not answer within %s", e.Timeout)
	var status apierrors.APIStatus
	var large *kube.AnswerTooLargeError
	var discovery *kube.DiscoveryTooLargeError
	switch {
	case e.Reason == ReasonClusterAuthenticationFailed:
		what = "refused the kubeconfig's credentials"
	case errors.As(e.Err, &discovery):
		return fmt.Sprintf("cluster %s (kubeconfig in Secret %s) serves more discovery than the controller reads: %s", e.Host, e.Secret, discovery.Error())
	case errors.As(e.Err, &large):
		return fmt.Sprintf("cluster %s (kubeconfig in Secret %s) answered more than the controller reads: %s", e.Host, e.Secret, large.Error())
	case errors.As(e.Err, &status) && status.Status().Code != 0:
		what = fmt.Sprintf("answered %d", status.Status().Code)
	}
	return fmt.Sprintf("cluster %s (kubeconfig in Secret %s) %s: %s", e.Host, e.Secret, what, causeOf(e.Err))
}

func (e *ClusterError) Unwrap() error           { return e.Err }
func (e *ClusterError) conditionReason() string { return e.Reason }

// causeOf is err without the URL of the request that failed (a url.Error's), which a
// kubeconfig's server could fill with credentials.
func causeOf(err error) string {
	var u *url.Error
	if errors.As(err, &u) {
		err = u.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return errorLine(err)
}

// hostOf is the host (and port) of a server URL, or the URL without what it may carry beyond.
func hostOf(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "(a server that is not a URL)"
	}
	return u.Host
}

// remoteClients returns the clients of d's cluster (d.Remote), in the target namespace: the
// kubeconfig is read from its Secret with local (the clients of the Release's account in the
// controller's cluster), the cluster is asked for its version within d.Timeout, and, when
// d.Remote names an account, that account must exist there.
func (r *Reconciler) remoteClients(ctx context.Context, d *desired, local *kube.Clients) (*kube.Clients, error) {
	secret, err := inputs.KeyReader{Core: local.Client.CoreV1(), Namespace: d.Namespace}.Secret(ctx, d.Remote.Secret, d.Remote.Key)
	var data []byte
	if err == nil {
		var ok bool
		if data, ok = secret.Data[d.Remote.Key]; !ok {
			err = &inputs.MissingError{Kind: "Secret", Namespace: d.Namespace, Name: d.Remote.Secret, Key: d.Remote.Key}
		}
	}
	if missing := new(inputs.MissingError); errors.As(err, &missing) {
		missing.Reason, missing.Next = ReasonKubeConfigMissing, "put the cluster's kubeconfig there, or fix spec.kubeConfig.secretRef"
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	name := types.NamespacedName{Namespace: d.Namespace, Name: d.Remote.Secret}
	key := remotes.Key{Config: sha256.Sum256(data), Timeout: d.Timeout}
	own, err := r.remotes.Get(name, secret.ResourceVersion, key, func() (*kube.Clients, error) { return remoteConfig(data, d, r.KubeConfigReach) })
	if err != nil {
		return nil, err
	}
	if err := reach(ctx, own, d); err != nil {
		return nil, err
	}
	if d.Remote.Account == "" {
		return inNamespace(own, d.TargetNamespace), nil
	}
	if err := checkRemoteAccount(ctx, own, d); err != nil {
		// A cluster that answers /version and then nothing is named as one that does not answer.
		return nil, unanswered(d, own, err)
	}
	key.Namespace, key.Account = d.Namespace, d.Remote.Account
	as, err := r.remotes.Get(name, secret.ResourceVersion, key, func() (*kube.Clients, error) {
		return kube.NewClientsWithin(impersonate(own.Config, d.Namespace, d.Remote.Account), d.TargetNamespace, kube.RemoteDiscoveryLimits())
	})
	if err != nil {
		return nil, err
	}
	return inNamespace(as, d.TargetNamespace), nil
}

// remoteConfig builds the clients of the kubeconfig data, as its own identity: dialing bounded
// by d.Timeout, each request by kube.RequestTimeout, what is read of each answer by
// kube.GuardAnswers, its discovery by kube.RemoteDiscoveryLimits. Clients that cannot be built
// from it (TLS data that does not parse) are an *inputs.KubeConfigError.
func remoteConfig(data []byte, d *desired, allow inputs.KubeConfigReach) (*kube.Clients, error) {
	cfg, err := inputs.ReadKubeConfig(data, d.Namespace, d.Remote.Secret, d.Remote.Key, allow)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = UserAgent()
	cfg.Dial = (&net.Dialer{Timeout: d.Timeout, KeepAlive: 30 * time.Second}).DialContext
	kube.GuardAnswers(cfg)
	c, err := kube.NewClientsWithin(cfg, d.TargetNamespace, kube.RemoteDiscoveryLimits())
	if err != nil {
		return nil, &inputs.KubeConfigError{Namespace: d.Namespace, Secret: d.Remote.Secret, Key: d.Remote.Key, Msg: "cannot be used: " + causeOf(err)}
	}
	return c, nil
}

// inNamespace is c acting in namespace, sharing c's connections.
func inNamespace(c *kube.Clients, namespace string) *kube.Clients {
	out := *c
	out.Namespace = namespace
	return &out
}

// reach asks the cluster of c for its version within d.Timeout: a cluster that does not answer
// is a *ClusterError naming it, before anything is done there.
func reach(ctx context.Context, c *kube.Clients, d *desired) error {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	err := c.Client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err == nil {
		// What the cluster serves may have changed since these clients last asked.
		c.Mapper.Reset()
		return nil
	}
	return clusterError(c, d, err)
}

// clusterError is err, of a request to the cluster of c, as a *ClusterError.
func clusterError(c *kube.Clients, d *desired, err error) *ClusterError {
	reason := ReasonClusterUnreachable
	switch {
	case apierrors.IsUnauthorized(err):
		reason = ReasonClusterAuthenticationFailed
	case errors.As(err, new(*kube.DiscoveryTooLargeError)):
		reason = ReasonClusterDiscoveryTooLarge
	case errors.As(err, new(*kube.AnswerTooLargeError)):
		reason = ReasonClusterAnswerTooLarge
	}
	return &ClusterError{Host: hostOf(c.Config.Host), Secret: d.Namespace + "/" + d.Remote.Secret, Timeout: d.Timeout, Reason: reason, Err: err}
}

// discoveryError is err, of reading the discovery of the cluster of c, as a *ClusterError naming
// the cluster when its discovery is larger than the controller reads (a
// *kube.DiscoveryTooLargeError) and the cluster is a Release's (d.Remote); else err.
func discoveryError(c *kube.Clients, d *desired, err error) error {
	if d.Remote == nil || !errors.As(err, new(*kube.DiscoveryTooLargeError)) {
		return err
	}
	return clusterError(c, d, err)
}

// checkRemoteAccount makes sure the account d.Remote names exists in its cluster, reading it as
// the kubeconfig's identity (own).
func checkRemoteAccount(ctx context.Context, own *kube.Clients, d *desired) error {
	_, err := own.Client.CoreV1().ServiceAccounts(d.Namespace).Get(ctx, d.Remote.Account, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &AccountNotFoundError{Namespace: d.Namespace, Name: d.Remote.Account, Cluster: hostOf(own.Config.Host)}
	}
	if err != nil && !isForbidden(err) {
		// Any other failure of the cluster is said in the Release's status, as reach's are.
		return clusterError(own, d, fmt.Errorf("read ServiceAccount %s/%s: %w", d.Namespace, d.Remote.Account, err))
	}
	if err != nil {
		return fmt.Errorf("read ServiceAccount %s/%s in cluster %s: %w", d.Namespace, d.Remote.Account, hostOf(own.Config.Host), err)
	}
	return nil
}

// lostWithNamespace says err is what the deletion of a Release's namespace does to the reading of
// its kubeconfig: the Secret gone, the account that reads it gone or without its rights.
func lostWithNamespace(err error) bool {
	var missing *inputs.MissingError
	return errors.As(err, new(*AccountNotFoundError)) || isForbidden(err) ||
		errors.As(err, &missing) && missing.Reason == ReasonKubeConfigMissing
}

// keptClients are the clients last built from d's kubeconfig, for the uninstall of a Release
// whose namespace, being deleted, took the kubeconfig's Secret, or the account that reads it,
// with it (err). With none kept (the controller restarted since), err says so.
func (r *Reconciler) keptClients(ctx context.Context, d *desired, err error) (*kube.Clients, error) {
	namespace := d.Namespace
	if d.Remote.Account == "" {
		namespace = "" // the kubeconfig's own identity
	}
	kept := r.remotes.Last(types.NamespacedName{Namespace: d.Namespace, Name: d.Remote.Secret}, namespace, d.Remote.Account)
	if kept == nil {
		return nil, fmt.Errorf("namespace %s is being deleted, and the kubeconfig of the release's cluster can no longer be read, nor was it kept since the controller started: %w", d.Namespace, err)
	}
	if err := reach(ctx, kept, d); err != nil {
		return nil, err
	}
	return inNamespace(kept, d.TargetNamespace), nil
}

// clusterFailed says in rel's status why its cluster cannot be used, when err is such a reason
// (failed), and when to look again: a missing Secret or a cluster that does not answer may come
// back by itself; a kubeconfig refused, or a permission missing, waits for a change (of the
// Secret, which the controller watches, or of the Release).
func clusterFailed(rel *v1alpha1.Release, d *desired, err error) (res ctrl.Result, failed bool) {
	if d.Remote == nil || !isClusterError(err) {
		return ctrl.Result{}, false
	}
	reason := reasonOf(err, ReasonClusterUnreachable)
	stalled := reason == ReasonInvalidKubeConfig || reason == ReasonPermissionDenied
	markFailed(rel, reason, err, stalled)
	var cluster *ClusterError
	if errors.As(err, &cluster) {
		rel.Status.Blockers = []v1alpha1.Blocker{clusterBlocker(cluster)}
	}
	if stalled {
		return ctrl.Result{RequeueAfter: d.Interval}, true
	}
	return ctrl.Result{RequeueAfter: retryAfter}, true
}

// clusterEvent records a Warning Event of err, which keeps the controller from rel's cluster,
// when it is news: the Ready condition it set (clusterFailed) says something else than it did in
// orig. A cluster that keeps failing the same way is one Event, not one each retry.
func (r *Reconciler) clusterEvent(ctx context.Context, orig, rel *v1alpha1.Release, err error) {
	now := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady)
	if now == nil {
		return
	}
	if was := meta.FindStatusCondition(orig.Status.Conditions, ConditionReady); was != nil && was.Reason == now.Reason && was.Message == now.Message {
		return
	}
	r.event(ctx, rel, corev1.EventTypeWarning, now.Reason, "reach", status.EventNote(status.RedactorOf(ctx), err))
}

// isClusterError says err keeps the controller from a Release's cluster (spec.kubeConfig): a
// kubeconfig missing or refused, a cluster that does not answer, a permission missing to read
// the kubeconfig or the account there.
func isClusterError(err error) bool {
	var kc *inputs.KubeConfigError
	var cluster *ClusterError
	var missing *inputs.MissingError
	return errors.As(err, &kc) || errors.As(err, &cluster) || isForbidden(err) ||
		errors.As(err, &missing) && missing.Reason == ReasonKubeConfigMissing
}

// clusterBlocker is the blocker of a cluster that does not answer.
func clusterBlocker(e *ClusterError) v1alpha1.Blocker {
	return v1alpha1.Blocker{Kind: "cluster", Object: e.Host, Message: e.Error(),
		Next: fmt.Sprintf("make cluster %s reachable, or fix the kubeconfig in Secret %s", e.Host, e.Secret)}
}

// uninstallBlocked says why the uninstall of a deleted Release's release could not start: an
// account that does not exist stalls it, as it does any reconcile; a cluster that cannot be used
// (clusterFailed) fails it as a failed pre-delete hook does: the Release stays, with the reason,
// a blocker, a Warning Event and a history record, and the uninstall is tried again with
// uninstallBackoff. If the cluster is gone for good, suspending the Release lets it go.
func (r *Reconciler) uninstallBlocked(ctx context.Context, orig, rel *v1alpha1.Release, d *desired, err error) (ctrl.Result, bool, error) {
	if missing := new(AccountNotFoundError); errors.As(err, &missing) {
		markFailed(rel, ReasonServiceAccountNotFound, err, true)
		return ctrl.Result{RequeueAfter: retryAfter}, false, r.patchStatus(ctx, orig, rel)
	}
	if d.Remote == nil || !isClusterError(err) {
		return ctrl.Result{}, false, err
	}
	now := time.Now()
	addHistory(rel, operationRecord("uninstall", now, now, 0, rel.Status.ChartVersion, err))
	clusterFailed(rel, d, err)
	if len(rel.Status.Blockers) == 0 {
		rel.Status.Blockers = []v1alpha1.Blocker{{Kind: "cluster", Message: errorLine(err), Next: "fix spec.kubeConfig's Secret"}}
	}
	hatch := letGoHint(rel)
	for i := range rel.Status.Blockers {
		rel.Status.Blockers[i].Next += "; " + hatch
	}
	r.event(ctx, rel, corev1.EventTypeWarning, reasonOf(err, ReasonClusterUnreachable), "uninstall", status.EventNote(status.RedactorOf(ctx), err)+"; "+hatch)
	return ctrl.Result{RequeueAfter: uninstallBackoff(rel.Status.History)}, false, r.patchStatus(ctx, orig, rel)
}

// letGoHint says how to let a deleted Release go without uninstalling its release.
func letGoHint(rel *v1alpha1.Release) string {
	return fmt.Sprintf(`if the cluster is gone for good, let the Release go without uninstalling: kubectl patch release %s -n %s --type merge -p '{"spec":{"suspend":true}}'`,
		rel.Name, rel.Namespace)
}
