package witness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ParseToken takes a bare token or the receipt endpoint's body, and names
// what is wrong with anything else.
func TestParseToken(t *testing.T) {
	for in, want := range map[string]string{
		" a.b.c\n":                          "a.b.c",
		`{"receipt":"a.b.c"}`:               "a.b.c",
		`{"receipt":"x","receipt":"a.b.c"}`: "error: stdin is JSON but not",
		`{"token":"a.b.c"}`:                 "error: stdin is JSON but not",
		"  \n":                              "error: no receipt on stdin",
	} {
		got, err := ParseToken([]byte(in))
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("ParseToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// A checkpoint file without the key on its first line is refused before
// anything is fetched; a file not made yet with no --log-key pins the
// venue's key on first use, and a venue without one fails.
func TestPinResolve(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fetched := 0
	w := &Witness{Out: &strings.Builder{}, Fetch: func(context.Context, string) ([]byte, error) {
		fetched++
		return []byte(`{"name":"venue"}`), nil
	}}
	if _, _, err := w.resolve(context.Background(), Pin{CheckpointFile: bad}); err == nil || !strings.Contains(err.Error(), "want the log key on the first line") || fetched != 0 {
		t.Fatalf("bad file: err %v, fetched %d", err, fetched)
	}
	if _, ok, err := w.resolve(context.Background(), Pin{}); ok || err != nil {
		t.Fatalf("nothing pinned: ok %v err %v", ok, err)
	}
	_, _, err := w.resolve(context.Background(), Pin{CheckpointFile: filepath.Join(dir, "new")})
	if err == nil || !strings.Contains(err.Error(), "no log_verifier_key") {
		t.Fatalf("first use against a venue without a log key: %v", err)
	}
	if err := w.Inclusion(context.Background(), Pin{}, "", nil); err != nil || !strings.Contains(w.Out.(*strings.Builder).String(), "log: not checked") {
		t.Fatalf("inclusion without a pin: %v", err)
	}
	if err := w.Log(context.Background(), Pin{}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("log without a pin: %v", err)
	}
}
