package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

type benchAgents map[string]store.Agent

func (a benchAgents) Agent(_ context.Context, id string) (store.Agent, error) {
	if ag, ok := a[id]; ok {
		return ag, nil
	}
	return store.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
}

// benchSend measures one SEND (a transaction: expiry sweep, agreement
// lookup, two limit counts, insert, event, audit) from b.N senders' worth of
// distinct agreements, so the hourly budget never stops it.
func benchSend(b *testing.B, st handshake.Store) {
	dir := benchAgents{"target": {ID: "target", Name: "T"}}
	var n atomic.Int64
	svc := &handshake.Service{Store: st, Agents: dir, NewID: func(p string) string { return fmt.Sprintf("%s_%d", p, n.Add(1)) }}
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const senders = 64
	for i := range senders {
		id := fmt.Sprintf("s%02d", i)
		dir[id] = store.Agent{ID: id, Name: id}
	}
	for i := range senders {
		id := fmt.Sprintf("s%02d", i)
		r, err := svc.Contact(ctx, id, handshake.ContactInput{To: "target", Purpose: "bench"}, now)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.Accept(ctx, handshake.AgentActor("target"), r.ID, handshake.AcceptInput{}, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// 120 an hour per sender per agreement: move the clock a minute per round.
		at := now.Add(time.Duration(i/senders) * time.Minute)
		if _, err := svc.Send(ctx, fmt.Sprintf("s%02d", i%senders), handshake.SendInput{To: "target", Text: "hello"}, at); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendPostgres(b *testing.B) {
	benchSend(b, newBenchStore(b))
}

func BenchmarkSendMemory(b *testing.B) { benchSend(b, memory.New()) }
