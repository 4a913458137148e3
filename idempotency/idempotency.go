// Package idempotency keeps the answers of REST requests sent with an
// Idempotency-Key (PROTOCOL.md "Without a socket"): per agent and key, the
// request's fingerprint and, once answered, its status and body, for
// Retention. A retry with the same key and body gets the first answer
// again; with another body it is a conflict; while the first is still
// being answered it is in flight.
package idempotency

import (
	"context"
	"sync"
	"time"
)

// Retention is how long a key is kept.
const Retention = 24 * time.Hour

// Answer is a stored answer.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// State is what Begin found.
type State int

// The states Begin reports.
const (
	New      State = iota // the key was free: it is now taken, in flight; answer, then Finish (or Release)
	Replay                // the same request was answered: the Answer
	Conflict              // the key was used with another request
	InFlight              // the same key is still being answered
)

// Store keeps keys across the nodes of a venue. Safe for concurrent use.
type Store interface {
	// Begin takes key of agentID for a request of fingerprint at now.
	Begin(ctx context.Context, agentID, key, fingerprint string, now time.Time) (State, Answer, error)
	// Finish stores the answer of a key Begin returned New for.
	Finish(ctx context.Context, agentID, key string, a Answer) error
	// Release frees a key Begin returned New for, unanswered (the request
	// failed in the venue: a retry runs it afresh).
	Release(ctx context.Context, agentID, key string) error
}

// Memory is a Store in memory (one node).
type Memory struct {
	mu sync.Mutex
	m  map[string]*memKey
}

type memKey struct {
	fp   string
	at   time.Time
	done bool
	a    Answer
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string]*memKey{}} }

// Begin implements Store.
func (s *Memory) Begin(_ context.Context, agentID, key, fp string, now time.Time) (State, Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := agentID + "\x00" + key
	e := s.m[k]
	if e == nil || now.Sub(e.at) >= Retention {
		s.m[k] = &memKey{fp: fp, at: now}
		return New, Answer{}, nil
	}
	return state(e.fp == fp, e.done), e.a, nil
}

func state(sameFP, done bool) State {
	switch {
	case !sameFP:
		return Conflict
	case done:
		return Replay
	}
	return InFlight
}

// Finish implements Store.
func (s *Memory) Finish(_ context.Context, agentID, key string, a Answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[agentID+"\x00"+key]; e != nil {
		e.done, e.a = true, a
	}
	return nil
}

// Release implements Store.
func (s *Memory) Release(_ context.Context, agentID, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, agentID+"\x00"+key)
	return nil
}
