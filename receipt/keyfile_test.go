package receipt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadOrCreate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "dir", "venue.pem")
	k1, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	k2, err := LoadOrCreate(path)
	if err != nil || !k2.Private.Equal(k1.Private) || k2.KID != k1.KID {
		t.Fatalf("second LoadOrCreate = %v, %v; want the same key", k2.KID, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".venue-key-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestLoadOrCreateConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "venue.pem")
	const n = 8
	kids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			kids[i] = k.KID
		})
	}
	wg.Wait()
	for _, kid := range kids {
		if kid != kids[0] {
			t.Fatalf("starters disagree on the key: %v", kids)
		}
	}
}

func TestLoadOrCreateBadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "venue.pem")
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(path); err == nil {
		t.Fatal("a corrupt key file must be an error, never overwritten")
	}
	if b, _ := os.ReadFile(path); string(b) != "not a key" {
		t.Fatal("the corrupt key file was changed")
	}
	if _, err := LoadOrCreate(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a directory as key file: %v", err)
	}
}
