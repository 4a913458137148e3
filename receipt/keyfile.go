package receipt

import (
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
	if k, err := load(path); !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k, err := NewKey()
	if err != nil {
		return Key{}, err
	}
	switch err := createFile(path, k.PEM()); {
	case errors.Is(err, fs.ErrExist): // another process created it first
		return load(path)
	case err != nil:
		return Key{}, fmt.Errorf("receipt: create key file %s: %w", path, err)
	}
	return k, nil
}

func load(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("receipt: read key file %s: %w", path, err)
	}
	k, err := ParseKey(b)
	if err != nil {
		return Key{}, fmt.Errorf("receipt: key file %s: %w", path, err)
	}
	return k, nil
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
