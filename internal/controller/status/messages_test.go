package status

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

func TestCutMessageKeepsRunesWhole(t *testing.T) {
	tests := []struct {
		msg  string
		n    int
		want string
	}{
		{msg: "short", n: 10, want: "short"},
		{msg: strings.Repeat("a", 30), n: 20, want: "aaaaaaaaaa" + cutMark},
		{msg: strings.Repeat("é", 30), n: 21, want: "ééééé" + cutMark},
		{msg: strings.Repeat("a", 30), n: 3, want: cutMark},
	}
	for _, tt := range tests {
		got := cutMessage(tt.msg, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("cutMessage(%q, %d) = %q, want %q", tt.msg, tt.n, got, tt.want)
		}
	}
}

func TestPutConditionCutsItsMessage(t *testing.T) {
	var conditions []metav1.Condition
	PutCondition(&conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Failed", Message: strings.Repeat("€", 20000)})
	msg := conditions[0].Message
	if len(msg) > MaxConditionMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, cutMark) {
		t.Errorf("message of %d bytes (valid UTF-8: %t), want at most %d ending %q", len(msg), utf8.ValidString(msg), MaxConditionMessage, cutMark)
	}
}

func TestCutNotesCutsEveryEvent(t *testing.T) {
	fake := events.NewFakeRecorder(1)
	CutNotes{fake}.Eventf(nil, nil, "Warning", "Failed", "reconcile", "chart %s failed", strings.Repeat("x", 5000))
	got := <-fake.Events
	if len(got) > MaxEventNote+len("Warning Failed ") || !strings.HasSuffix(got, cutMark) {
		t.Errorf("event of %d bytes, want its note cut to %d", len(got), MaxEventNote)
	}
}
