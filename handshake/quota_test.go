package handshake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

// Resources: 30 an hour, 100 held, 1,000,000 bytes held per agent; the
// refusals change nothing.
func TestResourceQuotas(t *testing.T) {
	t.Parallel()
	f := setup(t)
	add := func(owner string, size int, at time.Time) error {
		_, err := f.svc.AddResource(f.ctx, owner, handshake.ResourceInput{Title: "r", Content: strings.Repeat("x", size)}, at)
		return err
	}
	for i := range handshake.ResourcesPerHour {
		if err := add("a", 10, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(i, err)
		}
	}
	wantCode(t, add("a", 10, t0.Add(time.Minute)), handshake.CodeRateLimited)
	if err := add("b", 10, t0.Add(time.Minute)); err != nil { // another agent's own hour
		t.Fatal(err)
	}
	// The hour passes: 70 more reach the count cap of 100.
	at := t0
	for i := range handshake.MaxResourcesPerAgent - handshake.ResourcesPerHour {
		if i%handshake.ResourcesPerHour == 0 {
			at = at.Add(time.Hour + time.Minute)
		}
		if err := add("a", 10, at.Add(time.Duration(i%handshake.ResourcesPerHour)*time.Second)); err != nil {
			t.Fatal(i, err)
		}
	}
	at = at.Add(2 * time.Hour)
	wantCode(t, add("a", 10, at), handshake.CodeQuotaExceeded)
	_, total, err := f.svc.Resources(f.ctx, "a", handshake.ResourceQuery{Limit: 1}, at)
	if err != nil || total != handshake.MaxResourcesPerAgent+1 { // a's 100 and b's 1
		t.Fatalf("resources %d %v", total, err)
	}
	// Bytes: 16 of 60,000 bytes fit in 1,000,000, the 17th does not.
	for i := range 16 {
		if err := add("c", handshake.MaxTextBytes, at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(i, err)
		}
	}
	wantCode(t, add("c", handshake.MaxTextBytes, at.Add(time.Minute)), handshake.CodeQuotaExceeded)
	if err := add("c", handshake.MaxResourceBytesPerAgent-16*handshake.MaxTextBytes, at.Add(time.Minute)); err != nil {
		t.Fatalf("what still fits: %v", err)
	}
}

// Tasks: 60 an hour per sender, 50 open per sender, 100 open per target;
// answering a task frees its place.
func TestTaskQuotas(t *testing.T) {
	t.Parallel()
	f := setup(t)
	send := func(from, to string, at time.Time) (handshake.Task, error) {
		return f.svc.CreateTask(f.ctx, from, handshake.TaskInput{To: to, Skill: "assess", Text: "t"}, at)
	}
	for _, from := range []string{"a", "c", "d"} {
		f.agree(t, from, "b", t0, "task:assess")
	}
	var first handshake.Task
	for i := range handshake.MaxOpenTasksPerSender {
		k, err := send("a", "b", t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(i, err)
		}
		if i == 0 {
			first = k
		}
	}
	wantCode(t, second(send("a", "b", t0.Add(time.Minute))), handshake.CodeQuotaExceeded)
	if _, err := f.svc.Complete(f.ctx, "b", first.ID, handshake.TaskCompleted, "done", false, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := send("a", "b", t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("after one was answered: %v", err)
	}
	// c: 50 open to b; b then has 100 open; d's first is refused.
	for i := range handshake.MaxOpenTasksPerSender {
		if _, err := send("c", "b", t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(i, err)
		}
	}
	wantCode(t, second(send("d", "b", t0.Add(3*time.Minute))), handshake.CodeQuotaExceeded)
}

// 60 tasks an hour per sender, open or answered.
func TestTaskRate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.agree(t, "a", "b", t0, "task:assess")
	for i := range handshake.TasksPerHour {
		k, err := f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "assess", Text: "t"}, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(i, err)
		}
		if _, err := f.svc.Complete(f.ctx, "b", k.ID, handshake.TaskCompleted, "", false, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.svc.CreateTask(f.ctx, "a", handshake.TaskInput{To: "b", Skill: "assess", Text: "t"}, t0.Add(2*time.Minute))
	wantCode(t, err, handshake.CodeRateLimited)
}

func second[T any](_ T, err error) error { return err }
