// Package keyring is the venue's receipt key ring (DELEGATION.md
// "Receipts", SECURITY.md "Deployment"): it loads the Ed25519 receipt keys from a
// key file or from the store (creating the first on first start), reloads
// them to pick up a rotation without a restart, and rotates them (`venue
// rotate-venue-key`). The first key signs; retired ones stay in the JWKS
// so receipts signed before a rotation still verify. Private keys are
// sealed with a receipt.Sealer where they are stored, when one is given.
package keyring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store"
)

// Store keeps the keys when there is no key file (store.Store has it).
type Store interface {
	VenueKey(ctx context.Context, create func() ([]byte, error)) ([]byte, error)
	VenueKeys(ctx context.Context) ([]store.VenueKey, error)
}

// Rotator is a Store that can rotate (store.Store has it).
type Rotator interface {
	Store
	RotateVenueKey(ctx context.Context, key []byte, at time.Time) error
}

// Ring is the receipt keys of a node. File (a PKCS#8 PEM key file, created
// on first Load) takes precedence over Store; Sealer may be nil (keys in
// the clear). OnChange, if set, is given the signer after every Load and
// every Reload that found a new signing key (the hub's SetReceipts).
type Ring struct {
	File     string
	Store    Store
	Sealer   *receipt.Sealer
	OnChange func(*receipt.Cache)

	mu     sync.RWMutex
	signer *receipt.Cache // the signing key's receipt cache
	jwks   []byte         // every key's public half, the signing one first
}

// Load reads the keys (creating the first where none is kept) and makes
// the first one sign. Errors: the key file or store cannot be read, or a
// stored key does not open with Sealer.
func (r *Ring) Load(ctx context.Context) error {
	keys, err := r.read(ctx)
	if err != nil {
		return err
	}
	r.set(keys)
	return nil
}

// Reload reads the keys again and reports whether the signing key changed
// (a rotation by another process); on an error the keys in use stay.
func (r *Ring) Reload(ctx context.Context) (bool, error) {
	keys, err := r.read(ctx)
	if err != nil {
		return false, err
	}
	r.mu.RLock()
	same := r.signer != nil && r.signer.Key().KID == keys[0].KID
	r.mu.RUnlock()
	if same {
		return false, nil
	}
	r.set(keys)
	return true, nil
}

// Signer is the signing key's receipt cache (nil before Load).
func (r *Ring) Signer() *receipt.Cache {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.signer
}

// JWKS is the JSON Web Key Set of every key, the signing one first (nil
// before Load).
func (r *Ring) JWKS() []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.jwks
}

func (r *Ring) set(keys []receipt.Key) {
	cache := receipt.NewCache(keys[0], 0)
	r.mu.Lock()
	r.jwks = receipt.JWKS(keys...)
	r.signer = cache
	r.mu.Unlock()
	if r.OnChange != nil {
		r.OnChange(cache)
	}
}

// read reads the keys, the signing one first.
func (r *Ring) read(ctx context.Context) ([]receipt.Key, error) {
	if r.File != "" {
		keys, err := receipt.LoadOrCreateKeys(r.File, r.Sealer)
		if err != nil {
			return nil, fmt.Errorf("keyring: receipt key %s: %w", r.File, err)
		}
		return keys, nil
	}
	if r.Store == nil {
		return nil, errors.New("keyring: neither a key file nor a store")
	}
	cur, err := r.Store.VenueKey(ctx, func() ([]byte, error) {
		k, err := receipt.NewKey()
		if err != nil {
			return nil, err
		}
		return r.Sealer.Seal(k)
	})
	if err != nil {
		return nil, fmt.Errorf("keyring: receipt key from the store: %w", err)
	}
	k, err := receipt.Open(cur, r.Sealer)
	if err != nil {
		return nil, fmt.Errorf("keyring: receipt key from the store: %w", err)
	}
	all, err := r.Store.VenueKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("keyring: receipt keys from the store: %w", err)
	}
	keys := []receipt.Key{k}
	for _, vk := range all {
		old, err := receipt.Open(vk.Key, r.Sealer)
		if err != nil {
			return nil, fmt.Errorf("keyring: receipt key %d from the store: %w", vk.ID, err)
		}
		if old.KID != k.KID {
			keys = append(keys, old)
		}
	}
	return keys, nil
}

// Rotate makes a fresh key the signing one where the keys are kept: first in
// the key file file when it is not "", else in st at `at`. It returns the new
// key and how many keys were retired before it (the file's count is not
// known: 0). Every stored key must open with sealer before a new one is
// added: a rotation with the wrong key-encryption key would leave keys
// nobody can read. Running nodes pick the new key up at their next Reload.
func Rotate(ctx context.Context, file string, st Rotator, sealer *receipt.Sealer, at time.Time) (receipt.Key, int, error) {
	if file != "" {
		k, err := receipt.RotateFile(file, sealer)
		return k, 0, err
	}
	if st == nil {
		return receipt.Key{}, 0, errors.New("keyring: rotate needs a key file or a store")
	}
	old, err := st.VenueKeys(ctx)
	if err != nil {
		return receipt.Key{}, 0, err
	}
	for _, vk := range old {
		if _, err := receipt.Open(vk.Key, sealer); err != nil {
			return receipt.Key{}, 0, fmt.Errorf("keyring: stored key %d: %w", vk.ID, err)
		}
	}
	k, err := receipt.NewKey()
	if err != nil {
		return receipt.Key{}, 0, err
	}
	sealed, err := sealer.Seal(k)
	if err != nil {
		return receipt.Key{}, 0, err
	}
	if err := st.RotateVenueKey(ctx, sealed, at); err != nil {
		return receipt.Key{}, 0, err
	}
	return k, len(old), nil
}
