package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rollout releases one chart into many clusters, wave by wave: it keeps one Release per
// cluster (named ROLLOUT-CLUSTER, in its own namespace, owned by it), and moves them to its
// template a wave at a time. A wave starts only once every cluster of the one before is Ready
// for the template and through its watch window, its pause has passed and, when it asks for one,
// a person approved it. When a cluster fails or degrades, no further wave starts, and the
// clusters already moved are rolled back (remediation Rollback), newest wave first, or left as
// they are (Halt).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=brollout
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.currentWave`
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Complete",type=string,JSONPath=`.status.conditions[?(@.type=="Complete")].status`
// +kubebuilder:printcolumn:name="Halted",type=string,JSONPath=`.status.conditions[?(@.type=="Halted")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec   `json:"spec"`
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutList is a list of Rollouts.
//
// +kubebuilder:object:root=true
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// Limits of a Rollout, which the CRD enforces.
const (
	MaxWaves           = 20
	MaxClustersPerWave = 100
)

// RolloutSpec is the rollout wanted.
type RolloutSpec struct {
	// Template is the spec of the Release each cluster gets; the rollout sets its kubeConfig
	// (the cluster's), and its releaseName to the template's, else the Rollout's name, so that
	// the release has one name in every cluster.
	Template ReleaseTemplate `json:"template"`

	// Waves are the groups of clusters, in the order they are moved.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=name
	Waves []Wave `json:"waves"`

	// Remediation is what happens when a cluster fails or degrades: Rollback (the default)
	// rolls back every cluster the rollout moved to the template, newest wave first, each to the
	// revision it had before; Halt leaves them as they are, for a person to decide. Either way,
	// no further wave starts.
	// +kubebuilder:validation:Enum=Rollback;Halt
	// +optional
	Remediation RolloutRemediation `json:"remediation,omitempty"`

	// Paused stops the rollout: no cluster is moved, and no wave starts, until it is false
	// again; what is under way finishes. berth rollout pause and resume set it.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// RolloutRemediation is what a Rollout does when a cluster fails or degrades.
type RolloutRemediation string

const (
	// RemediationRollback rolls back the clusters already moved, newest wave first.
	RemediationRollback RolloutRemediation = "Rollback"
	// RemediationHalt leaves them as they are.
	RemediationHalt RolloutRemediation = "Halt"
)

// ReleaseTemplate is the Release a Rollout keeps in each cluster.
type ReleaseTemplate struct {
	// Spec is the Release's spec; kubeConfig is the rollout's to set, and must be empty.
	Spec ReleaseSpec `json:"spec"`
}

// Wave is a group of clusters moved together.
type Wave struct {
	// Name of the wave, unique within the Rollout.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Clusters are the wave's clusters, each named by the kubeconfig Secret a Release would
	// name.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Clusters []WaveCluster `json:"clusters,omitempty"`

	// Selector selects, by their labels, kubeconfig Secrets of the Rollout's namespace as
	// clusters of the wave too: each is a cluster named after its Secret, whose kubeconfig is in
	// the key value (as Cluster API writes it). A Secret a wave before selects, or names, is
	// that wave's.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Values are merged over the template's values for the wave's clusters.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// MaxParallel is how many of the wave's clusters change at once; 0 (the default) is all.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxParallel int32 `json:"maxParallel,omitempty"`

	// Pause is how long to wait, once every cluster of the wave is done, before the next wave
	// starts.
	// +optional
	Pause *metav1.Duration `json:"pause,omitempty"`

	// Approval makes the wave wait, before it starts, until a person approves it: berth
	// rollout approve, or the Rollout's annotation rollout.berth.dev/approved set to the wave's
	// name and the first 12 characters of status.target (WAVE@TARGET).
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// WaveCluster is one cluster of a wave.
type WaveCluster struct {
	// Name of the cluster within the Rollout; its Release is ROLLOUT-NAME. Default: the
	// kubeconfig Secret's name.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`

	// KubeConfig is the cluster's kubeconfig, as a Release names it.
	KubeConfig KubeConfigReference `json:"kubeConfig"`

	// Values are merged over the wave's values for this cluster.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// ApprovedAnnotation is the Rollout's annotation that approves a wave: WAVE@TARGET, TARGET the
// first 12 characters of status.target.
const ApprovedAnnotation = "rollout.berth.dev/approved"

// The labels of the Releases a Rollout keeps.
const (
	// RolloutLabel names the Rollout that keeps the Release.
	RolloutLabel = "rollout.berth.dev/name"
	// RolloutTargetLabel is the first 12 characters of the target the Release was moved to.
	RolloutTargetLabel = "rollout.berth.dev/target"
	// RolloutClusterLabel is the cluster's name within its Rollout.
	RolloutClusterLabel = "rollout.berth.dev/cluster"
)

// RolloutStatus is what the controller last observed of a Rollout.
type RolloutStatus struct {
	// ObservedGeneration is the generation of the spec the status is of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Progressing (a wave is under way, or waits for its pause or approval),
	// Halted (a cluster failed or degraded: no further wave starts), RolledBack (the clusters
	// moved were rolled back), Complete (every cluster is Ready for the template), and Ready,
	// the same as Complete.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Target is a digest of the template, with the values of every wave and cluster, that the
	// rollout moves clusters to.
	// +optional
	Target string `json:"target,omitempty"`

	// CurrentWave is the wave under way, or waiting to start; empty once all are done.
	// +optional
	CurrentWave string `json:"currentWave,omitempty"`

	// Summary counts the clusters: READY/TOTAL ready for the template.
	// +optional
	Summary string `json:"summary,omitempty"`

	// Waves are the state of each wave and its clusters.
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`

	// Failure, when the rollout halted, is the cluster that failed or degraded, and why, in
	// the words of its Release's status.
	// +optional
	Failure *RolloutFailure `json:"failure,omitempty"`
}

// WaveStatus is the state of one wave.
type WaveStatus struct {
	Name string `json:"name"`
	// State is Pending, AwaitingApproval, Progressing, Pausing, Done, Halted or RolledBack.
	State string `json:"state"`
	// Since is when the wave came to its state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Clusters are the wave's clusters.
	// +optional
	Clusters []ClusterStatus `json:"clusters,omitempty"`
}

// ClusterStatus is the state of one cluster of a wave.
type ClusterStatus struct {
	Name string `json:"name"`
	// Release is the name of the cluster's Release.
	Release string `json:"release"`
	// State is Pending, Progressing, Ready, Waiting (its cluster does not answer, or its
	// inputs are missing), Failed, RollingBack or RolledBack.
	State string `json:"state"`
	// Revision is the release's revision in the cluster.
	// +optional
	Revision int `json:"revision,omitempty"`
	// PreviousRevision is the revision the cluster had before the rollout moved it to the
	// target, which a rollback returns to; 0 when it had none.
	// +optional
	PreviousRevision int `json:"previousRevision,omitempty"`
	// Since is when the cluster came to its state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Message is the Release's Ready message when it is not Ready.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutFailure names the cluster that halted a rollout.
type RolloutFailure struct {
	Wave    string `json:"wave"`
	Cluster string `json:"cluster"`
	Release string `json:"release"`
	// Reason and Message are the Release's Ready condition's.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}
