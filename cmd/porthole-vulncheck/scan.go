package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The members of govulncheck's JSON output (protocol v1.0.0) the gate
// reads: a stream of messages, each with one of config, osv and finding
// set (progress and SBOM messages are passed over).
type message struct {
	Config  *scanConfig `json:"config"`
	OSV     *osvEntry   `json:"osv"`
	Finding *finding    `json:"finding"`
}

type scanConfig struct {
	ProtocolVersion string     `json:"protocol_version"`
	ScannerVersion  string     `json:"scanner_version"`
	DB              string     `json:"db"`
	DBLastModified  *time.Time `json:"db_last_modified"`
	GoVersion       string     `json:"go_version"`
	ScanLevel       string     `json:"scan_level"`
}

type osvEntry struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases"`
	Summary string   `json:"summary"`
}

type finding struct {
	OSV          string   `json:"osv"`
	FixedVersion string   `json:"fixed_version"`
	Trace        []*frame `json:"trace"`
}

// A frame of a trace: trace[0] is the vulnerable symbol (or, for a finding
// at package or module level, only its package or module), the last frame
// the module's own code that leads there.
type frame struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Package  string    `json:"package"`
	Function string    `json:"function"`
	Receiver string    `json:"receiver"`
	Position *position `json:"position"`
}

type position struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

// Scan is what one govulncheck run found.
type Scan struct {
	Config scanConfig
	// DBEntries is how many vulnerabilities the database holds.
	DBEntries int
	// Entries are the OSV entries govulncheck read, by id.
	Entries map[string]*osvEntry
	// Called holds, for each vulnerability the module calls, its first
	// symbol-level finding; Order lists them as govulncheck found them.
	Called map[string]*finding
	Order  []string
	// Uncalled are the vulnerabilities found only at package or module
	// level.
	Uncalled map[string]bool
}

// readScan reads govulncheck's message stream. A stream with no config
// message, or of another protocol version, is refused: the gate would
// otherwise pass on output it does not understand.
func readScan(r io.Reader) (*Scan, error) {
	s := &Scan{Entries: map[string]*osvEntry{}, Called: map[string]*finding{}, Uncalled: map[string]bool{}}
	dec := json.NewDecoder(r)
	seenConfig := false
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		switch {
		case m.Config != nil:
			if !strings.HasPrefix(m.Config.ProtocolVersion, "v1.") {
				return nil, fmt.Errorf("govulncheck speaks protocol %q; the gate reads v1", m.Config.ProtocolVersion)
			}
			s.Config, seenConfig = *m.Config, true
		case m.OSV != nil:
			s.Entries[m.OSV.ID] = m.OSV
		case m.Finding != nil:
			s.add(m.Finding)
		}
	}
	if !seenConfig {
		return nil, errors.New("govulncheck wrote no config message")
	}
	for id := range s.Called {
		delete(s.Uncalled, id)
	}
	return s, nil
}

func (s *Scan) add(f *finding) {
	if len(f.Trace) == 0 || f.OSV == "" {
		return
	}
	if f.Trace[0].Function == "" {
		s.Uncalled[f.OSV] = true
		return
	}
	if _, ok := s.Called[f.OSV]; !ok {
		s.Called[f.OSV] = f
		s.Order = append(s.Order, f.OSV)
	}
}

// symbol names a frame's function as govulncheck's text output does:
// package.Receiver.Function, with the package's last element only.
func (f *frame) symbol() string {
	pkg := f.Package[strings.LastIndex(f.Package, "/")+1:]
	name := f.Function
	if f.Receiver != "" {
		name = strings.TrimPrefix(f.Receiver, "*") + "." + name
	}
	if pkg == "" {
		return name
	}
	return pkg + "." + name
}

// where says where a frame's call stands, or nothing when govulncheck gave
// no position.
func (f *frame) where() string {
	if f.Position == nil || f.Position.Filename == "" {
		return ""
	}
	return fmt.Sprintf(" (%s:%d:%d)", f.Position.Filename, f.Position.Line, f.Position.Column)
}
