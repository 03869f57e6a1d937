package status

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// MaxConditionMessage is the longest message a condition is given: the API refuses a condition
// whose message is over 32768 bytes (metav1.Condition), and with it the whole status patch, so a
// message that quotes a long repository URL or name would leave the Release's status unwritten.
// It leaves room under the API's limit.
const MaxConditionMessage = 32000

// cutMark ends a message that was cut.
const cutMark = " ... (cut)"

// CutMessage cuts msg to at most n bytes on a rune boundary, ending it with a mark when cut.
func CutMessage(msg string, n int) string { return cutMessage(msg, n) }

// cutMessage cuts msg to at most n bytes on a rune boundary, ending it with cutMark when cut.
func cutMessage(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	end := max(n-len(cutMark), 0)
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return msg[:end] + cutMark
}

// PutCondition sets c in conditions, its message cut to MaxConditionMessage: every condition
// the controller writes goes through it.
func PutCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	c.Message = cutMessage(c.Message, MaxConditionMessage)
	meta.SetStatusCondition(conditions, c)
}

// CutNotes is an EventRecorder whose Events' notes are cut to MaxEventNote (the API refuses a
// longer one, and the Event is lost): every Event the controller records goes through it.
type CutNotes struct{ events.EventRecorder }

func (r CutNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", cutMessage(fmt.Sprintf(note, args...), MaxEventNote))
}

// MaxEventNote is the longest note an Event may have (events.k8s.io/v1: under 1 kB).
const MaxEventNote = 1000

// EventNote is err's message, as ErrorText gives it without the values r knows, cut to fit an
// Event (after the values are taken out: a cut value would not be found); the status keeps the
// details.
func EventNote(r *ValueRedactor, err error) string {
	msg := r.Error(err)
	if len(msg) <= MaxEventNote {
		return msg
	}
	const more = "\n... (see the Release's status.blockers)"
	cut := MaxEventNote - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}
