package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// frames avoid exponents, escapes and trailing zeros, so that no one-byte
// change of them is JSON with the same canonical form.
var frames = []string{
	`{"type":"message","from":"ag_b","content":"hello there","at":"2026-11-30T08:19:22.134Z"}`,
	`{"type":"propose_terms","from":"ag_b","terms":{"amount_usd":3200,"sends":2,"category":"primary_slot"},"ttl_seconds":60}`,
	`{"type":"counter_terms","from":"ag_c","terms":{"amount_usd":3450.5,"sends":2,"flag":true,"note":null}}`,
	`{"type":"accept","from":"ag_b","offer_hash":"sha256:ab","list":[1,2,3]}`,
}

// chain builds a valid transcript of frames and the claims that commit to it.
func chain(t *testing.T, frames []string) ([]Entry, *Claims) {
	t.Helper()
	var es []Entry
	prev := ""
	for i, f := range frames {
		h, err := ChainHash(prev, json.RawMessage(f))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, Entry{Seq: int64(i + 1), Frame: json.RawMessage(f), Hash: h})
		prev = h
	}
	return es, &Claims{LastSeq: int64(len(frames)), HeadHash: prev}
}

func TestChainHash(t *testing.T) {
	t.Parallel()
	want := func(prev, canon string) string {
		s := sha256.Sum256([]byte(prev + canon))
		return "sha256:" + hex.EncodeToString(s[:])
	}
	tests := []struct {
		prev, frame, canon string
	}{
		{"", `{"b":2, "a":1.0}`, `{"a":1,"b":2}`},
		{"", `{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{"sha256:00", ` { "amount_usd" : 3200.00 , "sends":2 } `, `{"amount_usd":3200,"sends":2}`},
		{"sha256:01", `{"amount_usd":3.2e3}`, `{"amount_usd":3200}`},
		{"x", `"\u00e9"`, `"é"`},
	}
	for _, tt := range tests {
		got, err := ChainHash(tt.prev, json.RawMessage(tt.frame))
		if err != nil || got != want(tt.prev, tt.canon) {
			t.Errorf("ChainHash(%q, %s) = %s, %v; want hash of %s", tt.prev, tt.frame, got, err, tt.canon)
		}
	}
	a, _ := ChainHash("", json.RawMessage(`{"a":1}`))
	b, _ := ChainHash("sha256:x", json.RawMessage(`{"a":1}`))
	if a == b {
		t.Error("prev must change the hash")
	}
	for _, bad := range []string{``, `{`, `{"a":1}x`, `{"a":NaN}`} {
		if _, err := ChainHash("", json.RawMessage(bad)); err == nil {
			t.Errorf("ChainHash(%q) accepted", bad)
		}
	}
}

func TestVerifyTranscript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mod     func(es []Entry, c *Claims) []Entry
		wantSeq int64 // 0 = valid
	}{
		{name: "valid", mod: func(es []Entry, c *Claims) []Entry { return es }},
		{name: "valid with reformatted frames", mod: func(es []Entry, c *Claims) []Entry {
			es[1].Frame = json.RawMessage(`{ "ttl_seconds":60.0, "terms":{"sends":2,"category":"primary_slot","amount_usd":3200.00},"from":"ag_b","type":"propose_terms"}`)
			return es
		}},
		{name: "empty transcript, empty receipt", mod: func(es []Entry, c *Claims) []Entry { *c = Claims{}; return nil }},
		{name: "frame changed", mod: func(es []Entry, c *Claims) []Entry {
			es[2].Frame = json.RawMessage(`{"type":"counter_terms","from":"ag_c","terms":{"amount_usd":3450.6,"sends":2,"flag":true,"note":null}}`)
			return es
		}, wantSeq: 3},
		{name: "frame and its hash changed", mod: func(es []Entry, c *Claims) []Entry {
			es[1].Frame = json.RawMessage(`{"type":"message"}`)
			es[1].Hash, _ = ChainHash(es[0].Hash, es[1].Frame)
			return es
		}, wantSeq: 3},
		{name: "hash upper case", mod: func(es []Entry, c *Claims) []Entry {
			es[0].Hash = "SHA256:" + es[0].Hash[7:]
			return es
		}, wantSeq: 1},
		{name: "starts at 0", mod: func(es []Entry, c *Claims) []Entry { es[0].Seq = 0; return es }, wantSeq: 1},
		{name: "gap", mod: func(es []Entry, c *Claims) []Entry { return append(es[:2], es[3:]...) }, wantSeq: 3},
		{name: "duplicate", mod: func(es []Entry, c *Claims) []Entry { return append(es[:2], es[1:]...) }, wantSeq: 3},
		{name: "swapped", mod: func(es []Entry, c *Claims) []Entry { es[1], es[2] = es[2], es[1]; return es }, wantSeq: 2},
		{name: "tail missing", mod: func(es []Entry, c *Claims) []Entry { return es[:2] }, wantSeq: 3},
		{name: "all missing", mod: func(es []Entry, c *Claims) []Entry { return nil }, wantSeq: 1},
		{name: "beyond last seq", mod: func(es []Entry, c *Claims) []Entry { c.LastSeq = 3; return es }, wantSeq: 4},
		{name: "head hash differs", mod: func(es []Entry, c *Claims) []Entry { c.HeadHash = es[2].Hash; return es }, wantSeq: 4},
		{name: "frame not JSON", mod: func(es []Entry, c *Claims) []Entry { es[1].Frame = json.RawMessage(`{`); return es }, wantSeq: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			es, c := chain(t, frames)
			es = tt.mod(es, c)
			err := VerifyTranscript(c, es)
			if tt.wantSeq == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var te *TranscriptError
			if !errors.As(err, &te) || te.Seq != tt.wantSeq || !errors.Is(err, ErrTranscript) {
				t.Fatalf("err = %v, want a TranscriptError at seq %d", err, tt.wantSeq)
			}
		})
	}
}

// TestVerifyTranscriptOneByte changes every byte of every frame in turn; each
// change must be caught at that frame's seq.
func TestVerifyTranscriptOneByte(t *testing.T) {
	t.Parallel()
	for fi, f := range frames {
		for pos := range len(f) {
			t.Run(fmt.Sprintf("seq%d/byte%d", fi+1, pos), func(t *testing.T) {
				t.Parallel()
				es, c := chain(t, frames)
				b := []byte(f)
				b[pos] ^= 0x01
				es[fi].Frame = b
				var te *TranscriptError
				if err := VerifyTranscript(c, es); !errors.As(err, &te) || te.Seq != int64(fi+1) {
					t.Fatalf("frame %s: err = %v, want a failure at seq %d", b, err, fi+1)
				}
			})
		}
	}
}
