package redact

import (
	"bytes"
	"io"
	"sync"
)

// LineWriter redacts each write as one JSON document (or plain text, when it
// is not JSON) before passing it on. The stdio transport and the operations
// log write one message or entry per call, ended by a newline, so each write
// is redacted whole.
//
// Writes are serialized: the operations log's zap core and the SDK's slog
// handler share one LineWriter, and their lines must not interleave.
type LineWriter struct {
	mu sync.Mutex
	w  io.Writer
	r  *Redactor
}

// NewLineWriter wraps w.
func NewLineWriter(w io.Writer, r *Redactor) *LineWriter { return &LineWriter{w: w, r: r} }

// Write redacts p and writes it. It reports len(p) on success, as callers
// expect of a writer whose output may differ in length from its input.
func (lw *LineWriter) Write(p []byte) (int, error) {
	body := bytes.TrimRight(p, "\n")
	out, n := lw.r.JSON(body)
	if n > 0 {
		out = append(bytes.Clone(out), p[len(body):]...)
	} else {
		out = p
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if _, err := lw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the underlying writer when it can be closed.
func (lw *LineWriter) Close() error {
	if c, ok := lw.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Sync flushes the underlying writer when it can be synced, so a LineWriter
// can stand in for a zap WriteSyncer.
func (lw *LineWriter) Sync() error {
	if s, ok := lw.w.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}
