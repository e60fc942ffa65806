package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// latest is what a witness keeps of one log: the latest checkpoint it
// cosigned, with its cosignature, which every later one must extend.
type latest struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Root   []byte `json:"root"`
	// Checkpoint is the checkpoint as cosigned: the log's note with the
	// witness's cosignature appended.
	Checkpoint string `json:"checkpoint"`
}

// refusal is a checkpoint the log's key signed that the witness refused
// (a shrink or a fork): evidence of the log's misbehaviour, kept.
type refusal struct {
	Time       time.Time `json:"time"`
	Why        string    `json:"why"`
	Old        int64     `json:"old"`
	Checkpoint string    `json:"checkpoint"`
}

// store keeps each log's latest cosigned checkpoint in a file of its own
// in dir, written and synced (the file, then the directory) before a
// cosignature leaves, and its refusals appended to a file beside it.
type store struct{ dir string }

func (s store) path(origin, ext string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+ext)
}

// read is the latest cosigned checkpoint of origin, or nil.
func (s store) read(origin string) (*latest, error) {
	b, err := os.ReadFile(s.path(origin, ".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l latest
	if err := json.Unmarshal(b, &l); err != nil || l.Origin != origin {
		return nil, fmt.Errorf("the witness's state of %s is unreadable: %v", origin, err)
	}
	return &l, nil
}

// write replaces origin's latest checkpoint: a new file, synced, renamed
// over the old one, and the directory synced, so that a crash leaves the
// old state or the new, and a cosignature returned is never lost.
func (s store) write(l latest) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	final := s.path(l.Origin, ".json")
	tmp := final + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// maxRefusedBytes bounds a log's refusals file: evidence of a fork is
// one checkpoint; a log that forks over and over shows it in the first.
const maxRefusedBytes = 1 << 20

// remember appends a refusal to origin's refusals, synced, while the
// file is under maxRefusedBytes.
func (s store) remember(origin string, r refusal) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.path(origin, ".refused"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() >= maxRefusedBytes {
		f.Close()
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
