package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/review"
)

// TestAuditReportHTMLNeverWritesOverALog: the page is renamed over its
// path, so --html refuses a path that is not a .html name (a glob of the
// logs, audit.log*, hands the live log's name to --html), a log given by
// its own name, a symlink or a hard link, and an existing file that is not
// an earlier page; each leaves the file as it was. An earlier page is
// replaced.
func TestAuditReportHTMLNeverWritesOverALog(t *testing.T) {
	t.Parallel()
	logPath, keyPath := reportTrail(t, audit.Record{Principal: "alice", Tool: "list_workflows"})
	dir := t.TempDir()
	logBytes, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	rotated := logPath + ".20261201T090030.000000000Z"
	trail := filepath.Join(dir, "trail.html") // a log whose name ends in .html
	notes := filepath.Join(dir, "notes.html")
	for _, f := range []string{rotated, trail} {
		if err := os.WriteFile(f, logBytes, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(notes, []byte("<!DOCTYPE html>\n<p>a reviewer's own notes</p>\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink, hardlink := filepath.Join(dir, "symlink.html"), filepath.Join(dir, "hardlink.html")
	if err := os.Symlink(trail, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(trail, hardlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.html"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, out string
		logs      []string
		want      string
	}{
		{"the live log, first name of a glob", logPath, []string{rotated}, "must end in .html"},
		{"a log, by its own name", trail, []string{trail}, "is the log " + trail + " itself"},
		{"a symlink to a log", symlink, []string{trail}, "is the log " + trail + " itself"},
		{"a hard link of a log", hardlink, []string{trail}, "is the log " + trail + " itself"},
		{"a log given by a symlink", trail, []string{symlink}, "is the log " + symlink + " itself"},
		{"a file that is not a page", notes, []string{logPath}, "is not a page porthole audit report wrote"},
		{"a folder", dir + "/folder.html", []string{logPath}, "is a folder"},
		{"a folder that is not there", filepath.Join(dir, "gone", "page.html"), []string{logPath}, "is not there to write the page into"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(c.out)
			args := append([]string{"--key-file", keyPath, "--html", c.out}, c.logs...)
			_, errOut, code := auditReport(t, baseEnv(), args...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, %s; want it refused: %q", code, errOut, c.want)
			}
			if after, _ := os.ReadFile(c.out); !bytes.Equal(before, after) {
				t.Errorf("%s was changed", c.out)
			}
		})
	}
	if after, _ := os.ReadFile(logPath); !bytes.Equal(after, logBytes) {
		t.Fatalf("the live log was changed")
	}
	page := filepath.Join(dir, "report.html")
	for range 2 {
		if stdout, errOut, code := auditReport(t, baseEnv(), "--key-file", keyPath, "--html", page, logPath); code != 0 {
			t.Fatalf("writing a page, then over it: exit %d, %s%s", code, stdout, errOut)
		}
	}
	if b, _ := os.ReadFile(page); !bytes.HasPrefix(b, []byte(review.PageStart)) {
		t.Fatalf("the page does not begin with review.PageStart")
	}
}
