package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/upstream"
)

const rosterUsage = `Usage:
  porthole roster check [--roster-file FILE]
      read the roster and say what is wrong with it, entry and field
  porthole roster pin [--roster-file FILE] [--dry-run]
      connect to each upstream, and write into the roster the digest of each
      tool it names, as the upstream defines it now. Prints each definition
      it pins: review what it prints (--dry-run writes nothing), since that,
      and nothing an upstream showed another client, is what gets pinned.
The roster file defaults to $PORTHOLE_ROSTER_FILE.
`

func runRoster(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, rosterUsage)
		return fmt.Errorf("%w: porthole roster check|pin", errUsage)
	}
	switch args[0] {
	case "check", "pin":
	case "-h", "--help", "help":
		fmt.Fprint(stdout, rosterUsage)
		return nil
	default:
		fmt.Fprint(stderr, rosterUsage)
		return fmt.Errorf("%w: unknown roster command %q", errUsage, args[0])
	}
	// The same settings as every other command: an argument that is not a
	// flag is refused rather than ignored, and the timeout is range-checked.
	var (
		path    string
		dryRun  bool
		timeout time.Duration
	)
	s := newSettings("roster "+args[0], "Check the roster of upstream MCP servers, or pin the digests of its tools.", stderr)
	s.string(&path, "roster-file", "PORTHOLE_ROSTER_FILE", "", "the roster file")
	if args[0] == "pin" {
		s.bool(&dryRun, "dry-run", "PORTHOLE_ROSTER_DRY_RUN", "print what would change; write nothing")
		numeric(s, &timeout, "timeout", "PORTHOLE_ROSTER_TIMEOUT", time.Minute, false, "how long to wait for all upstreams")
	}
	if err := s.parse(args[1:]); err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("%w: name the roster with --roster-file or PORTHOLE_ROSTER_FILE", errUsage)
	}
	r, err := upstream.LoadRoster(path)
	if err != nil {
		return err
	}
	if args[0] == "check" {
		for _, e := range r.Upstreams {
			unpinned := 0
			for _, p := range e.Tools {
				if p.SHA256 == "" {
					unpinned++
				}
			}
			fmt.Fprintf(stdout, "%s (%s): %d tools named, %d not pinned\n", e.Name, e.Transport, len(e.Tools), unpinned)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return pinRoster(ctx, path, r, dryRun, stdout)
}

// offeredDigests asks each upstream for the tools it offers and returns
// the digest of each named one, by upstream and tool, and each definition
// by served name; it warns of a named tool withheld or not offered.
func offeredDigests(ctx context.Context, set *upstream.Set, stdout io.Writer) (map[string]map[string]string, map[string]*mcp.Tool, error) {
	digests := map[string]map[string]string{}
	defs := map[string]*mcp.Tool{}
	for _, u := range set.Upstreams() {
		offered, err := u.Offered(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("upstream %q: %w", u.Entry.Name, err)
		}
		candidates, missing, err := u.Entry.Candidates(offered)
		if err != nil {
			return nil, nil, fmt.Errorf("upstream %q: %w", u.Entry.Name, err)
		}
		digests[u.Entry.Name] = map[string]string{}
		for _, c := range candidates {
			digests[u.Entry.Name][c.Tool.Name] = c.Digest
			defs[upstream.ServedName(u.Entry.Name, c.Tool.Name)] = c.Tool
			if c.Withheld != "" {
				fmt.Fprintf(stdout, "warning: %s: %s stays withheld: %s\n", u.Entry.Name, c.Tool.Name, c.Withheld)
			}
		}
		for _, name := range missing {
			fmt.Fprintf(stdout, "warning: %s: the upstream does not offer %s\n", u.Entry.Name, name)
		}
	}
	return digests, defs, nil
}

// printChanges says, for each pin that changes, its old and new digest
// and the definition now pinned.
func printChanges(stdout io.Writer, changes []upstream.PinChange, defs map[string]*mcp.Tool) {
	for _, c := range changes {
		was := c.Old
		if was == "" {
			was = "unpinned"
		}
		fmt.Fprintf(stdout, "%s: %s: %s -> %s\n", c.Upstream, c.Tool, was, c.New)
		printDefinition(stdout, defs[upstream.ServedName(c.Upstream, c.Tool)])
	}
}

// pinRoster reads each upstream's tools and writes the digests of the ones
// the roster names. It warns about what will still be withheld, so that a
// pin is not mistaken for exposure.
func pinRoster(ctx context.Context, path string, r *upstream.Roster, dryRun bool, stdout io.Writer) error {
	if err := r.Resolve(os.LookupEnv); err != nil {
		return err
	}
	set, err := upstream.NewSet(r, upstream.Options{Logger: zap.NewNop(), Version: Version()})
	if err != nil {
		return err
	}
	digests, defs, err := offeredDigests(ctx, set, stdout)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changes, err := upstream.WritePins(old, digests)
	if err != nil {
		return err
	}
	printChanges(stdout, changes, defs)
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "every named tool already has its current digest")
		return nil
	}
	if dryRun {
		return nil
	}
	// The new roster must still be one porthole reads.
	if _, err := upstream.ParseRoster(out); err != nil {
		return fmt.Errorf("the pinned roster would not be valid: %w", err)
	}
	return writeFileLike(path, out)
}

// printDefinition shows what a digest covers, as porthole read it, so that
// what is pinned is what the operator sees here: an upstream can tell a
// review tool from porthole and show each something else. Every string is
// quoted, so a hostile description cannot drive the terminal.
func printDefinition(w io.Writer, t *mcp.Tool) {
	if t == nil {
		return
	}
	schema, _ := json.Marshal(t.InputSchema)
	fmt.Fprintf(w, "    title:        %s\n", strconv.QuoteToASCII(t.Title))
	fmt.Fprintf(w, "    description:  %s\n", strconv.QuoteToASCII(t.Description))
	fmt.Fprintf(w, "    input schema: %s\n", asciiJSON(schema))
	if t.OutputSchema != nil {
		out, _ := json.Marshal(t.OutputSchema)
		fmt.Fprintf(w, "    output schema: %s\n", asciiJSON(out))
	}
}

// asciiJSON writes every non-ASCII character of a JSON text as a \u
// escape (encoding/json already escapes control characters), so that it
// prints as exactly what it is.
func asciiJSON(b []byte) string {
	var out strings.Builder
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			out.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&out, "\\u%04x", r)
		}
	}
	return out.String()
}

// writeFileLike replaces path with b atomically, keeping its mode.
func writeFileLike(path string, b []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".roster-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
