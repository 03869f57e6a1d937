package controller

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxConditionMessage is the longest message a condition is given: the API refuses a condition
// whose message is over 32768 bytes (metav1.Condition), and with it the whole status patch, so a
// message that quotes a long repository URL or name would leave the Release's status unwritten.
// It leaves room under the API's limit.
const maxConditionMessage = 32000

// cutMark ends a message that was cut.
const cutMark = " ... (cut)"

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

// putCondition sets c in conditions, its message cut to maxConditionMessage: every condition
// the controller writes goes through it.
func putCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	c.Message = cutMessage(c.Message, maxConditionMessage)
	meta.SetStatusCondition(conditions, c)
}

// cutNotes is an EventRecorder whose Events' notes are cut to maxEventNote (the API refuses a
// longer one, and the Event is lost): every Event the controller records goes through it.
type cutNotes struct{ events.EventRecorder }

func (r cutNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", cutMessage(fmt.Sprintf(note, args...), maxEventNote))
}
