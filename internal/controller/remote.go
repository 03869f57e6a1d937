package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/remotes"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/yamlbound"
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

// maxKubeConfig bounds the kubeconfig a Release's Secret holds: a kubeconfig with a CA bundle
// and a client certificate is a few KiB.
const maxKubeConfig = 512 << 10

// KubeConfigReach is what a Release's kubeconfig may make the controller do beyond connecting,
// over verified TLS, straight to its server. Each is refused by default: the controller would
// connect from its own network position wherever a Release's author says.
type KubeConfigReach struct {
	// InsecureTLS allows insecure-skip-tls-verify: true.
	InsecureTLS bool
	// Proxy allows proxy-url.
	Proxy bool
	// PlainHTTP allows http:// servers (credentials sent in the clear).
	PlainHTTP bool
}

// The flags of berth controller that allow what KubeConfigReach names: a refusal names the one
// that would allow it.
const (
	FlagAllowKubeConfigInsecureTLS = "--allow-kubeconfig-insecure-tls"
	FlagAllowKubeConfigProxy       = "--allow-kubeconfig-proxy"
	FlagAllowKubeConfigHTTP        = "--allow-kubeconfig-http"
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

// KubeConfigError is a kubeconfig a Release names that the controller will not use.
type KubeConfigError struct {
	Namespace, Secret, Key string
	// Field is the kubeconfig's field at fault (users[NAME].user.exec), if one is.
	Field string
	Msg   string
	// Allow is the flag of berth controller that would allow the field, when one would.
	Allow string
	// Err is the typed cause, when there is one (a *yamlbound.ExpansionError).
	Err error
}

func (e *KubeConfigError) Unwrap() error { return e.Err }

func (e *KubeConfigError) Error() string {
	where := fmt.Sprintf("kubeconfig in Secret/%s/%s key %s", e.Namespace, e.Secret, e.Key)
	if e.Field != "" {
		where += ": " + e.Field
	}
	msg := where + ": " + e.Msg
	if e.Allow != "" {
		msg += "; the controller allows it only when started with " + e.Allow
	}
	return msg
}

func (e *KubeConfigError) conditionReason() string { return ReasonInvalidKubeConfig }

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

// parseKubeConfig is readKubeConfig allowing nothing of KubeConfigReach.
func parseKubeConfig(data []byte, ns, secret, key string) (*rest.Config, error) {
	return readKubeConfig(data, ns, secret, key, KubeConfigReach{})
}

// readKubeConfig reads a kubeconfig of a Release and returns the client configuration of its
// current context. What would make the controller run a command (exec, auth-provider) or read
// one of its own files (certificate-authority, client-certificate, client-key, tokenFile) is
// refused, whichever context it is in: a Release's author must not do either as the controller.
// So are, unless allow allows them, a cluster that skips TLS verification, goes through a proxy,
// or whose server is plain HTTP. A kubeconfig over maxKubeConfig is refused unread, and one whose
// YAML aliases expand past yamlbound.Tenant unconverted.
func readKubeConfig(data []byte, ns, secret, key string, allow KubeConfigReach) (*rest.Config, error) {
	fail := func(field, format string, args ...any) error {
		return &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > maxKubeConfig {
		return nil, fail("", "is %d bytes, more than %d KiB: a kubeconfig of one cluster is a few KiB", len(data), maxKubeConfig>>10)
	}
	// The loader converts the kubeconfig to JSON, expanding every alias: what they add is
	// counted first.
	if err := yamlbound.Check(data, yamlbound.Tenant); err != nil {
		return nil, &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Msg: err.Error(), Err: err}
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message can quote the content, credentials included: only its line.
		return nil, fail("", "not a kubeconfig: it does not parse as YAML or JSON%s", lineOf(err))
	}
	if err := refuseLocal(cfg, fail); err != nil {
		return nil, err
	}
	if err := refuseReach(cfg, allow, ns, secret, key); err != nil {
		return nil, err
	}
	if cfg.CurrentContext == "" {
		return nil, fail("current-context", "is empty: name the context to use")
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fail("", "%s", errorLine(err))
	}
	if rc.Host == "" {
		return nil, fail("clusters[].cluster.server", "is empty")
	}
	// A server without a scheme is plain HTTP when the cluster has no TLS data.
	if u, _, err := rest.DefaultServerUrlFor(rc); err != nil {
		return nil, fail("clusters[].cluster.server", "is not a URL")
	} else if u.Scheme != "https" && !(u.Scheme == "http" && allow.PlainHTTP) {
		e := &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: "clusters[].cluster.server",
			Msg: fmt.Sprintf("is %s://%s, not https: the controller would send the credentials in the clear", u.Scheme, u.Host)}
		if u.Scheme == "http" {
			e.Allow = FlagAllowKubeConfigHTTP
		}
		return nil, e
	}
	return rc, nil
}

// refuseReach refuses every cluster of cfg that skips TLS verification, goes through a proxy or
// has a plain HTTP server, unless allow allows it.
func refuseReach(cfg *clientcmdapi.Config, allow KubeConfigReach, ns, secret, key string) error {
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		refuse := func(field, flag, msg string) error {
			return &KubeConfigError{Namespace: ns, Secret: secret, Key: key, Field: fmt.Sprintf("clusters[%s].cluster.%s", name, field), Msg: msg, Allow: flag}
		}
		switch {
		case c.InsecureSkipTLSVerify && !allow.InsecureTLS:
			return refuse("insecure-skip-tls-verify", FlagAllowKubeConfigInsecureTLS,
				"is true: anyone on the way could answer as the cluster; put the cluster's CA in certificate-authority-data")
		case c.ProxyURL != "" && !allow.Proxy:
			return refuse("proxy-url", FlagAllowKubeConfigProxy,
				"is set: the controller goes through no proxy a Release names; remove it")
		}
		// A server without a scheme is judged where it is used (readKubeConfig).
		if u, err := url.Parse(c.Server); err == nil && strings.EqualFold(u.Scheme, "http") && !allow.PlainHTTP {
			return refuse("server", FlagAllowKubeConfigHTTP,
				fmt.Sprintf("is http://%s: the controller would send the credentials in the clear; use https://", u.Host))
		}
	}
	return nil
}

// lineOf is " (line N)" when err names the line of a YAML error (yamlLine), else "".
func lineOf(err error) string {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return " (line " + m[1] + ")"
	}
	return ""
}

// refuseLocal refuses every user and cluster of cfg that runs a command or reads a file.
func refuseLocal(cfg *clientcmdapi.Config, fail func(field, format string, args ...any) error) error {
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		field := func(f string) string { return fmt.Sprintf("users[%s].user.%s", name, f) }
		switch {
		case u.Exec != nil:
			return fail(field("exec"), "runs a command (%s) to get credentials: a Release may not make the controller run commands; put a token or client certificate data in the kubeconfig", u.Exec.Command)
		case u.AuthProvider != nil:
			return fail(field("auth-provider"), "uses the auth provider %s: a Release may not make the controller run one; put a token or client certificate data in the kubeconfig", u.AuthProvider.Name)
		case u.TokenFile != "":
			return fail(field("tokenFile"), "reads a file of the controller's: put the token in token")
		case u.ClientCertificate != "":
			return fail(field("client-certificate"), "reads a file of the controller's: put the certificate in client-certificate-data")
		case u.ClientKey != "":
			return fail(field("client-key"), "reads a file of the controller's: put the key in client-key-data")
		}
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		if cfg.Clusters[name].CertificateAuthority != "" {
			return fail(fmt.Sprintf("clusters[%s].cluster.certificate-authority", name), "reads a file of the controller's: put the CA in certificate-authority-data")
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// remoteClients returns the clients of d's cluster (d.Remote), in the target namespace: the
// kubeconfig is read from its Secret with local (the clients of the Release's account in the
// controller's cluster), the cluster is asked for its version within d.Timeout, and, when
// d.Remote names an account, that account must exist there.
func (r *Reconciler) remoteClients(ctx context.Context, d *desired, local *kube.Clients) (*kube.Clients, error) {
	secret, err := local.Client.CoreV1().Secrets(d.Namespace).Get(ctx, d.Remote.Secret, metav1.GetOptions{})
	missing := &MissingError{Reason: ReasonKubeConfigMissing, Kind: "Secret", Namespace: d.Namespace, Name: d.Remote.Secret, Key: d.Remote.Key,
		Next: "put the cluster's kubeconfig there, or fix spec.kubeConfig.secretRef"}
	if err != nil {
		return nil, readError(missing, err)
	}
	data, ok := secret.Data[d.Remote.Key]
	if !ok {
		return nil, missing
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
// from it (TLS data that does not parse) are a *KubeConfigError.
func remoteConfig(data []byte, d *desired, allow KubeConfigReach) (*kube.Clients, error) {
	cfg, err := readKubeConfig(data, d.Namespace, d.Remote.Secret, d.Remote.Key, allow)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = UserAgent()
	cfg.Dial = (&net.Dialer{Timeout: d.Timeout, KeepAlive: 30 * time.Second}).DialContext
	kube.GuardAnswers(cfg)
	c, err := kube.NewClientsWithin(cfg, d.TargetNamespace, kube.RemoteDiscoveryLimits())
	if err != nil {
		return nil, &KubeConfigError{Namespace: d.Namespace, Secret: d.Remote.Secret, Key: d.Remote.Key, Msg: "cannot be used: " + causeOf(err)}
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
	var missing *MissingError
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
	r.event(ctx, rel, corev1.EventTypeWarning, now.Reason, "reach", eventNote(redactorOf(ctx), err))
}

// isClusterError says err keeps the controller from a Release's cluster (spec.kubeConfig): a
// kubeconfig missing or refused, a cluster that does not answer, a permission missing to read
// the kubeconfig or the account there.
func isClusterError(err error) bool {
	var kc *KubeConfigError
	var cluster *ClusterError
	var missing *MissingError
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
	r.event(ctx, rel, corev1.EventTypeWarning, reasonOf(err, ReasonClusterUnreachable), "uninstall", eventNote(redactorOf(ctx), err)+"; "+hatch)
	return ctrl.Result{RequeueAfter: uninstallBackoff(rel.Status.History)}, false, r.patchStatus(ctx, orig, rel)
}

// letGoHint says how to let a deleted Release go without uninstalling its release.
func letGoHint(rel *v1alpha1.Release) string {
	return fmt.Sprintf(`if the cluster is gone for good, let the Release go without uninstalling: kubectl patch release %s -n %s --type merge -p '{"spec":{"suspend":true}}'`,
		rel.Name, rel.Namespace)
}
