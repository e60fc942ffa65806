package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit/review"
)

// checkHTMLOut refuses a page's path that could stand for something else
// than a page. Security: the page is renamed over its path, and a
// reviewer's `--html audit.log*` hands the live log's name to --html (the
// glob's first name), so the live log would be replaced by the page, and,
// on a running gateway, unlinked while porthole appends to it, losing every
// later record. So the path must end in .html, must not
// be any log given (by name, symlink or hard link), and may name an
// existing file only when it is an earlier page.
func checkHTMLOut(out string, logs []string) error {
	if !strings.HasSuffix(out, ".html") {
		return fmt.Errorf("%w: --html %s: the page's file name must end in .html, so that a shell glob of the logs (--html audit.log*) can never name a log as the page", errUsage, out)
	}
	// The folder the page goes to, before the report runs (minutes over a
	// big trail) rather than after.
	if dst, err := os.Stat(filepath.Dir(out)); err != nil || !dst.IsDir() {
		return fmt.Errorf("%w: --html %s: the folder %s is not there to write the page into", errUsage, out, filepath.Dir(out))
	}
	st, err := os.Stat(out)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--html %s: %w", out, err)
	}
	for _, l := range logs {
		if lst, err := os.Stat(l); err == nil && os.SameFile(st, lst) {
			return fmt.Errorf("%w: --html %s is the log %s itself: porthole does not write a page over a log", errUsage, out, l)
		}
	}
	if st.IsDir() {
		return fmt.Errorf("%w: --html %s is a folder: name the page's file", errUsage, out)
	}
	if !st.Mode().IsRegular() || !isReportPage(out) {
		return fmt.Errorf("%w: --html %s exists and is not a page porthole audit report wrote: porthole replaces only an earlier page; remove it or name another file", errUsage, out)
	}
	return nil
}

// isReportPage reports whether the file at path begins as every page does.
func isReportPage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(review.PageStart))
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	return bytes.Equal(b, []byte(review.PageStart))
}

// writeHTMLReport writes the summary's page to path, mode 0600: the page
// holds personal data, as the audit log does. It is written beside path,
// synced, and renamed over it, so no reader sees half a page, nor, after a
// crash, an empty one. checkHTMLOut has said path may be written.
func writeHTMLReport(path string, sum *review.Summary, files []string, evidence []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".porthole-report-*.html") // mode 0600
	if err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	in := review.PageInputs{LogFiles: files, Evidence: evidence, Generated: time.Now(), Version: Version()}
	// Buffered: the template writes each piece on its own (a page of
	// 10,000 rows was some 230,000 writes to the file).
	w := bufio.NewWriterSize(tmp, 64<<10)
	if err := sum.WriteHTML(w, in); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}
