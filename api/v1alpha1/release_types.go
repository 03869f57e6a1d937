package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Release is a Helm chart released into a namespace: berth installs it, upgrades it when its
// chart or values change, and uninstalls it when the Release is deleted. The release is recorded
// in Helm's format in the target namespace, so helm sees it too.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=brel
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.status.chartName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.chartVersion`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseSpec   `json:"spec"`
	Status ReleaseStatus `json:"status,omitempty"`
}

// ReleaseList is a list of Releases.
//
// +kubebuilder:object:root=true
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Release `json:"items"`
}

// ReleaseSpec is the release wanted.
type ReleaseSpec struct {
	// Chart says where the chart comes from.
	Chart ChartSource `json:"chart"`

	// Values are the chart's values, as a values file gives them.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom are values taken from keys of ConfigMaps and Secrets of the Release's
	// namespace, merged in order before Values.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// ReleaseName is the name of the Helm release; default: the Release's name.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// TargetNamespace is the namespace the release is installed into and recorded in;
	// default: the Release's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// ServiceAccountName is the ServiceAccount of the Release's namespace as which every
	// cluster call for the release is made; default: the account the controller's
	// --default-service-account names, else the namespace's "default" account. The controller
	// never acts with its own rights on the release.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// KubeConfig, when set, releases into another cluster, the one of a kubeconfig kept in a
	// Secret of the Release's namespace: every call for the release (its records, lease,
	// journal, hooks, waits, drift, uninstall) goes there, as the kubeconfig's identity, or as
	// ServiceAccountName of the Release's namespace in that cluster when it is set. A
	// kubeconfig that runs commands (exec, auth-provider) or reads files is refused.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// DependsOn are Releases of the same namespace that must be Ready (for their current
	// generation) before this one is installed or upgraded. When Releases are deleted, one
	// that others depend on is uninstalled only once those others are gone.
	// +optional
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// RollbackTo, when set, holds the release at an earlier revision: the controller rolls it
	// back to that revision once (Helm's rollback, which its history shows with the reason),
	// and then neither installs nor upgrades it while RollbackTo is set. A Rollout sets it to
	// undo a wave.
	// +optional
	RollbackTo *RollbackRequest `json:"rollbackTo,omitempty"`

	// Suspend stops reconciling the Release: nothing is installed, upgraded or uninstalled
	// until it is false again. Deleting a suspended Release leaves the release in place.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// SkipPreflight goes on with an install, upgrade or uninstall that its preflight finds
	// blocked, as berth's --skip-preflight does. The preflight (berth doctor's checks of the
	// admission webhooks, APIServices and namespace the operation's requests meet, read as the
	// Release's ServiceAccount) otherwise stops the operation before it changes anything, with
	// Ready=False reason PreflightBlocked naming what blocks it. Off by default.
	// +optional
	SkipPreflight bool `json:"skipPreflight,omitempty"`

	// Interval is how often the Release is checked against its chart source and cluster;
	// default 10m, at least 10s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.interval must be at least 10s (a Go duration like 10s, 5m or 1h)"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout bounds each reconcile as a whole: fetching the chart, reading values and the
	// last record, then the operation (install, upgrade, uninstall) with what is left; default
	// 5m, and at most the controller's --max-timeout.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Install configures installs.
	// +optional
	Install *InstallSpec `json:"install,omitempty"`
	// Upgrade configures upgrades.
	// +optional
	Upgrade *UpgradeSpec `json:"upgrade,omitempty"`
	// Uninstall configures the uninstall run when the Release is deleted.
	// +optional
	Uninstall *UninstallSpec `json:"uninstall,omitempty"`
	// Test runs the chart's test hooks after each install and upgrade.
	// +optional
	Test *TestSpec `json:"test,omitempty"`
	// Drift compares the release's objects with the cluster between operations.
	// +optional
	Drift *DriftSpec `json:"drift,omitempty"`
	// HealthChecks say, in CEL, when the objects of a kind are ready, for charts that do not
	// annotate them (helm.sh/readiness-success and helm.sh/readiness-failure, which come
	// first); the built-in rules judge the kinds without one. Every wait of the Release's
	// operations honours them; hooks are judged by the built-in rules. Each expression is at
	// most 1024 bytes long, and its cost, estimated before it is used, is bounded.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	HealthChecks []HealthCheckExpressions `json:"healthChecks,omitempty"`
}

// HealthCheckExpressions are CEL expressions over an object of one kind, in the shape of Flux's
// healthCheckExprs. Each reads the object as self, and its top-level fields by name (status is
// self.status). A field the object does not have yet makes an expression false. An object
// whose status.observedGeneration is not its generation is in progress; then inProgress,
// failed and current are evaluated in this order, and the first that is true decides; none:
// in progress.
type HealthCheckExpressions struct {
	// APIVersion of the kind, as in a manifest: example.com/v1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Kind of the objects.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Current is true when the object is ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Current string `json:"current"`
	// InProgress is true when the object is not ready yet, whatever the others say.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object failed: the operation fails at once.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Failed string `json:"failed,omitempty"`
}

// ChartSource says where a chart comes from: a Helm repository or an OCI registry (Repository,
// Name, Version or Digest), or a packaged chart kept in a Secret or ConfigMap of the Release's
// namespace. Exactly one of Repository, SecretRef and ConfigMapRef is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.repository), has(self.secretRef), has(self.configMapRef)].filter(x, x).size() == 1",message="set exactly one of repository, secretRef and configMapRef"
type ChartSource struct {
	// Repository is the URL of a Helm chart repository (https://charts.example.com), or an OCI
	// reference (oci://registry.example.com/charts/web, or oci://registry.example.com/charts
	// with Name).
	// +optional
	Repository string `json:"repository,omitempty"`
	// Name is the chart's name in Repository. For an oci:// Repository that names the chart
	// itself, leave it empty.
	// +optional
	Name string `json:"name,omitempty"`
	// Version is the chart version or a range of versions (^1.2.0); empty means the latest
	// stable version.
	// +optional
	Version string `json:"version,omitempty"`
	// Digest pins an OCI chart to the manifest digest sha256:...
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
	// SecretRef names a key of a Secret of the Release's namespace that holds a packaged chart
	// (.tgz).
	// +optional
	SecretRef *KeyReference `json:"secretRef,omitempty"`
	// ConfigMapRef names a key of a ConfigMap of the Release's namespace that holds a packaged
	// chart (.tgz, in binaryData). As with a repository, the release is upgraded when the
	// packaged chart's version changes.
	// +optional
	ConfigMapRef *KeyReference `json:"configMapRef,omitempty"`
	// Credentials names a Secret of the Release's namespace, read as the Release's
	// ServiceAccount, with the credentials of Repository: keys username and password (basic auth
	// of a Helm repository or an OCI registry), or, for an OCI registry, a Secret of type
	// kubernetes.io/dockerconfigjson whose auths name the registry's host. They are sent to
	// Repository's host only, unless PassCredentials is set.
	// +optional
	Credentials *SecretReference `json:"credentials,omitempty"`
	// TLS names a Secret of the Release's namespace, read as the Release's ServiceAccount, with
	// the TLS material of Repository: ca.crt, the CA that signed the server's certificate, and
	// tls.crt and tls.key, a client certificate and its key (a kubernetes.io/tls Secret).
	// +optional
	TLS *SecretReference `json:"tls,omitempty"`
	// PlainHTTP reaches an oci:// Repository over plain HTTP instead of HTTPS.
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// PassCredentials sends the credentials to the chart's URL too when the repository's index
	// puts it on another host than Repository's (Helm's --pass-credentials). Off, they go to
	// Repository's host only.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`
	// Verify checks the chart's signature before it is released. With provider pgp (the
	// default) it checks the chart's provenance as helm --verify does: the provenance file beside
	// the chart (the archive's URL with .prov in a Helm repository, the provenance layer in an
	// OCI registry) must be signed by a key of the public keyring in the Secret it names, read as
	// the Release's ServiceAccount, and name the chart's digest. With provider cosign, the chart
	// of an oci:// Repository must carry a cosign signature of its digest, checked as cosblock
	// says. A chart that fails is not released.
	// +optional
	Verify *KeyringReference `json:"verify,omitempty"`
}

// KeyringReference says how a chart's signature is verified: with provider pgp, name (and key)
// is a key of a Secret of the Release's namespace that holds a public keyring (as gpg --export
// writes it); with provider cosign, cosign says with which key or keyless identity; with provider
// notation, notation names the Secret with the trust policy and trust store.
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider != 'cosign' || has(self.cosign)",message="provider cosign needs verify.cosign: a key, or a keyless identity and issuer with a trusted root"
// +kubebuilder:validation:XValidation:rule="has(self.provider) && self.provider == 'cosign' || !has(self.cosign)",message="verify.cosign applies to provider cosign only: set provider: cosign, or remove cosign"
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider != 'notation' || has(self.notation)",message="provider notation needs verify.notation: the Secret with the trust policy and trust store"
// +kubebuilder:validation:XValidation:rule="has(self.provider) && self.provider == 'notation' || !has(self.notation)",message="verify.notation applies to provider notation only: set provider: notation, or remove notation"
type KeyringReference struct {
	// Provider is what verifies the chart: pgp (a provenance file and a public keyring, the
	// default), cosign (a cosign signature in the chart's OCI registry) or notation (a Notary
	// Project signature in the chart's OCI registry).
	// +kubebuilder:validation:Enum=pgp;cosign;notation
	// +kubebuilder:default=pgp
	// +optional
	Provider string `json:"provider,omitempty"`
	// Name of the Secret that holds the public keyring (provider pgp).
	// +optional
	Name string `json:"name,omitempty"`
	// Key of the Secret that holds the keyring; default pubring.gpg.
	// +optional
	Key string `json:"key,omitempty"`
	// Cosign says how a cosign signature is verified (provider cosign).
	// +optional
	Cosign *CosignVerification `json:"cosign,omitempty"`
	// Notation says how a Notary Project signature is verified (provider notation).
	// +optional
	Notation *NotationVerification `json:"notation,omitempty"`
}

// NotationVerification is how the Notary Project signature of a chart is verified: as `notation
// verify` does, with the trust policy and trust store a Secret of the Release's namespace holds,
// read as the Release's ServiceAccount. The Secret's key trustpolicy.oci.json (or
// trustpolicy.json) holds the trust policy document; each key named TYPE.STORE.FILE (for example
// ca.release.root.crt, TYPE one of ca, signingAuthority and tsa) holds certificates of the trust
// store TYPE:STORE, as truststore/x509/TYPE/STORE/FILE would.
type NotationVerification struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CosignVerification is how the cosign signature of a chart is verified: against the public key
// of a Secret, or keyless, against the signer's certificate identity and OIDC issuer and a
// Sigstore trusted root. Its Secrets are read as the Release's ServiceAccount.
// +kubebuilder:validation:XValidation:rule="!has(self.key) || !(has(self.identity) || has(self.identityRegexp) || has(self.issuer) || has(self.issuerRegexp) || has(self.trustedRoot))",message="set cosign.key, or the keyless identity, issuer and trustedRoot, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.identity) && has(self.identityRegexp))",message="set one of cosign.identity and cosign.identityRegexp"
// +kubebuilder:validation:XValidation:rule="!(has(self.issuer) && has(self.issuerRegexp))",message="set one of cosign.issuer and cosign.issuerRegexp"
type CosignVerification struct {
	// Key names the Secret, and its key (default cosign.pub), that holds the PEM public key
	// the signature must verify against.
	// +optional
	Key *SecretKeyReference `json:"key,omitempty"`
	// Identity is the keyless signer's certificate identity (its subject alternative name),
	// exactly; IdentityRegexp the same as a regular expression, anchored. One of them is
	// required keyless.
	// +optional
	Identity string `json:"identity,omitempty"`
	// +optional
	IdentityRegexp string `json:"identityRegexp,omitempty"`
	// Issuer is the OIDC issuer that vouched for the keyless identity, exactly; IssuerRegexp the
	// same as a regular expression, anchored. One of them is required keyless.
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// +optional
	IssuerRegexp string `json:"issuerRegexp,omitempty"`
	// TrustedRoot names the Secret, and its key (default trusted_root.json), that holds the
	// Sigstore trusted root keyless signatures are checked against (its certificate
	// authorities and transparency logs). Required keyless.
	// +optional
	TrustedRoot *SecretKeyReference `json:"trustedRoot,omitempty"`
}

// SecretKeyReference names a key of a Secret of the Release's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key of the Secret; each field that uses it says its default.
	// +optional
	Key string `json:"key,omitempty"`
}

// SecretReference names a Secret of the Release's namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// KubeConfigReference names the kubeconfig of the cluster a Release releases into.
type KubeConfigReference struct {
	// SecretRef is the Secret of the Release's namespace, and its key, that holds the
	// kubeconfig, read as the Release's account in the Release's cluster.
	SecretRef KubeConfigSecretReference `json:"secretRef"`
}

// KubeConfigSecretReference names a key of a Secret of the Release's namespace that holds a
// kubeconfig.
type KubeConfigSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key of the Secret that holds the kubeconfig; default value (as Cluster API writes it).
	// +optional
	Key string `json:"key,omitempty"`
}

// KeyReference names a key of an object of the Release's namespace.
type KeyReference struct {
	// Name of the object.
	Name string `json:"name"`
	// Key in the object's data.
	Key string `json:"key"`
}

// ValuesReference names values kept in a ConfigMap or Secret of the Release's namespace.
type ValuesReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the ConfigMap or Secret.
	Name string `json:"name"`
	// Key holding a values file; default values.yaml.
	// +optional
	Key string `json:"key,omitempty"`
	// TargetPath, when set, puts the key's content at this path as one string, exactly as it is
	// (never parsed as a --set value), instead of reading it as a values file. The path is
	// helm's --set's: dots separate keys, a\.b is a key with a dot, list[0] an item (an
	// index at most 65536; the indexes of one path add at most 65537 list items together).
	// +kubebuilder:validation:MaxLength=250
	// +optional
	TargetPath string `json:"targetPath,omitempty"`
	// Optional makes a missing object or key count as no values instead of an error.
	// +optional
	Optional bool `json:"optional,omitempty"`
	// Decrypt, when set, decrypts the key's content before it is read as a values file: a
	// document encrypted with SOPS, as the sops CLI writes it (YAML or JSON). A key that holds
	// a SOPS document is refused without it.
	// +optional
	Decrypt *ValuesDecryption `json:"decrypt,omitempty"`
}

// ValuesDecryption says how a valuesFrom key's content is decrypted.
type ValuesDecryption struct {
	// Provider is sops.
	// +kubebuilder:validation:Enum=sops
	Provider string `json:"provider"`
	// SecretRef is the Secret of the Release's namespace that holds the keys, read as the
	// Release's ServiceAccount: each of its keys whose name ends in .agekey holds age
	// identities (AGE-SECRET-KEY-1..., one per line), as the age and sops CLIs write them.
	// Documents whose data key only PGP or a cloud KMS holds are refused (a cloud KMS unless
	// the controller runs with --allow-cloud-kms-decryption, with its own cloud identity).
	SecretRef SecretReference `json:"secretRef"`
}

// RollbackRequest asks for a release to be rolled back to one of its revisions.
type RollbackRequest struct {
	// Revision is the revision to roll back to.
	// +kubebuilder:validation:Minimum=1
	Revision int `json:"revision"`
	// Reason says why, in the rollback's description in the release's history.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	Reason string `json:"reason,omitempty"`
}

// DependencyReference names another Release of the same namespace.
type DependencyReference struct {
	// Name of the Release.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the Release; when set, it must be the depending Release's own: a Release
	// cannot depend on one of another namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// OperationSpec are the options every operation shares.
type OperationSpec struct {
	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`
	// DisableWait returns once the API server accepted the changes, instead of waiting until
	// every object is ready (or, for deletions, gone).
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`
	// WaitForJobs also waits until every Job of the release completed.
	// +optional
	WaitForJobs bool `json:"waitForJobs,omitempty"`
	// Retries is how many times a failed install or upgrade is tried again, RetryBackoff
	// after the failure, before the Release is Stalled with reason RetriesExhausted; 0 does not
	// try again until the spec, the chart version or the values change. install.retries
	// applies until the Release has deployed a revision, upgrade.retries after. A release
	// refused because its record would take more than a record may (RecordTooLarge) is never
	// tried again until they change.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Retries int32 `json:"retries,omitempty"`
	// RetryBackoff is the wait before the first retry, doubled for each further one; default
	// 30s, at least 1s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="retryBackoff must be at least 1s (a Go duration like 1s, 30s or 5m)"
	RetryBackoff *metav1.Duration `json:"retryBackoff,omitempty"`
}

// InstallSpec configures installs.
type InstallSpec struct {
	OperationSpec `json:",inline"`
	WatchSpec     `json:",inline"`
	// CreateNamespace creates the target namespace when it does not exist.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// RollbackOnFailure uninstalls what a failed install created.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
	// CRDs says what an install does with the CRDs of the chart's crds/ directories: Skip
	// them, Create the missing ones (default), or CreateReplace: create the missing ones and
	// update the existing ones. No CRD is ever deleted.
	// +optional
	CRDs CRDsPolicy `json:"crds,omitempty"`
}

// UpgradeSpec configures upgrades.
type UpgradeSpec struct {
	OperationSpec `json:",inline"`
	WatchSpec     `json:",inline"`
	// RollbackOnFailure rolls a failed upgrade back to the deployed revision.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
	// HistoryMax bounds the revisions kept; 0 keeps all. Default 10.
	// +kubebuilder:validation:Minimum=0
	// +optional
	HistoryMax *int32 `json:"historyMax,omitempty"`
	// CRDs says what an upgrade does with the CRDs of the chart's crds/ directories: Skip them
	// (default), Create the missing ones, or CreateReplace: create the missing ones and update
	// the existing ones. An update that drops a version listed in a CRD's
	// status.storedVersions, or changes its group, scope or kind, is refused. No CRD is ever
	// deleted.
	// +optional
	CRDs CRDsPolicy `json:"crds,omitempty"`
	// Force replaces the objects whose changes the API server refuses as immutable fields (a
	// Deployment's selector): each is deleted, waited for until gone and created again, as
	// Helm's --force-replace does. Without it, such a change fails before anything changes.
	// +optional
	Force bool `json:"force,omitempty"`
}

// WatchSpec is the window in which an install or upgrade watches its release once it is Ready,
// before it records the revision deployed: a regression in the window fails the operation, and
// the Release is Ready=False with reason Degraded, naming the object and what changed. The
// revision stays pending meanwhile, and the window counts in spec.timeout: it must be shorter
// than the timeout, and than two thirds of it when the operation rolls back on failure (the last
// third is kept for the rollback).
type WatchSpec struct {
	// WatchFor is how long the release is watched once it is Ready; unset or 0: not at all. It
	// implies the wait (disableWait is then ignored).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="watchFor must not be negative (a Go duration like 1m or 90s)"
	WatchFor *metav1.Duration `json:"watchFor,omitempty"`
	// WatchTolerance is how long an object may stay not ready in the window before that is a
	// regression (a Deployment scaled up is not ready for a moment); default 30s. An object still
	// not ready when the window ends is a regression, whatever is left of the tolerance.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="watchTolerance must not be negative (a Go duration like 30s)"
	WatchTolerance *metav1.Duration `json:"watchTolerance,omitempty"`
	// WatchRestarts is how many times each container may restart in the window before that is
	// a regression; default 0: any restart is one.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WatchRestarts *int32 `json:"watchRestarts,omitempty"`
	// WatchRemediation is what a regression in the window does: Rollback undoes the operation
	// (an upgrade is rolled back to the deployed revision, an install uninstalled), None records
	// the revision failed and leaves the release as it is. Default: what rollbackOnFailure says.
	// +optional
	WatchRemediation WatchRemediation `json:"watchRemediation,omitempty"`
}

// WatchRemediation is what a regression in an operation's watch window does.
// +kubebuilder:validation:Enum=Rollback;None
type WatchRemediation string

const (
	// WatchRemediationRollback undoes the operation on a regression in its window, with or
	// without rollbackOnFailure.
	WatchRemediationRollback WatchRemediation = "Rollback"
	// WatchRemediationNone records the revision failed and leaves the release as it is, even
	// with rollbackOnFailure.
	WatchRemediationNone WatchRemediation = "None"
)

// CRDsPolicy says what an install or upgrade does with the CRDs of the chart's crds/
// directories, with Flux's values.
// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
type CRDsPolicy string

const (
	CRDsSkip          CRDsPolicy = "Skip"
	CRDsCreate        CRDsPolicy = "Create"
	CRDsCreateReplace CRDsPolicy = "CreateReplace"
)

// UninstallSpec configures the uninstall run when the Release is deleted.
type UninstallSpec struct {
	// KeepHistory keeps the release's records, marked uninstalled.
	// +optional
	KeepHistory bool `json:"keepHistory,omitempty"`
	// DisableHooks skips the pre-delete and post-delete hooks: the way out when a pre-delete
	// hook can never succeed. Off by default.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`
	// DisableWait deletes the objects without waiting until they are gone.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`
	// DeletionPropagation is foreground (default), background or orphan.
	// +kubebuilder:validation:Enum=foreground;background;orphan
	// +optional
	DeletionPropagation string `json:"deletionPropagation,omitempty"`
}

// TestSpec runs the chart's test hooks.
type TestSpec struct {
	// Enable runs the test hooks after each install and upgrade.
	// +optional
	Enable bool `json:"enable,omitempty"`
	// Filters select tests by name: "name=x" runs only x, "!name=x" skips x.
	// +optional
	Filters []string `json:"filters,omitempty"`
}

// DriftMode says what is done when the cluster's objects differ from the release's.
// +kubebuilder:validation:Enum=disabled;detect;correct
type DriftMode string

const (
	DriftDisabled DriftMode = "disabled"
	DriftDetect   DriftMode = "detect"
	DriftCorrect  DriftMode = "correct"
)

// DriftSpec configures drift detection.
type DriftSpec struct {
	// Mode is disabled (default), detect (the Drifted condition says what differs) or correct
	// (what differs is applied again).
	// +optional
	Mode DriftMode `json:"mode,omitempty"`
	// Ignore are fields that may differ.
	// +optional
	Ignore []DriftIgnore `json:"ignore,omitempty"`
}

// DriftIgnore are JSON pointers (/spec/replicas) ignored in some or all objects.
type DriftIgnore struct {
	// Paths are JSON pointers into the objects.
	Paths []string `json:"paths"`
	// Kind, when set, limits the rule to objects of this kind.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name, when set, limits the rule to objects of this name.
	// +optional
	Name string `json:"name,omitempty"`
}

// ChartProof is the proof that a chart was verified before it was released: by which
// provider, of which package, signed by whom.
type ChartProof struct {
	// Provider is what verified the chart: pgp (a provenance file checked against
	// spec.chart.verify's keyring) or cosign (a cosign signature in the chart's registry).
	Provider string `json:"provider"`
	// Digest is what was signed: the chart package's sha256 (pgp), or the chart manifest's
	// digest in its registry (cosign).
	// +optional
	Digest string `json:"digest,omitempty"`
	// Signer is who signed it: the PGP key's identity and id; for cosign, the public key's
	// fingerprint (sha256 of its DER form), or keyless, the certificate's identity.
	Signer string `json:"signer"`
	// Issuer is the OIDC issuer of a keyless cosign signer's identity.
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// LogIndex is the transparency log's entry of a keyless cosign signature.
	// +optional
	LogIndex *int64 `json:"logIndex,omitempty"`
}

// ReleaseStatus is what the controller observed and did.
type ReleaseStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling and Stalled (kstatus), Released, Tested, Drifted, Healthy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReleaseName and TargetNamespace are where the release is recorded.
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Revision is the release's deployed revision.
	// +optional
	Revision int `json:"revision,omitempty"`
	// ChartName and ChartVersion are the deployed chart's; ChartDigest is the sha256 of its
	// package.
	// +optional
	ChartName string `json:"chartName,omitempty"`
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// +optional
	ChartDigest string `json:"chartDigest,omitempty"`
	// ChartVerified is the proof, recorded with the deployed revision, that its chart was
	// verified before it was released (spec.chart.verify); absent when it was not.
	// +optional
	ChartVerified *ChartProof `json:"chartVerified,omitempty"`
	// ValuesDigest is the sha256 of the deployed values.
	// +optional
	ValuesDigest string `json:"valuesDigest,omitempty"`
	// Record is what the deployed revision's record takes in the target namespace, when the
	// controller recorded it.
	// +optional
	Record *RecordFootprint `json:"record,omitempty"`

	// LastAttemptedGeneration, LastAttemptedChartVersion and LastAttemptedValuesDigest are
	// what the last install or upgrade tried, whatever its outcome: a failed attempt is not
	// tried again until one of them changes, unless install or upgrade retries allow it.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`
	// +optional
	LastAttemptedChartVersion string `json:"lastAttemptedChartVersion,omitempty"`
	// +optional
	LastAttemptedValuesDigest string `json:"lastAttemptedValuesDigest,omitempty"`

	// LastHandledReconcileAt is the last value of the annotation reconcile.berth.dev/requestedAt
	// the controller handled (a value longer than 128 characters as "sha256:" and its digest).
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// Failures is how many installs or upgrades of the last attempted generation, chart
	// version and values failed in a row; a success or a change of them resets it.
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// CurrentStep is the step of the operation under way.
	// +optional
	CurrentStep string `json:"currentStep,omitempty"`
	// Blockers are what stopped the last operation: an admission webhook, a finalizer,
	// dependents, a missing permission or a failing hook.
	// +optional
	Blockers []Blocker `json:"blockers,omitempty"`
	// History are the last operations, newest first.
	// +optional
	History []OperationRecord `json:"history,omitempty"`
	// LastChanges counts what the last install, upgrade or uninstall did to the release's
	// objects.
	// +optional
	LastChanges *ChangeCounts `json:"lastChanges,omitempty"`
}

// RecordFootprint is what the record of a revision takes: the Secret Helm reads
// (sh.helm.release.v1.NAME.vREVISION) and, for a record larger than one Secret holds (1 MiB), the
// parts beside it (Secrets of type berth.dev/release-part.v1) that hold its chart's templates and
// files, then its manifest. A record may take 16 MiB in all; a release whose record would take
// more is refused before anything changes.
type RecordFootprint struct {
	// Bytes is the size of the record Secret's data and of its parts' together: the release
	// compressed, as it is kept.
	Bytes int64 `json:"bytes"`
	// Parts is how many parts hold what did not fit in the record Secret; 0 when the whole
	// record is in it.
	// +optional
	Parts int32 `json:"parts,omitempty"`
}

// ChangeCounts counts what an operation did to the release's objects, each object once for
// each plan the operation executed (an interrupted operation it finished first, its own, and the
// undo of a failure).
type ChangeCounts struct {
	// Created are the objects the operation created.
	Created int32 `json:"created"`
	// Configured are the objects it changed.
	Configured int32 `json:"configured"`
	// Unchanged are the objects it applied and found as the chart has them.
	Unchanged int32 `json:"unchanged"`
	// Deleted are the objects it deleted, or found gone already.
	Deleted int32 `json:"deleted"`
}

// Blocker is what stopped an operation, and what to do about it.
type Blocker struct {
	// Kind is webhook, finalizer, dependents, permission, admission (a webhook or admission
	// policy that refused an object), hook, template, immutable, degraded
	// (a regression in the operation's watch window), cluster (a remote cluster that cannot be
	// reached or used; Object is its host), journal (the refused journal of an interrupted
	// operation; Object is its Secret), apiservice or namespace
	// (with webhook: what the operation's preflight found would block it) or other.
	Kind string `json:"kind"`
	// Object is the object concerned, as Kind/namespace/name.
	// +optional
	Object string `json:"object,omitempty"`
	// Message says what holds the object.
	Message string `json:"message"`
	// Next says what to do.
	// +optional
	Next string `json:"next,omitempty"`
	// LogTail is what the chart's own code output: the end of a failing hook's or test's logs, or
	// a template's fail or required message. It can hold values, Secrets included, so the
	// controller writes it only when started with --status-chart-output.
	// +optional
	LogTail string `json:"logTail,omitempty"`
}

// OperationRecord is one operation the controller ran.
type OperationRecord struct {
	// Operation is install, upgrade or uninstall.
	Operation string `json:"operation"`
	// Outcome is Succeeded, Failed, Blocked, or Skipped (an uninstall that could not run because
	// the Release's namespace is being deleted).
	Outcome string `json:"outcome"`
	// Revision is the release revision the operation made, if any.
	// +optional
	Revision int `json:"revision,omitempty"`
	// ChartVersion is the chart version the operation used.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// StartedAt is when the operation started.
	StartedAt metav1.Time `json:"startedAt"`
	// Duration is how long it ran.
	Duration metav1.Duration `json:"duration"`
	// Message is the operation's error, if any.
	// +optional
	Message string `json:"message,omitempty"`
}
