package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal/read"
)

// readPolicyFile reads and checks the policy file at path as serve would:
// the upstream tools of the roster at rosterPath (if any) may be granted.
func readPolicyFile(path, rosterPath string) (*policy.File, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: name the policy file with --policy-file or PORTHOLE_POLICY_FILE", errUsage)
	}
	var extra []string
	if rosterPath != "" {
		r, err := upstream.LoadRoster(rosterPath)
		if err != nil {
			return nil, err
		}
		extra = r.ServedNames()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return policy.ParseFile(b, extra...)
}

// runPolicy is `porthole policy check`: the policy file read as serve
// reads it, and what each caller matched by grants of different
// disclosure profiles gets.
func runPolicy(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return fmt.Errorf("%w: porthole policy check --policy-file FILE", errUsage)
	}
	var path, roster string
	s := newSettings("policy check", "Check the policy file as serve reads it, and say what a caller matched by grants of different disclosure profiles gets.", stderr)
	s.string(&path, "policy-file", "PORTHOLE_POLICY_FILE", "", "the policy file")
	s.string(&roster, "roster-file", "PORTHOLE_ROSTER_FILE", "", "the roster of upstream MCP servers, whose tools the policy file may grant")
	if err := s.parse(args[1:]); err != nil {
		return err
	}
	f, err := readPolicyFile(path, roster)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "OK: %s is a valid policy file.\n", path)
	for _, name := range slices.Sorted(maps.Keys(f.Profiles)) {
		fmt.Fprintf(stdout, "profile %q: %s\n", name, f.Profile(name).Describe())
	}
	for _, m := range f.Merges() {
		fmt.Fprintf(stdout, "merge: %s\n", m)
	}
	return nil
}

// runDisclosure is `porthole disclosure`: every field of every tool's
// result, with its class, as a caller with the profile named sees it:
// kept or withheld.
func runDisclosure(args []string, stdout, stderr io.Writer) error {
	var path, roster, profile string
	s := newSettings("disclosure", "Print every field porthole's tools can answer with, its class, and whether a caller with the profile named sees it.", stderr)
	s.string(&path, "policy-file", "PORTHOLE_POLICY_FILE", "", "the policy file that defines the profile")
	s.string(&roster, "roster-file", "PORTHOLE_ROSTER_FILE", "", "the roster of upstream MCP servers, whose tools the policy file may grant")
	s.string(&profile, "profile", "PORTHOLE_DISCLOSURE_PROFILE", "", "the profile's name; none for the default, which keeps everything")
	if err := s.parse(args); err != nil {
		return err
	}
	d := &policy.Disclosure{}
	if profile != "" {
		f, err := readPolicyFile(path, roster)
		if err != nil {
			return err
		}
		if d = f.Profile(profile); d == nil {
			return fmt.Errorf("%w: the policy file defines no profile %q", errUsage, profile)
		}
	}
	fmt.Fprintf(stdout, "%s.\n", strings.ToUpper(d.Describe()[:1])+d.Describe()[1:])
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	for _, tr := range gateway.ResultTypes() {
		fields, err := read.Fields(tr.Type)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s\n", tr.Name)
		for _, f := range fields {
			seen := "kept"
			switch {
			case d.Withhold.Has(f.Class):
				seen = "withheld"
			case d.Pseudonymise.Has(f.Class):
				seen = "pseudonymised"
			}
			class := string(f.Class)
			if class == "" {
				class = "-"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", seen, f.Path, f.Kind, class)
		}
	}
	seen := "kept"
	if d.Withhold.Has(read.ClassUpstreamText) {
		seen = "withheld (the upstream is not called)"
	}
	fmt.Fprintf(w, "\nupstream tools (PORTHOLE_ROSTER_FILE)\n  %s\tthe whole answer\tquoted text\t%s\n", seen, read.ClassUpstreamText)
	return w.Flush()
}
