// Package logtest is the contract of receiptlog.Store: one suite every
// implementation passes (receiptlog.Memory, pglog), run through
// receiptlog.Log as the venue's nodes run it.
package logtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/store"
)

// Backend is one venue's store and receipt log (sharing the database).
type Backend struct {
	Store store.Store
	Log   receiptlog.Store
}

// Run runs the contract. newBackend returns an empty store and log for one
// test; nodes > 1 calls of node(i) return Logs of other nodes over the same
// backend (Postgres: own pools).
func Run(t *testing.T, newBackend func(t *testing.T) (b Backend, node func() receiptlog.Store)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend, node func() receiptlog.Store)
	}{
		{"GaplessFromSeveralNodes", testGapless},
		{"ProofsVerify", testProofs},
		{"TamperAndForkCaught", testTamper},
		{"RotateKey", testRotate},
		{"OutlivesNegotiation", testOutlives},
		{"BadRequests", testBadRequests},
		{"OneOrigin", testOneOrigin},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, node := newBackend(t)
			tc.fn(t, b, node)
		})
	}
}

// T0 is the fixtures' clock.
var T0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

const origin = "venue.test/log"

// venueKey is the receipt key every node of the tests signs with.
var venueKey = func() receipt.Key {
	k, err := receipt.NewKey()
	if err != nil {
		panic(err)
	}
	return k
}()

func newLog(t *testing.T, st receiptlog.Store) *receiptlog.Log {
	t.Helper()
	cache := receipt.NewCache(venueKey, 0)
	l, err := receiptlog.New(t.Context(), receiptlog.Config{Store: st, Origin: origin, Receipt: cache.Receipt})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fixture makes ended negotiations.
type fixture struct {
	b       Backend
	brand   store.Agent
	bouncer store.Agent
	mu      sync.Mutex
	n       int
}

func newFixture(t *testing.T, b Backend) *fixture {
	t.Helper()
	f := &fixture{b: b}
	f.brand = f.agent(t, negotiation.RoleBrand)
	f.bouncer = f.agent(t, negotiation.RoleBouncer)
	return f
}

func (f *fixture) id(p string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return fmt.Sprintf("%s_%05d", p, f.n)
}

func (f *fixture) agent(t *testing.T, role string) store.Agent {
	t.Helper()
	id := f.id("agt")
	a := store.Agent{ID: id, Name: id, Role: role, KeyHash: "hash-" + id, CreatedAt: T0}
	if err := f.b.Store.CreateAgent(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// ended creates a negotiation and ends it (turn_missed) at T0 + i ms, then
// queues it as the venue's commit hook does.
func (f *fixture) ended(ctx context.Context, i int) (string, error) {
	o := store.Offer{ID: f.id("off"), Brand: f.brand.ID, Bouncer: f.bouncer.ID, Body: json.RawMessage(`{"title":"t"}`), CreatedAt: T0}
	if err := f.b.Store.CreateOffer(ctx, o); err != nil {
		return "", err
	}
	st := negotiation.NewRequest(f.id("neg"), o.ID, o.Body, f.brand.Party(), f.bouncer.Party(), false, T0)
	if err := f.b.Store.CreateNegotiation(ctx, st); err != nil {
		return "", err
	}
	if _, _, err := f.b.Store.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Start(T0)
	}); err != nil {
		return "", err
	}
	after, _, err := f.b.Store.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Tick(T0.Add(time.Hour + time.Duration(i)*time.Millisecond)), nil
	})
	if err != nil {
		return "", err
	}
	if !receipt.Signs(&after) {
		return "", fmt.Errorf("negotiation %s is %s after the tick, want an ending", after.ID, after.Status)
	}
	return st.ID, f.b.Log.Enqueue(ctx, st.ID)
}

// drain sequences until the queue is empty.
func drain(t *testing.T, l *receiptlog.Log) {
	t.Helper()
	for {
		n, err := l.Sequence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// checkpoint opens the latest checkpoint with note.Open under the log's
// current verifier key.
func checkpoint(t *testing.T, l *receiptlog.Log) receiptlog.Checkpoint {
	t.Helper()
	msg, _, err := l.Checkpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := l.VerifierKeys()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open: %v\n%s", err, msg)
	}
	cp, err := receiptlog.ParseCheckpoint(n.Text)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Origin != origin {
		t.Fatalf("origin %q, want %q", cp.Origin, origin)
	}
	return cp
}

func allEntries(t *testing.T, l *receiptlog.Log, size int64) []receiptlog.Entry {
	t.Helper()
	var out []receiptlog.Entry
	for start := int64(0); start < size; start += receiptlog.MaxEntries {
		es, err := l.Entries(t.Context(), start, min(size, start+receiptlog.MaxEntries))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
	}
	return out
}

// A thousand endings committed by four writers while four nodes append:
// one log, indexes 0..999 without gap or repeat, every ending once.
func testGapless(t *testing.T, b Backend, node func() receiptlog.Store) {
	const total, writers, nodes = 1000, 4, 4
	f := newFixture(t, b)
	logs := make([]*receiptlog.Log, nodes)
	for i := range logs {
		logs[i] = newLog(t, node())
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, l := range logs {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := l.Sequence(ctx); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	ids := make(chan string, total)
	var wgw sync.WaitGroup
	for w := range writers {
		wgw.Go(func() {
			for i := w; i < total; i += writers {
				id, err := f.ended(t.Context(), i)
				if err != nil {
					t.Error(err)
					return
				}
				ids <- id
			}
		})
	}
	wgw.Wait()
	close(ids)
	cancel()
	wg.Wait()
	drain(t, logs[0])
	want := map[string]bool{}
	for id := range ids {
		want[id] = true
	}
	cp := checkpoint(t, logs[1])
	if cp.Size != total {
		t.Fatalf("checkpoint size %d, want %d", cp.Size, total)
	}
	es := allEntries(t, logs[2], cp.Size)
	receipts := make([]string, len(es))
	for i, e := range es {
		if e.Index != int64(i) {
			t.Fatalf("entry %d has index %d", i, e.Index)
		}
		c, err := receipt.Verify(e.Receipt, receipt.JWKS(venueKey))
		if err != nil {
			t.Fatal(err)
		}
		if !want[c.NegotiationID] {
			t.Fatalf("entry %d: negotiation %s logged twice or never ended", i, c.NegotiationID)
		}
		delete(want, c.NegotiationID)
		receipts[i] = e.Receipt
	}
	if len(want) != 0 {
		t.Fatalf("%d endings not logged", len(want))
	}
	if err := receiptlog.VerifyRoot(receipts, cp); err != nil {
		t.Fatal(err)
	}
}

// Inclusion proofs of every entry under several sizes and consistency
// proofs between every pair of checkpoints verify with merkle's verifier.
func testProofs(t *testing.T, b Backend, node func() receiptlog.Store) {
	f := newFixture(t, b)
	l := newLog(t, b.Log)
	other := newLog(t, node())
	var cps []receiptlog.Checkpoint
	var ids []string
	for round := range 5 {
		for i := range round*3 + 1 {
			id, err := f.ended(t.Context(), round*100+i)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		drain(t, l)
		cps = append(cps, checkpoint(t, other))
	}
	last := cps[len(cps)-1]
	es := allEntries(t, other, last.Size)
	for _, cp := range cps {
		for _, id := range ids {
			idx, size, hashes, err := other.InclusionProof(t.Context(), id, cp.Size)
			if err != nil {
				if errors.Is(err, receiptlog.ErrBadRequest) {
					continue // logged after cp
				}
				t.Fatal(err)
			}
			p := receiptlog.InclusionProof{LeafIndex: idx, TreeSize: size, Hashes: hashes}
			if err := receiptlog.VerifyInclusion(es[idx].Receipt, p, cp); err != nil {
				t.Fatalf("%s in %d: %v", id, cp.Size, err)
			}
			if err := receiptlog.VerifyInclusion(es[idx].Receipt+"x", p, cp); err == nil {
				t.Fatal("a changed receipt verified")
			}
		}
		for _, newer := range cps {
			if newer.Size < cp.Size {
				continue
			}
			var hashes [][]byte
			if newer.Size > cp.Size {
				h, err := other.ConsistencyProof(t.Context(), cp.Size, newer.Size)
				if err != nil {
					t.Fatal(err)
				}
				hashes = h
			}
			if err := receiptlog.VerifyConsistency(cp, newer, hashes); err != nil {
				t.Fatalf("%d to %d: %v", cp.Size, newer.Size, err)
			}
		}
	}
	// The default tree size is the latest checkpoint's.
	idx, size, _, err := l.InclusionProof(t.Context(), ids[0], 0)
	if err != nil || idx != 0 || size != last.Size {
		t.Fatalf("default proof: %d %d %v", idx, size, err)
	}
}

// A changed entry, a dropped one and a forked checkpoint are caught.
func testTamper(t *testing.T, b Backend, _ func() receiptlog.Store) {
	f := newFixture(t, b)
	l := newLog(t, b.Log)
	for i := range 7 {
		if _, err := f.ended(t.Context(), i); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, l)
	cp := checkpoint(t, l)
	es := allEntries(t, l, cp.Size)
	receipts := make([]string, len(es))
	for i, e := range es {
		receipts[i] = e.Receipt
	}
	if err := receiptlog.VerifyRoot(receipts, cp); err != nil {
		t.Fatal(err)
	}
	changed := append([]string(nil), receipts...)
	// Always a different entry: a fixed suffix would leave one that
	// already ends in it unchanged (a test that passed by luck).
	tail := "AA"
	if strings.HasSuffix(changed[3], tail) {
		tail = "BB"
	}
	changed[3] = changed[3][:len(changed[3])-2] + tail
	if changed[3] == receipts[3] {
		t.Fatal("the tampered entry equals the original")
	}
	if err := receiptlog.VerifyRoot(changed, cp); !errors.Is(err, receiptlog.ErrProof) {
		t.Fatalf("changed entry: %v", err)
	}
	if err := receiptlog.VerifyRoot(append(receipts[:2:2], receipts[3:]...), cp); !errors.Is(err, receiptlog.ErrProof) {
		t.Fatalf("dropped entry: %v", err)
	}
	swapped := append([]string(nil), receipts...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if err := receiptlog.VerifyRoot(swapped, cp); !errors.Is(err, receiptlog.ErrProof) {
		t.Fatalf("reordered entries: %v", err)
	}
	// A fork: the same size with another root, and a bigger tree that does
	// not extend the first.
	fork := receiptlog.Checkpoint{Origin: cp.Origin, Size: cp.Size, Root: receiptlog.RootOf(changed)}
	if err := receiptlog.VerifyConsistency(cp, fork, nil); !errors.Is(err, receiptlog.ErrProof) {
		t.Fatalf("same-size fork: %v", err)
	}
	bigger := append(append([]string(nil), changed...), "x.y.z")
	forkBig := receiptlog.Checkpoint{Origin: cp.Origin, Size: int64(len(bigger)), Root: receiptlog.RootOf(bigger)}
	var tr receiptlog.Tree
	for _, r := range bigger {
		tr.Append(r)
	}
	hashes, err := tr.ConsistencyProof(cp.Size, forkBig.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := receiptlog.VerifyConsistency(cp, forkBig, hashes); !errors.Is(err, receiptlog.ErrProof) {
		t.Fatalf("bigger fork: %v", err)
	}
}

// Rotation: the next checkpoint is signed by the new key; the old one is
// listed with the size it signed up to and no longer verifies new ones.
func testRotate(t *testing.T, b Backend, node func() receiptlog.Store) {
	f := newFixture(t, b)
	l := newLog(t, b.Log)
	for i := range 3 {
		if _, err := f.ended(t.Context(), i); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, l)
	oldKey, _ := l.VerifierKeys()
	if _, err := receiptlog.Rotate(t.Context(), node(), nil, T0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sequence(t.Context()); err != nil {
		t.Fatal(err)
	}
	cur, retired := l.VerifierKeys()
	if cur == oldKey || len(retired) != 1 || retired[0].Key != oldKey || retired[0].TreeSize != 3 {
		t.Fatalf("after rotation: current %q, retired %+v (old %q)", cur, retired, oldKey)
	}
	msg, size, err := l.Checkpoint(t.Context())
	if err != nil || size != 3 {
		t.Fatalf("checkpoint of %d, %v", size, err)
	}
	if _, err := receiptlog.OpenCheckpoint(msg, cur); err != nil {
		t.Fatalf("new key: %v", err)
	}
	if _, err := receiptlog.OpenCheckpoint(msg, oldKey); !errors.Is(err, receiptlog.ErrCheckpoint) {
		t.Fatalf("old key opened the new checkpoint: %v", err)
	}
	// Another node sees the same keys.
	cur2, _ := newLog(t, node()).VerifierKeys()
	if cur2 != cur {
		t.Fatalf("another node's key %q, want %q", cur2, cur)
	}
}

// An entry stays when its negotiation is gone (the arena purge), and a
// queued negotiation that is gone is dropped from the queue.
func testOutlives(t *testing.T, b Backend, _ func() receiptlog.Store) {
	f := newFixture(t, b)
	l := newLog(t, b.Log)
	id, err := f.ended(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, l)
	if err := b.Log.Enqueue(t.Context(), "neg_gone", id); err != nil {
		t.Fatal(err)
	}
	drain(t, l)
	i, tok, err := l.Index(t.Context(), id)
	if err != nil || i != 0 || tok == "" {
		t.Fatalf("index %d %q %v", i, tok, err)
	}
	if _, _, err := l.Index(t.Context(), "neg_gone"); !errors.Is(err, receiptlog.ErrNotFound) {
		t.Fatalf("gone negotiation: %v", err)
	}
	if cp := checkpoint(t, l); cp.Size != 1 {
		t.Fatalf("size %d after a re-queue, want 1", cp.Size)
	}
}

func testBadRequests(t *testing.T, b Backend, _ func() receiptlog.Store) {
	f := newFixture(t, b)
	l := newLog(t, b.Log)
	id, err := f.ended(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.InclusionProof(t.Context(), id, 0); !errors.Is(err, receiptlog.ErrNotFound) {
		t.Fatalf("before sequencing: %v", err)
	}
	drain(t, l)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"size past the checkpoint", func() error { _, _, _, err := l.InclusionProof(t.Context(), id, 2); return err }()},
		{"negative size", func() error { _, _, _, err := l.InclusionProof(t.Context(), id, -1); return err }()},
		{"first > second", func() error { _, err := l.ConsistencyProof(t.Context(), 2, 1); return err }()},
		{"second past", func() error { _, err := l.ConsistencyProof(t.Context(), 1, 5); return err }()},
		{"entries backwards", func() error { _, err := l.Entries(t.Context(), 3, 1); return err }()},
		{"too many entries", func() error { _, err := l.Entries(t.Context(), 0, receiptlog.MaxEntries+1); return err }()},
	} {
		if !errors.Is(tc.err, receiptlog.ErrBadRequest) {
			t.Errorf("%s: %v, want ErrBadRequest", tc.name, tc.err)
		}
	}
	if _, _, _, err := l.InclusionProof(t.Context(), "neg_none", 0); !errors.Is(err, receiptlog.ErrNotFound) {
		t.Errorf("unknown negotiation: %v", err)
	}
}

// Every node signs under the log's one origin: a node configured with
// another one is refused (*receiptlog.OriginError) unless its origin was
// only a default, which then gives way to the log's own; and a node that
// opened before the first checkpoint under another origin does not sign
// over it.
func testOneOrigin(t *testing.T, b Backend, node func() receiptlog.Store) {
	ctx := t.Context()
	cache := receipt.NewCache(venueKey, 0)
	open := func(st receiptlog.Store, origin string, adopt bool) (*receiptlog.Log, error) {
		return receiptlog.New(ctx, receiptlog.Config{Store: st, Origin: origin, Receipt: cache.Receipt, AdoptOrigin: adopt})
	}
	early, err := open(node(), "other.test/log", false) // before any checkpoint: nothing to compare with
	if err != nil {
		t.Fatal(err)
	}
	l := newLog(t, b.Log)
	if _, err := l.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	signed, _, err := l.Checkpoint(ctx)
	if err != nil || receiptlog.CheckpointOrigin(signed) != origin {
		t.Fatalf("checkpoint %q, %v: want one of %s", signed, err, origin)
	}

	var oe *receiptlog.OriginError
	if _, err := early.Sequence(ctx); !errors.As(err, &oe) || oe.Log != origin || oe.Node != "other.test/log" {
		t.Fatalf("a node of another origin sequenced over the log: %v", err)
	}
	if after, _, _ := l.Checkpoint(ctx); !receiptlog.SameCheckpoint(after, signed) {
		t.Fatalf("the checkpoint changed: %q", after)
	}

	if _, err := open(node(), "other.test/log", false); !errors.As(err, &oe) || oe.Log != origin {
		t.Fatalf("a node named another origin opened the log: %v", err)
	}
	adopted, err := open(node(), "127.0.0.1:8081/log", true)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := adopted.VerifierKeys()
	if adopted.Origin() != origin || receiptlog.KeyName(cur) != origin {
		t.Fatalf("a default origin: the node names the log %q, its key %q; want %s", adopted.Origin(), cur, origin)
	}
	if _, err := adopted.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
}
