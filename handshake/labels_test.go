package handshake_test

import (
	"testing"

	"github.com/venuehq/venue/handshake"
)

// TestResourceLabelsRefuseHiddenControls: a resource's title and tags are
// read as labels: a bidi control or a zero-width character is refused and
// nothing is stored; the content, free text, keeps them.
func TestResourceLabelsRefuseHiddenControls(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, in := range []handshake.ResourceInput{
		{Title: "Safe \u202etxt.exe", Content: "x"},
		{Title: "sheet", Tags: []string{"sa\u200bfety"}, Content: "x"},
		{Title: "two\nlines", Content: "x"},
	} {
		_, err := f.svc.AddResource(f.ctx, "b", in, t0)
		wantCode(t, err, handshake.CodeInvalidArgument)
	}
	if _, err := f.svc.AddResource(f.ctx, "b", handshake.ResourceInput{Title: "Sheet", Tags: []string{"safety"}, Content: "\u202bright to left\u202c"}, t0); err != nil {
		t.Fatalf("content with bidi controls: %v", err)
	}
	list, _, err := f.svc.Resources(f.ctx, "b", handshake.ResourceQuery{}, t0)
	if err != nil || len(list) != 1 {
		t.Fatalf("resources after the refusals: %v %v, want the one accepted", list, err)
	}
}
