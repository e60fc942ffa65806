package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// verdict is the gate's reading of a scan against the accepted file.
type verdict struct {
	failing  []string // called, and not accepted or accepted no longer
	expired  map[string]Acceptance
	accepted map[string]Acceptance // called, and accepted through today
	stale    []Acceptance          // accepted, and no longer called
}

func judge(s *Scan, accepted []Acceptance, today string) verdict {
	v := verdict{expired: map[string]Acceptance{}, accepted: map[string]Acceptance{}}
	byID := map[string]Acceptance{}
	for _, a := range accepted {
		byID[a.ID] = a
	}
	for _, id := range s.Order {
		a, ok := byID[id]
		switch {
		case !ok:
			v.failing = append(v.failing, id)
		case a.Expires < today:
			v.failing = append(v.failing, id)
			v.expired[id] = a
		default:
			v.accepted[id] = a
		}
	}
	for _, a := range accepted {
		if _, called := s.Called[a.ID]; !called {
			v.stale = append(v.stale, a)
		}
	}
	return v
}

func (v verdict) failed() bool { return len(v.failing) > 0 }

// write says what the scan found: the database and Go it ran with, each
// called vulnerability with its module, fix and a trace from the module's
// own code, the accepted ones with their reasons, and the count of those
// found only in imported packages or required modules.
func (v verdict) write(w io.Writer, s *Scan) {
	db := fmt.Sprintf("%s (%d entries", s.Config.DB, s.DBEntries)
	// A database indexdb builds from a folder of OSV files has no time of
	// its own; its pin is in its path.
	if m := s.Config.DBLastModified; m != nil && !m.IsZero() {
		db += ", modified " + m.UTC().Format(time.DateOnly)
	}
	fmt.Fprintf(w, "porthole-vulncheck: govulncheck %s, %s, database %s)\n", s.Config.ScannerVersion, s.Config.GoVersion, db)
	for _, id := range v.failing {
		v.writeOne(w, s, id)
		if a, ok := v.expired[id]; ok {
			fmt.Fprintf(w, "  its acceptance (accepted.txt line %d) expired after %s: %s\n", a.Line, a.Expires, a.Reason)
		}
	}
	for _, id := range s.Order {
		if a, ok := v.accepted[id]; ok {
			v.writeOne(w, s, id)
			fmt.Fprintf(w, "  accepted through %s (line %d): %s\n", a.Expires, a.Line, a.Reason)
		}
	}
	for _, a := range v.stale {
		fmt.Fprintf(w, "%s is accepted (line %d) but no longer called: remove its entry\n", a.ID, a.Line)
	}
	uncalled := make([]string, 0, len(s.Uncalled))
	for id := range s.Uncalled {
		uncalled = append(uncalled, id)
	}
	slices.Sort(uncalled)
	if len(uncalled) > 0 {
		fmt.Fprintf(w, "not called (in imported packages or required modules only): %s\n", strings.Join(uncalled, ", "))
	}
	switch {
	case v.failed():
		fmt.Fprintf(w, "FAIL: %d called vulnerabilities not accepted: %s\n", len(v.failing), strings.Join(v.failing, ", "))
	default:
		fmt.Fprintf(w, "ok: no called vulnerability (%d accepted)\n", len(v.accepted))
	}
}

func (v verdict) writeOne(w io.Writer, s *Scan, id string) {
	f := s.Called[id]
	title := id
	if e := s.Entries[id]; e != nil {
		if len(e.Aliases) > 0 {
			title += " (" + strings.Join(e.Aliases, ", ") + ")"
		}
		title += ": " + e.Summary
	}
	fmt.Fprintln(w, title)
	vuln := f.Trace[0]
	fixed := "no fixed version"
	if f.FixedVersion != "" {
		fixed = "fixed in " + f.FixedVersion
	}
	fmt.Fprintf(w, "  %s@%s, %s\n", vuln.Module, vuln.Version, fixed)
	entry := f.Trace[len(f.Trace)-1]
	if entry == vuln {
		fmt.Fprintf(w, "  called: %s%s\n", vuln.symbol(), vuln.where())
		return
	}
	fmt.Fprintf(w, "  called: %s calls %s%s\n", entry.symbol(), vuln.symbol(), entry.where())
}
