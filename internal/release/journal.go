package release

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
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
	// OpTest is a run of a release's tests (berth test).
	OpTest Operation = "test"
	// OpCorrect puts back the objects of a release's deployed revision that differ from it in
	// the cluster (a Release's drift correction), without a new revision.
	OpCorrect Operation = "correct-drift"
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

// journalDataKey is the key of a journal Secret's data that holds the journal, as JSON;
// journalGzipKey holds it gzipped instead, when the JSON is over journalGzipOver bytes (the plan
// of a release of thousands of objects), so that it fits in one Secret as the record does.
const (
	journalDataKey  = "journal"
	journalGzipKey  = "journal.gz"
	journalGzipOver = 256 << 10
)

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
	// WatchStarted is when the plan's watch window started (--watch-for): written with the step
	// before it, so that a run that finishes the operation watches for what is left of it.
	WatchStarted time.Time `json:"watchStarted,omitzero"`
}

// JournalOptions are the options of the operation that a resumption needs.
type JournalOptions struct {
	NoHooks       bool   `json:"noHooks,omitempty"`
	Wait          bool   `json:"wait,omitempty"`
	Ordered       bool   `json:"ordered,omitempty"`
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
// berth.dev/journal.v1 named berth.journal.NAME whose data key "journal" holds it as JSON. Each
// write is conditional on the version of the journal its writer last read or wrote, so that an
// operation that lost its release to another never overwrites or deletes the other's journal.
type Journals struct {
	secrets   typedcorev1.SecretsGetter
	namespace string
	// lists are the lists a store of the namespace's records keeps (see Beside); nil when the
	// journals are read from none.
	lists *listMemo
	// expansion bounds what a journal expands to once decompressed.
	expansion Expansion
	// inMemory says the Secrets are kept in a memory store's memory, not in the cluster.
	inMemory bool
}

// NewJournals returns the journals of the releases of namespace, kept as Secrets through secrets.
func NewJournals(secrets typedcorev1.SecretsGetter, namespace string) *Journals {
	return &Journals{secrets: secrets, namespace: namespace, expansion: DefaultExpansion()}
}

// Expanding makes s decode journals within e, and returns s.
func (s *Journals) Expanding(e Expansion) *Journals {
	s.expansion = e
	return s
}

// Beside returns the journals of s that read from what store remembers (HelmStore.RememberLists):
// a store of Secrets lists a release's journal with its records, so that a journal read after
// that list, while the list is kept, is answered from it with the journal and version it held,
// without a request of its own. A journal write through them forgets the list. s itself when
// store does not keep its records in Secrets through the same client as s: its lists do not hold
// s's journals. Only writes through the journals returned are known to the list: another writer's
// journal is read once the list is forgotten, as is another writer's record.
func (s *Journals) Beside(store *HelmStore) *Journals {
	if store == nil || store.kind != "Secret" || !sameClient(store.secrets, s.secrets) {
		return s
	}
	return &Journals{secrets: s.secrets, namespace: s.namespace, lists: store.memo, expansion: s.expansion}
}

// sameClient reports whether a and b are the same client: pointers to one object.
func sameClient(a, b typedcorev1.SecretsGetter) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.IsValid() && vb.IsValid() && va.Kind() == reflect.Pointer && va.Type() == vb.Type() &&
		va.Pointer() == vb.Pointer()
}

// Get returns the journal of a release; nil when there is none.
func (s *Journals) Get(ctx context.Context, name string) (*Journal, error) {
	j, _, err := s.Read(ctx, name)
	return j, err
}

// Read returns the journal of a release and the version of it that was read (its Secret's
// resourceVersion), on which the reader's writes are conditional; nil and "" when there is none.
// When the journals are beside a store (Beside) that keeps a list of the release's records,
// that list answers.
func (s *Journals) Read(ctx context.Context, name string) (*Journal, string, error) {
	if it, ok := s.lists.journal(s.namespace, name); ok {
		if it == nil {
			return nil, "", nil
		}
		return s.decode(ctx, name, it.journal, it.resourceVersion)
	}
	sec, err := s.secrets.Secrets(s.namespace).Get(ctx, JournalKey(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("Secret/%s/%s: get journal: %w", s.namespace, JournalKey(name), err)
	}
	return s.decode(ctx, name, sec.Data, sec.ResourceVersion)
}

// decode is the journal of release name that a Secret at version with data holds.
func (s *Journals) decode(ctx context.Context, name string, secretData map[string][]byte, version string) (*Journal, string, error) {
	data := secretData[journalDataKey]
	if z, ok := secretData[journalGzipKey]; ok {
		data = z
	}
	var j Journal
	object := fmt.Sprintf("Secret/%s/%s", s.namespace, JournalKey(name))
	if err := s.expansion.decodeJSON(ctx, object, "journal", data, &j); err != nil {
		return nil, "", fmt.Errorf("Secret/%s/%s: decode journal: %w", s.namespace, JournalKey(name), err)
	}
	return &j, version, nil
}

// forget forgets the list of the records of release name kept beside the journals, which holds
// its journal, for a write of it: before (a list under way then is not kept) and after.
func (s *Journals) forget(name string) (after func()) {
	if s.lists == nil {
		return func() {}
	}
	s.lists.forgetJournal(s.namespace, name)
	return func() { s.lists.forgetJournal(s.namespace, name) }
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
// preflight matches webhooks against; nil for the journals of a memory store.
func (s *Journals) Object(name string) *unstructured.Unstructured {
	if s.inMemory {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.secret(name))
	if err != nil {
		return nil
	}
	return &unstructured.Unstructured{Object: u}
}

// JournalChangedError says that the journal of a release is not as the operation writing it last
// read or wrote it: another operation, which owns the release now, wrote or deleted it. Nothing
// was written.
type JournalChangedError struct {
	Release, Namespace string
	Err                error
}

func (e *JournalChangedError) Error() string {
	return fmt.Sprintf("Secret/%s/%s: the journal of release %s changed under this operation, which wrote nothing more to it: %v",
		e.Namespace, JournalKey(e.Release), e.Release, e.Err)
}

func (e *JournalChangedError) Is(target error) bool { return target == ErrLost }
func (e *JournalChangedError) Unwrap() error        { return e.Err }

// Put writes j in place of the release's journal at version, the version its writer last read or
// wrote ("" when it saw none: j is then created), and returns the version it wrote. A journal
// that is not at version is another operation's: Put leaves it and returns a
// *JournalChangedError.
func (s *Journals) Put(ctx context.Context, j *Journal, version string) (string, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return version, fmt.Errorf("journal of release %s: encode: %w", j.Release, err)
	}
	sec := s.secret(j.Release)
	sec.Data = map[string][]byte{journalDataKey: data}
	if len(data) > journalGzipOver {
		z, err := gzipBytes(data, gzip.DefaultCompression)
		if err != nil {
			return version, fmt.Errorf("journal of release %s: encode: %w", j.Release, err)
		}
		sec.Data = map[string][]byte{journalGzipKey: z}
	}
	defer s.forget(j.Release)()
	client := s.secrets.Secrets(s.namespace)
	var out *corev1.Secret
	if version == "" {
		out, err = client.Create(ctx, sec, metav1.CreateOptions{})
	} else {
		sec.ResourceVersion = version
		out, err = client.Update(ctx, sec, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || (version != "" && apierrors.IsNotFound(err)):
		return version, &JournalChangedError{Release: j.Release, Namespace: s.namespace, Err: err}
	case err != nil:
		return version, fmt.Errorf("Secret/%s/%s: write journal: %w", s.namespace, sec.Name, err)
	}
	return out.ResourceVersion, nil
}

// Delete removes the journal of a release at version, the version its deleter last read or
// wrote; nothing when version is "" (it saw none) or the journal is gone already. A journal at
// another version is another operation's: Delete leaves it and returns a *JournalChangedError.
func (s *Journals) Delete(ctx context.Context, name, version string) error {
	if version == "" {
		return nil
	}
	defer s.forget(name)()
	err := s.secrets.Secrets(s.namespace).Delete(ctx, JournalKey(name), metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return &JournalChangedError{Release: name, Namespace: s.namespace, Err: err}
	}
	return fmt.Errorf("Secret/%s/%s: delete journal: %w", s.namespace, JournalKey(name), err)
}
