package keyring

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store/memory"
)

func kids(t *testing.T, jwks []byte) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.KID)
	}
	return out
}

// ringRotates loads a ring, rotates where it keeps its keys, and checks
// that Reload picks the new key up and keeps the old one in the JWKS.
func ringRotates(t *testing.T, r *Ring, rotate func() (receipt.Key, error)) {
	t.Helper()
	ctx := context.Background()
	var seen []*receipt.Cache
	r.OnChange = func(c *receipt.Cache) { seen = append(seen, c) }
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first := r.Signer().Key().KID
	if got := kids(t, r.JWKS()); len(got) != 1 || got[0] != first || len(seen) != 1 {
		t.Fatalf("after Load: jwks %v, OnChange %d", got, len(seen))
	}
	if rotated, err := r.Reload(ctx); err != nil || rotated {
		t.Fatalf("Reload without a rotation: %v %v", rotated, err)
	}
	k, err := rotate()
	if err != nil {
		t.Fatal(err)
	}
	if rotated, err := r.Reload(ctx); err != nil || !rotated {
		t.Fatalf("Reload after a rotation: %v %v", rotated, err)
	}
	if got := kids(t, r.JWKS()); len(got) != 2 || got[0] != k.KID || got[1] != first {
		t.Fatalf("jwks after rotation %v, want [%s %s]", got, k.KID, first)
	}
	if r.Signer().Key().KID != k.KID || len(seen) != 2 || seen[1] != r.Signer() {
		t.Fatalf("signer %s, OnChange %d", r.Signer().Key().KID, len(seen))
	}
}

func TestRingFile(t *testing.T) {
	t.Parallel()
	sealer, err := receipt.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys", "venue.pem")
	ringRotates(t, &Ring{File: path, Sealer: sealer}, func() (receipt.Key, error) {
		k, _, err := Rotate(context.Background(), path, nil, sealer, time.Now())
		return k, err
	})
	// A ring with the wrong key-encryption key cannot open the file.
	other, _ := receipt.NewSealer(bytes.Repeat([]byte{8}, 32))
	if err := (&Ring{File: path, Sealer: other}).Load(context.Background()); err == nil {
		t.Fatal("Load with the wrong sealer succeeded")
	}
}

func TestRingStore(t *testing.T) {
	t.Parallel()
	st := memory.New()
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	ringRotates(t, &Ring{Store: st}, func() (receipt.Key, error) {
		k, retired, err := Rotate(context.Background(), "", st, nil, at)
		if err == nil && retired != 1 {
			t.Errorf("retired %d, want 1", retired)
		}
		return k, err
	})
	// A store sealed with another key-encryption key refuses the rotation
	// and keeps what it had.
	sealed := memory.New()
	s1, _ := receipt.NewSealer(bytes.Repeat([]byte{1}, 32))
	s2, _ := receipt.NewSealer(bytes.Repeat([]byte{2}, 32))
	if err := (&Ring{Store: sealed, Sealer: s1}).Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Rotate(context.Background(), "", sealed, s2, at); err == nil {
		t.Fatal("Rotate with the wrong sealer succeeded")
	}
	if keys, _ := sealed.VenueKeys(context.Background()); len(keys) != 1 {
		t.Fatalf("a refused rotation left %d keys", len(keys))
	}
	if err := (&Ring{}).Load(context.Background()); err == nil {
		t.Fatal("a ring with neither file nor store loaded")
	}
}
