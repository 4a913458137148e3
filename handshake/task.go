package handshake

import (
	"context"
	"strings"
	"time"
)

// TaskInput is a task for To's Skill with Text, sent under an agreement
// granting the sender task:<Skill>.
type TaskInput struct {
	To    string
	Skill string
	Text  string
}

// CreateTask sends a task (POST /v1/tasks; A2A tasks later). Errors:
// invalid_argument (no text, bad skill), too_long (60,000 bytes),
// unknown_agent, not_authorized (no active agreement where the sender
// asked for and got task:<skill>), rate_limited (60 an hour per sender),
// quota_exceeded (50 open tasks or 1,000,000 bytes of open task text per
// sender; 100 open tasks per target).
func (s *Service) CreateTask(ctx context.Context, from string, in TaskInput, now time.Time) (Task, error) {
	if !validSkill(in.Skill) {
		return Task{}, errorf(CodeInvalidArgument, "skill must be 1-%d letters, digits, '-', '_' or '.'", MaxSkillChars)
	}
	if err := checkText("text", in.Text, false); err != nil {
		return Task{}, err
	}
	sender, err := s.agent(ctx, from)
	if err != nil {
		return Task{}, err
	}
	if _, err := s.agent(ctx, in.To); err != nil {
		return Task{}, err
	}
	t := Task{ID: s.NewID("tsk"), From: from, To: in.To, Skill: in.Skill, Text: in.Text, At: now, Status: TaskOpen}
	err = s.do(ctx, now, []string{agentKey(from), agentKey(in.To)}, func(tx Tx, fx *effects) error {
		ag, err := authorizing(tx, from, in.To, ScopeTaskPrefix+in.Skill)
		if err != nil {
			return err
		}
		t.AgreementID = ag.ID
		if err := taskQuota(tx, from, in.To, len(in.Text), now); err != nil {
			return err
		}
		if err := tx.Hit("task", from, now); err != nil {
			return err
		}
		if err := tx.CreateTask(t); err != nil {
			return err
		}
		fx.push(in.To, map[string]any{"type": FrameTaskReceived, "task": TaskView(t, sender.Name)})
		if err := fx.event(tx, in.To, NotifyTaskRequest, now); err != nil {
			return err
		}
		return audit(tx, now, "agent:"+from, "task", t.ID, in.To+" "+in.Skill)
	})
	return t, err
}

// Tasks returns the open tasks addressed to agentID, oldest first, at
// most limit (1-50, default 5) (TASKS, GET /v1/tasks).
func (s *Service) Tasks(ctx context.Context, agentID string, limit int, now time.Time) ([]Task, int, error) {
	if limit == 0 {
		limit = 5
	}
	if limit < 1 || limit > MaxInboxLimit {
		return nil, 0, errorf(CodeInvalidArgument, "limit must be 1-%d", MaxInboxLimit)
	}
	var out []Task
	var total int
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		var err error
		out, total, err = tx.Tasks(TaskQuery{To: agentID, Status: TaskOpen, Limit: limit})
		return err
	})
	return out, total, err
}

// Complete answers an open task addressed to agentID (COMPLETE, POST
// /v1/tasks/{id}/complete) with outcome completed, failed or rejected and a
// text (optional; at most 200 characters when irc). Errors:
// invalid_argument (outcome), too_long, not_found (no such task for you),
// not_pending (answered already).
func (s *Service) Complete(ctx context.Context, agentID, taskID, outcome, text string, irc bool, now time.Time) (Task, error) {
	switch outcome {
	case TaskCompleted, TaskFailed, TaskRejected:
	default:
		return Task{}, errorf(CodeInvalidArgument, "outcome must be completed, failed or rejected")
	}
	if strings.TrimSpace(text) != "" {
		if err := checkText("text", text, irc); err != nil {
			return Task{}, err
		}
	}
	var out Task
	err := s.do(ctx, now, []string{"task:" + taskID}, func(tx Tx, fx *effects) error {
		t, err := tx.Task(taskID)
		if err != nil {
			return notFound(err, "no task %s for you", taskID)
		}
		if t.To != agentID {
			return errorf(CodeNotFound, "no task %s for you", taskID)
		}
		if t.Status != TaskOpen {
			return errorf(CodeNotPending, "task %s is %s", taskID, t.Status)
		}
		t.Status, t.Result, t.CompletedAt = outcome, text, now
		if err := tx.UpdateTask(t); err != nil {
			return err
		}
		out = t
		fx.push(t.From, map[string]any{"type": FrameTaskUpdated, "task": TaskView(t, s.name(ctx, t.From))})
		if err := fx.event(tx, t.From, NotifyTaskUpdate, now); err != nil {
			return err
		}
		return audit(tx, now, "agent:"+agentID, "complete", t.ID, outcome)
	})
	return out, err
}

// Limits of tasks (PIRCAN.md "Limits of the handshake").
const (
	TasksPerHour           = 60        // tasks a sender sends an hour
	MaxOpenTasksPerSender  = 50        // open tasks a sender has sent
	MaxOpenTaskBytesSender = 1_000_000 // their texts' bytes together
	MaxOpenTasksPerTarget  = 100       // open tasks addressed to one agent
)

// taskQuota refuses a task of size bytes from from to to past the caps.
func taskQuota(tx Tx, from, to string, size int, now time.Time) error {
	if n, err := tx.Hits("task", from, now.Add(-time.Hour)); err != nil {
		return err
	} else if n >= TasksPerHour {
		return errorf(CodeRateLimited, "at most %d tasks an hour", TasksPerHour)
	}
	n, b, err := tx.Usage(UsageOpenTasks, from)
	if err != nil {
		return err
	}
	if n >= MaxOpenTasksPerSender {
		return errorf(CodeQuotaExceeded, "at most %d of your tasks may be open", MaxOpenTasksPerSender)
	}
	if b+size > MaxOpenTaskBytesSender {
		return errorf(CodeQuotaExceeded, "your open tasks hold at most %d bytes together (%d held)", MaxOpenTaskBytesSender, b)
	}
	if _, open, err := tx.Tasks(TaskQuery{To: to, Status: TaskOpen}); err != nil {
		return err
	} else if open >= MaxOpenTasksPerTarget {
		return errorf(CodeQuotaExceeded, "that agent has %d open tasks; wait until it answers some", MaxOpenTasksPerTarget)
	}
	return nil
}
