package receipt

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadOrCreate returns the venue key kept in the PKCS#8 PEM file at path,
// creating the file (mode 0600, its directory 0700 if missing) with a fresh
// key if there is none. Creation is atomic: the key is written to a temporary
// file and hard-linked into place, so a concurrent starter either wins or
// loads the winner's key; a partial file is never visible. This is the only
// file I/O of the package.
func LoadOrCreate(path string) (Key, error) {
	keys, err := LoadOrCreateKeys(path, nil)
	if err != nil {
		return Key{}, err
	}
	return keys[0], nil
}

// LoadOrCreateKeys is LoadOrCreate for a key file that may hold several
// keys, one PEM block each: the first signs, the others are retired keys
// kept for the JWKS (see [RotateFile]). Sealed blocks need s (see [Open]);
// a key created here is sealed when s is not nil.
func LoadOrCreateKeys(path string, s *Sealer) ([]Key, error) {
	if keys, err := loadKeys(path, s); !errors.Is(err, fs.ErrNotExist) {
		return keys, err
	}
	k, err := NewKey()
	if err != nil {
		return nil, err
	}
	sealed, err := s.Seal(k)
	if err != nil {
		return nil, err
	}
	switch err := createFile(path, sealed); {
	case errors.Is(err, fs.ErrExist): // another process created it first
		return loadKeys(path, s)
	case err != nil:
		return nil, fmt.Errorf("receipt: create key file %s: %w", path, err)
	}
	return []Key{k}, nil
}

// RotateFile puts a fresh key first in the key file at path (created if
// missing), keeping the keys it held after it as retired ones, and returns
// the new key. The file is replaced atomically (a temporary file renamed
// over it); a running venue picks the new key up within 10 minutes.
func RotateFile(path string, s *Sealer) (Key, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Key{}, fmt.Errorf("receipt: read key file %s: %w", path, err)
	}
	if len(old) > 0 {
		if _, err := parseKeys(old, s); err != nil {
			return Key{}, fmt.Errorf("receipt: key file %s: %w", path, err)
		}
	}
	k, err := NewKey()
	if err != nil {
		return Key{}, err
	}
	sealed, err := s.Seal(k)
	if err != nil {
		return Key{}, err
	}
	if err := replaceFile(path, append(sealed, old...)); err != nil {
		return Key{}, fmt.Errorf("receipt: rotate key file %s: %w", path, err)
	}
	return k, nil
}

func loadKeys(path string, s *Sealer) ([]Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("receipt: read key file %s: %w", path, err)
	}
	keys, err := parseKeys(b, s)
	if err != nil {
		return nil, fmt.Errorf("receipt: key file %s: %w", path, err)
	}
	return keys, nil
}

// parseKeys reads every PEM block of b as a key (see [Open]); at least one.
func parseKeys(b []byte, s *Sealer) ([]Key, error) {
	var keys []Key
	rest := bytes.TrimSpace(b)
	for len(rest) > 0 {
		block, next := pem.Decode(rest)
		if block == nil {
			return nil, errors.New("not a sequence of PEM blocks")
		}
		k, err := Open(pem.EncodeToMemory(block), s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		rest = bytes.TrimSpace(next)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no PEM block", errNoKey)
	}
	return keys, nil
}

var errNoKey = errors.New("receipt: no key")

// replaceFile writes data to a temporary file (0600) beside path and renames
// it over path.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".venue-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// createFile writes data to a new file at path, failing with fs.ErrExist if
// path exists.
func createFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".venue-key-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// No hard links on this file system: fall back to an exclusive create.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
