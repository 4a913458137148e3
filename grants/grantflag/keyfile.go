package grantflag

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteKeyFile writes a principal's private key (data, the PEM `venue
// keygen` makes) to path with mode 0600. Without force it fails if path
// exists (checked atomically by the create); with force it replaces path
// by renaming a complete temporary file over it, so a crash never leaves a
// half-written key and an old file's looser mode is not inherited.
func WriteKeyFile(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("keygen: %s already exists; not overwriting it (use --force to replace it)", path)
		}
		if err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			_ = os.Remove(path)
			return fmt.Errorf("keygen: write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("keygen: write %s: %w", path, err)
		}
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("keygen: %s is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".venue-key-*") // mode 0600
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keygen: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keygen: write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	return nil
}
