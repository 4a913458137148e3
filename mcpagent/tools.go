package mcpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/wire"
)

// effect is what a tool does to the world, for its annotations.
type effect int

const (
	reads       effect = iota // changes nothing (readOnlyHint)
	adds                      // adds something, takes nothing away
	destructive               // replaces, ends or takes away something (destructiveHint)
)

// toolSpec declares one tool: its name and title, what it tells the model,
// the limits of its input, and its annotations.
type toolSpec struct {
	name, title, desc string
	limits            map[string]limit
	effect            effect
	idempotent        bool // calling it again with the same input changes nothing more
}

func (s toolSpec) annotations() *mcp.ToolAnnotations {
	yes := true
	no := false
	a := &mcp.ToolAnnotations{Title: s.title, ReadOnlyHint: s.effect == reads, IdempotentHint: s.idempotent || s.effect == reads,
		OpenWorldHint: &yes} // every tool talks to a venue and, through it, to other agents
	a.DestructiveHint = &no
	if s.effect == destructive {
		a.DestructiveHint = &yes
	}
	return a
}

// call is one tool call as a handler sees it: its context, the reader its
// waits read for (the MCP session), its progress token, and what to do once
// its answer was delivered.
type call struct {
	ctx      context.Context
	session  *mcp.ServerSession
	reader   string // the MCP session id; "" for stdio or a request without a session
	progress any    // the call's progressToken, nil without one
	d        *delivery
	commits  []commit
}

// commit is a read counted as read, and how to take it back.
type commit struct{ do, undo func() }

// onDelivered counts a read as read once the answer carrying it reaches
// the client: over this package's HTTP handler, as the answer is written to
// a live response (and taken back if that write fails); otherwise (stdio)
// when the handler returns with the call not cancelled. See feed.
func (c *call) onDelivered(do, undo func()) { c.commits = append(c.commits, commit{do, undo}) }

// finish hands the commits on, or drops them for a refused or cancelled
// call.
func (c *call) finish(ok bool) {
	if !ok || len(c.commits) == 0 {
		return
	}
	if c.d != nil {
		c.d.add(c.commits)
		return
	}
	if c.ctx.Err() == nil {
		for _, cm := range c.commits {
			cm.do()
		}
	}
}

// newCall builds the call of req. Over this package's HTTP handler the
// call's context also ends when the HTTP request carrying it does, so a
// wait whose client went away stops at once.
func (a *Agent) newCall(ctx context.Context, req *mcp.CallToolRequest) (*call, context.CancelFunc) {
	c := &call{ctx: ctx, session: req.Session}
	if req.Session != nil {
		c.reader = req.Session.ID()
	}
	if req.Params != nil {
		c.progress = req.Params.GetProgressToken()
	}
	cancel := context.CancelFunc(func() {})
	if req.Extra != nil && req.Extra.Header != nil {
		if d := a.deliveries.get(req.Extra.Header.Get(deliveryHeader)); d != nil {
			c.d = d
			var cctx context.Context
			cctx, cancel = context.WithCancel(ctx)
			stop := context.AfterFunc(d.ctx, cancel)
			c.ctx = cctx
			inner := cancel
			cancel = func() { stop(); inner() }
		}
	}
	return c, cancel
}

// tool registers a tool whose handler returns a value (the answer, as
// structuredContent and as JSON text) or an error (a refusal: IsError set,
// text naming the code or failed check, never a protocol error).
//
// The arguments are read as the venue reads a frame: strict JSON (a key
// repeated, also in another case, is refused: invalid_json), then checked
// against the input schema (invalid_argument), so what a host shows the
// model's call to be is what the venue applies. The answer has no nulls
// and is checked against the output schema before it leaves.
func tool[In, Out any](a *Agent, spec toolSpec, h func(*call, In) (Out, error)) {
	inSchema := inputSchema[In](spec.limits)
	outSchema := schemaFor[Out]()
	inResolved, err := inSchema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcpagent: %s: input schema: %v", spec.name, err))
	}
	outResolved, err := outSchema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcpagent: %s: output schema: %v", spec.name, err))
	}
	t := &mcp.Tool{Name: spec.name, Title: spec.title, Description: spec.desc, InputSchema: inSchema, OutputSchema: outSchema,
		Annotations: spec.annotations()}
	a.tools = append(a.tools, spec.name)
	a.server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, werr := decodeArgs[In](req.Params.Arguments, inResolved)
		if werr != nil {
			a.log.Info("tool refused", "tool", spec.name, "err", werr)
			return refusal(fmt.Sprintf("error %s: the arguments of %s were refused and nothing was done: %s", werr.Code, spec.name, werr.Message)), nil
		}
		c, cancel := a.newCall(ctx, req)
		defer cancel()
		out, err := h(c, in)
		if a.hooks.done != nil {
			defer a.hooks.done(spec.name, err)
		}
		if err != nil {
			c.finish(false)
			a.log.Info("tool refused", "tool", spec.name, "err", err)
			return refusal(describe(spec.name, err)), nil
		}
		b, err := answer(out, outResolved)
		if err != nil {
			c.finish(false)
			a.log.Error("tool answer does not fit its schema", "tool", spec.name, "err", err)
			return nil, fmt.Errorf("mcpagent: %s: %w", spec.name, err)
		}
		c.finish(true)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	})
}

// decodeArgs reads a call's arguments into In: strict JSON, an object,
// valid against the input schema.
func decodeArgs[In any](raw json.RawMessage, schema *jsonschema.Resolved) (In, *wire.Error) {
	var in In
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := wire.CheckStrict(raw); err != nil {
		return in, err
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return in, wire.Errorf(wire.CodeInvalidJSON, "%v", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return in, wire.Errorf(wire.CodeInvalidJSON, "the arguments are not a JSON object")
	}
	if err := schema.Validate(inst); err != nil {
		return in, wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	}
	return in, nil
}

// answer encodes out without nulls and checks it against its schema.
func answer(out any, schema *jsonschema.Resolved) ([]byte, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if b, err = dropNulls(b); err != nil {
		return nil, err
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return nil, err
	}
	if err := schema.Validate(inst); err != nil {
		return nil, fmt.Errorf("the answer does not fit the output schema: %w", err)
	}
	return b, nil
}

func refusal(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Wait bounds of wait_lobby and wait_events (seconds). A call that carries
// a progressToken waits up to MaxWaitSeconds, with notifications/progress
// at least every ProgressEvery; one without answers within
// MaxSilentSeconds ("nothing new" is an answer), since most MCP clients give
// up on a silent call after 60 s.
const (
	DefaultWaitSeconds = 20
	MaxWaitSeconds     = 120
	MaxSilentSeconds   = 20
	ProgressEvery      = 10 * time.Second
)

// waitNote says how a requested timeout was applied, when it was not as
// asked; "" when it was.
func waitSeconds(asked *int, progress any) (int, string) {
	n := DefaultWaitSeconds
	if asked != nil {
		n = *asked
	}
	if progress == nil && n > MaxSilentSeconds {
		return MaxSilentSeconds, fmt.Sprintf("timeout_seconds %d was shortened to %d: the call carried no progressToken, and a call silent longer than that is given up by most clients; send a progressToken to wait up to %d s with progress notifications", n, MaxSilentSeconds, MaxWaitSeconds)
	}
	return n, ""
}

// waitPage waits until f has something past from, or the feed ends, or
// seconds pass, sending progress for c every ProgressEvery if it carries a
// token. It returns the page read last.
func waitPage[T any](a *Agent, c *call, f *feed[T], from int64, seconds int, what string) (page[T], error) {
	start := a.clk.Now()
	timer := a.clk.NewTimer(time.Duration(seconds) * time.Second)
	defer timer.Stop()
	var tick clock.Timer // the next progress notification, with a token
	if c.progress != nil && seconds > 0 {
		tick = a.clk.NewTimer(ProgressEvery)
		defer func() { tick.Stop() }()
	}
	for first := true; ; first = false {
		p := f.readFrom(from)
		if len(p.items) > 0 || p.missed > 0 || p.closed || seconds == 0 {
			return p, nil
		}
		if first && a.hooks.waiting != nil {
			a.hooks.waiting(what)
		}
		select {
		case <-p.changed:
		case <-timer.C():
			return f.readFrom(from), nil
		case now := <-timerC(tick):
			tick = a.clk.NewTimer(ProgressEvery)
			waited := now.Sub(start).Seconds()
			if err := c.session.NotifyProgress(c.ctx, &mcp.ProgressNotificationParams{ProgressToken: c.progress,
				Progress: waited, Total: float64(seconds), Message: fmt.Sprintf("waiting for %s: %.0f of %d s", what, waited, seconds)}); err != nil &&
				!errors.Is(err, context.Canceled) {
				a.log.Debug("progress not sent", "err", err)
			}
		case <-c.ctx.Done():
			return page[T]{}, c.ctx.Err()
		}
	}
}

// timerC is t's channel, nil (never ready) for no timer.
func timerC(t clock.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
