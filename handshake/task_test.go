package handshake_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

func TestTasks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "task:assess")
	_, err := f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "other", Text: "x"}, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	// task scopes are the requester's only
	_, err = f.svc.CreateTask(f.ctx, "b", handshake.TaskInput{To: "a", Skill: "assess", Text: "x"}, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	_, err = f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "a b", Text: "x"}, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	_, err = f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "assess", Text: ""}, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	task, err := f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "assess", Text: "ammonia?"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	open, total, _ := f.svc.Tasks(f.ctx, "b", 5, t0)
	if total != 1 || open[0].ID != task.ID {
		t.Fatalf("open %v", open)
	}
	_, err = f.svc.Complete(f.ctx, "a", task.ID, handshake.TaskCompleted, "", false, t0)
	wantCode(t, err, handshake.CodeNotFound)
	_, err = f.svc.Complete(f.ctx, "b", task.ID, "done", "", false, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	_, err = f.svc.Complete(f.ctx, "b", task.ID, handshake.TaskCompleted, strings.Repeat("x", 201), true, t0)
	wantCode(t, err, handshake.CodeTooLong)
	done, err := f.svc.Complete(f.ctx, "b", task.ID, handshake.TaskFailed, "no data", true, t0.Add(time.Minute))
	if err != nil || done.Status != handshake.TaskFailed || done.Result != "no data" {
		t.Fatalf("complete %+v %v", done, err)
	}
	_, err = f.svc.Complete(f.ctx, "b", task.ID, handshake.TaskCompleted, "", false, t0)
	wantCode(t, err, handshake.CodeNotPending)
	if open, _, _ := f.svc.Tasks(f.ctx, "b", 5, t0); len(open) != 0 {
		t.Fatalf("still open %v", open)
	}
	if got := f.pushes.types("a"); !slices.Contains(got, handshake.FrameTaskUpdated) {
		t.Fatalf("pushes to a %v", got)
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "a", Category: "spam"}, t0)
	wantCode(t, err, handshake.CodeSelfReport)
	_, err = f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "b", Category: "rude"}, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	_, err = f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "zz", Category: "spam"}, t0)
	wantCode(t, err, handshake.CodeUnknownAgent)
	_, err = f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "b", Category: "spam", Details: strings.Repeat("x", 501)}, t0)
	wantCode(t, err, handshake.CodeInvalidArgument)
	if _, err := f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "b", Category: "spam", Details: "ads"}, t0); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "b", Category: "abuse"}, t0)
	wantCode(t, err, handshake.CodeDuplicateReport)
	for i, id := range []string{"c", "d", "m00", "m01"} {
		if _, err := f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: id, Category: "other"}, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "m02", Category: "other"}, t0.Add(59*time.Minute))
	wantCode(t, err, handshake.CodeRateLimited)
	if _, err := f.svc.Report(f.ctx, "a", handshake.ReportInput{AgentID: "m02", Category: "other"}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pub, err := f.svc.AddResource(f.ctx, "b", handshake.ResourceInput{Title: "Ammonia safety sheet", Tags: []string{"Safety"}, Access: "public", Content: "..."}, t0)
	if err != nil {
		t.Fatal(err)
	}
	gated, err := f.svc.AddResource(f.ctx, "b", handshake.ResourceInput{Title: "Ammonia sensor data", Tags: []string{"data"}, Content: "12345"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []handshake.ResourceInput{{Title: ""}, {Title: "x", Access: "secret"}, {Title: "x", Tags: []string{""}}} {
		_, err := f.svc.AddResource(f.ctx, "b", in, t0)
		wantCode(t, err, handshake.CodeInvalidArgument)
	}
	readable := func(reader string, q handshake.ResourceQuery) map[string]bool {
		t.Helper()
		ls, _, err := f.svc.Resources(f.ctx, reader, q, t0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, l := range ls {
			out[l.ID] = l.Readable
		}
		return out
	}
	if got := readable("a", handshake.ResourceQuery{Q: "AMMONIA"}); len(got) != 2 || !got[pub.ID] || got[gated.ID] {
		t.Fatalf("before the agreement %v", got)
	}
	if got := readable("a", handshake.ResourceQuery{Tag: "safety"}); len(got) != 1 || !got[pub.ID] {
		t.Fatalf("by tag %v", got)
	}
	_, err = f.svc.ReadResource(f.ctx, "a", gated.ID, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
	f.agree(t, "a", "b", t0, "resource:read")
	if got := readable("a", handshake.ResourceQuery{Q: "sensor"}); !got[gated.ID] {
		t.Fatalf("after the agreement %v", got)
	}
	r, err := f.svc.ReadResource(f.ctx, "a", gated.ID, t0)
	if err != nil || r.Content != "12345" {
		t.Fatalf("read %+v %v", r, err)
	}
	// resource:read is the requester's: b cannot read a's gated resources.
	mine, _ := f.svc.AddResource(f.ctx, "a", handshake.ResourceInput{Title: "mine"}, t0)
	_, err = f.svc.ReadResource(f.ctx, "b", mine.ID, t0)
	wantCode(t, err, handshake.CodeNotAuthorized)
}
