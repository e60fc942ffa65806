package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// evidence names what a report was verified with, a line each, for the
// header of its page: the files of the keys with their ids (which the
// records name), the checkpoint files, and where verification began.
func (v *verifyFlags) evidence() []string {
	var lines []string
	keyFiles, fromEnv := v.keyFiles, false
	if env := os.Getenv("PORTHOLE_AUDIT_KEY_FILE"); len(keyFiles) == 0 && env != "" {
		keyFiles, fromEnv = fileList{env}, true
	}
	for _, f := range keyFiles {
		line := "HMAC key file " + f
		if fromEnv {
			line += " ($PORTHOLE_AUDIT_KEY_FILE)"
		}
		if k, err := readAuditKey(f); err == nil {
			line += " (key id " + audit.KeyID(k) + ")"
		}
		lines = append(lines, line)
	}
	for _, f := range v.publicKeys {
		line := "checkpoint signing public key file " + f
		if b, err := os.ReadFile(f); err == nil {
			if p, err := audit.ParsePublicKey(b); err == nil {
				line += " (key id " + audit.SigningKeyID(p) + ")"
			}
		}
		lines = append(lines, line)
	}
	for _, f := range v.checkpointFiles {
		lines = append(lines, "witnessed checkpoints file "+f)
	}
	if v.from != "" {
		lines = append(lines, "verified from the record of the checkpoint of seq "+v.from+" (--from-checkpoint); records before it are not counted")
	}
	return lines
}

// writeHTMLReport writes the summary's page to path, mode 0600: the page
// holds personal data, as the audit log does. It is written beside path
// and renamed over it, so no reader sees half a page.
func writeHTMLReport(path string, sum *audit.Summary, files []string, evidence []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".porthole-report-*.html") // mode 0600
	if err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	in := audit.PageInputs{LogFiles: files, Evidence: evidence, Generated: time.Now(), Version: Version()}
	if err := sum.WriteHTML(tmp, in); err != nil {
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
