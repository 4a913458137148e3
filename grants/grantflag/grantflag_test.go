package grantflag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/venuehq/venue/grants"
)

// Scope flags left out stay absent; a bad value is refused naming its
// flag; amounts are read exactly.
func TestScopeBuild(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error: then the max amount in cents
	}{
		{[]string{"--max-amount", "3500.25"}, ""},
		{[]string{"--max-amount", "3500.255"}, `--max-amount "3500.255"`},
		{[]string{"--budget", "-1"}, `--budget "-1"`},
		{[]string{"--max-sends", "5000"}, "scope flags:"},
	} {
		var s Scope
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		s.Register(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		sc, err := s.Build(f)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
			}
			continue
		}
		if err != nil || sc.Amount == nil || *sc.Amount.MaxCents != 350025 || sc.Amount.MinCents != nil || sc.BudgetCents != nil || sc.MaxSends != nil {
			t.Errorf("%v: scope %+v, err %v", tc.args, sc, err)
		}
	}
}

// A denial carries no grant: a scope flag on it is refused; a key file
// that cannot be read is named; a grant needs its agent and a TTL of a
// second at least.
func TestSignRefusals(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "p.pem")
	if err := os.WriteFile(key, grants.MarshalPrivateKeyPEM(priv), 0o600); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"--key " + key + " --category x": "--category: scope flags apply only to approve",
		"--key /nonexistent":             "read principal key",
	} {
		var d Decision
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		d.Register(f)
		if err := f.Parse(append(strings.Fields(args), "--escalation", "neg_1.e3")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.Sign(f, grants.DecisionDeny, now, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("deny %s: %v, want %q", args, err, want)
		}
	}
	var g Grant
	gf := pflag.NewFlagSet("g", pflag.ContinueOnError)
	g.Register(gf)
	if err := gf.Parse([]string{"--ttl", "500ms", "--agent", "agt_1"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Sign(gf, now); err == nil || !strings.Contains(err.Error(), "--ttl 500ms") {
		t.Fatalf("short ttl: %v", err)
	}
	g.Agent = ""
	if _, _, err := g.Sign(gf, now); err == nil || !strings.Contains(err.Error(), "--agent is required") {
		t.Fatalf("no agent: %v", err)
	}
}

// A key file is written 0600; it is never overwritten without force, and
// with force it is replaced whole.
func TestWriteKeyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k.pem")
	if err := WriteKeyFile(p, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(p, []byte("two"), false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second write without force: %v", err)
	}
	if err := WriteKeyFile(p, []byte("three"), true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(b) != "three" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %q, mode %v, %v", b, fi.Mode(), err)
	}
	if err := WriteKeyFile(filepath.Dir(p), []byte("x"), true); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("a directory: %v", err)
	}
}
