package serve

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	gossh "golang.org/x/crypto/ssh"
)

// DefaultHostKey is where the room's host key is kept unless -hostkey says: the user's config
// folder (~/.config/lockstep on Linux), so every room the trainer runs has the same key and the
// learners' ssh does not warn that it changed.
func DefaultHostKey() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no folder for the host key (%v): name one with -hostkey FILE", err)
	}
	return filepath.Join(dir, "lockstep", "serve_host_ed25519"), nil
}

// HostKey reads the private host key in file, or makes an Ed25519 key there if there is no file
// (its folder, if missing, made 0700; the key 0600; nothing else is written or changed), and
// says whether it made it. Hazard: a key others can read is refused (as OpenSSH refuses one),
// not quietly used, and an existing file that is no key is never overwritten.
func HostKey(file string) (pemBytes []byte, made bool, err error) {
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b, err = makeHostKey(file)
		return b, err == nil, err
	case err != nil:
		return nil, false, err
	}
	if _, err := gossh.ParsePrivateKey(b); err != nil {
		return nil, false, fmt.Errorf("%s is not an SSH private key (%v): name another with -hostkey", file, err)
	}
	if runtime.GOOS != "windows" {
		if st, err := os.Stat(file); err == nil && st.Mode().Perm()&0o077 != 0 {
			return nil, false, fmt.Errorf("the host key %s can be read by others (%04o): chmod 600 %s", file, st.Mode().Perm(), file)
		}
	}
	return b, false, nil
}

// makeHostKey writes a new Ed25519 key to file, which must not exist.
func makeHostKey(file string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	blk, err := gossh.MarshalPrivateKey(priv, "lockstep lab serve")
	if err != nil {
		return nil, err
	}
	b := pem.EncodeToMemory(blk)
	if dir := filepath.Dir(file); dir != "" {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
		}
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(file)
		return nil, err
	}
	return b, nil
}
