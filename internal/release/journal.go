package release

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berthdev/berth/internal/plan"
)

// Operation is what a journal records.
type Operation string

const (
	OpInstall   Operation = "install"
	OpUpgrade   Operation = "upgrade"
	OpRollback  Operation = "rollback"
	OpUninstall Operation = "uninstall"
)

// JournalState says whether a journaled operation is running or was interrupted by a signal. A
// journal that says running while nobody holds the release's lease belongs to a process that died.
type JournalState string

const (
	JournalRunning     JournalState = "running"
	JournalInterrupted JournalState = "interrupted"
)

// JournalSecretType is the type of the Secrets that hold journals: not Helm's, so Helm ignores them.
const JournalSecretType = "berth.dev/journal.v1"

// journalDataKey is the key of a journal Secret's data that holds the journal, as JSON.
const journalDataKey = "journal"

// JournalKey is the name of the Secret that holds a release's journal: berth.journal.NAME.
func JournalKey(name string) string { return "berth.journal." + name }

// Journal is the record of one operation on a release while it runs: what it does (the plan) and
// what it has done (completed steps and hook events). It lives beside the release's records and
// is deleted when the operation ends; one left behind is an operation that did not end.
type Journal struct {
	Release   string       `json:"release"`
	Operation Operation    `json:"operation"`
	Revision  int          `json:"revision"`
	State     JournalState `json:"state"`
	// Holder is who ran the operation.
	Holder  string         `json:"holder,omitempty"`
	Started time.Time      `json:"started"`
	Updated time.Time      `json:"updated"`
	Options JournalOptions `json:"options"`
	Plan    *plan.Plan     `json:"plan,omitempty"`
	// Steps are the IDs of the plan's completed steps, in order.
	Steps []string `json:"steps,omitempty"`
	// Hooks are the hook events whose hooks all completed, as journals recorded them before hooks
	// were steps of the plan ("hooks/EVENT").
	Hooks []string `json:"hooks,omitempty"`
	// HooksSucceeded are the hook events whose hooks all succeeded, recorded before the hooks
	// are deleted (hook-succeeded): what is left of them is only their deletion.
	HooksSucceeded []string `json:"hooksSucceeded,omitempty"`
}

// JournalOptions are the options of the operation that a resumption needs.
type JournalOptions struct {
	NoHooks       bool   `json:"noHooks,omitempty"`
	Wait          bool   `json:"wait,omitempty"`
	WaitForJobs   bool   `json:"waitForJobs,omitempty"`
	TakeOwnership bool   `json:"takeOwnership,omitempty"`
	KeepHistory   bool   `json:"keepHistory,omitempty"`
	Cascade       string `json:"cascade,omitempty"`
}

// StepDone reports whether the step with id completed.
func (j *Journal) StepDone(id string) bool { return j != nil && slices.Contains(j.Steps, id) }

// HookDone reports whether the hooks of event completed.
func (j *Journal) HookDone(event string) bool {
	return j != nil && (slices.Contains(j.Hooks, event) || slices.Contains(j.Steps, "hooks/"+event))
}

// HookSucceeded reports whether the hooks of event all succeeded (they may not be deleted yet).
func (j *Journal) HookSucceeded(event string) bool {
	return j != nil && slices.Contains(j.HooksSucceeded, event)
}

// Journals keeps the journals of the releases of one namespace, each in a Secret of type
// berth.dev/journal.v1 named berth.journal.NAME whose data key "journal" holds it as JSON.
type Journals struct {
	secrets   typedcorev1.SecretsGetter
	namespace string
}

// NewJournals returns the journals of the releases of namespace, kept as Secrets through secrets.
func NewJournals(secrets typedcorev1.SecretsGetter, namespace string) *Journals {
	return &Journals{secrets: secrets, namespace: namespace}
}

// Get returns the journal of a release; nil when there is none.
func (s *Journals) Get(ctx context.Context, name string) (*Journal, error) {
	sec, err := s.secrets.Secrets(s.namespace).Get(ctx, JournalKey(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Secret/%s/%s: get journal: %w", s.namespace, JournalKey(name), err)
	}
	var j Journal
	if err := json.Unmarshal(sec.Data[journalDataKey], &j); err != nil {
		return nil, fmt.Errorf("Secret/%s/%s: decode journal: %w", s.namespace, JournalKey(name), err)
	}
	return &j, nil
}

// secret is the Secret that holds the journal of release name, without the journal.
func (s *Journals) secret(name string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: JournalKey(name), Namespace: s.namespace,
			Labels: map[string]string{"owner": "berth", "name": name}},
		Type: JournalSecretType,
	}
}

// Object is the Secret that holds the journal of release name, without the journal: what the
// preflight matches webhooks against.
func (s *Journals) Object(name string) *unstructured.Unstructured {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.secret(name))
	if err != nil {
		return nil
	}
	return &unstructured.Unstructured{Object: u}
}

// Put records a journal, replacing the release's previous one.
func (s *Journals) Put(ctx context.Context, j *Journal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("journal of release %s: encode: %w", j.Release, err)
	}
	sec := s.secret(j.Release)
	sec.Data = map[string][]byte{journalDataKey: data}
	client := s.secrets.Secrets(s.namespace)
	_, err = client.Update(ctx, sec, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = client.Create(ctx, sec, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("Secret/%s/%s: write journal: %w", s.namespace, sec.Name, err)
	}
	return nil
}

// Delete removes the journal of a release; there may be none.
func (s *Journals) Delete(ctx context.Context, name string) error {
	err := s.secrets.Secrets(s.namespace).Delete(ctx, JournalKey(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("Secret/%s/%s: delete journal: %w", s.namespace, JournalKey(name), err)
	}
	return nil
}
