package upstream

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseRoster: a roster is either refused with an error naming what is
// wrong, or accepted with every entry in shape, and pinning it keeps it a
// roster porthole reads, naming the same tools.
func FuzzParseRoster(f *testing.F) {
	for _, seed := range []string{
		"upstreams:\n  - name: a\n    url: https://x/mcp\n    tools:\n      - name: t\n",
		"upstreams:\n  - name: b\n    transport: stdio\n    command: s\n    env: [A]\n    tools:\n      - name: t\n        sha256: " + pin64 + "\n",
		"upstreams:\n  - name: c\n    transport: sse\n    urlEnv: U\n    tokenFile: /t\n    structuredContent: true\n    cost: 3\n    timeout: 2s\n    tools: [{name: x}, {name: y}]\n",
		"upstreams: []\n", "", "---\n---\n", "upstreams:\n  - {name: d, url: 'http://[::1]:1/m', tokenEnv: T, tools: [{name: z}]}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRoster([]byte(text))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a sentence")
			}
			return
		}
		names := map[string]bool{}
		for _, e := range r.Upstreams {
			if !nameRE.MatchString(e.Name) || names[e.Name] || strings.Contains(e.Name, Separator) {
				t.Fatalf("accepted entry name %q", e.Name)
			}
			names[e.Name] = true
			if e.Transport != TransportStdio && e.Transport != TransportSSE && e.Transport != TransportStreamable {
				t.Fatalf("accepted transport %q", e.Transport)
			}
			if e.Cost < 1 || e.Cost > MaxCost || e.Timeout <= 0 || e.ListTTL < 1e9 || e.MaxResultBytes < 1024 || len(e.Tools) == 0 {
				t.Fatalf("accepted entry out of bounds: %+v", e)
			}
		}
		set := &Set{byName: map[string]*Upstream{}}
		for _, e := range r.Upstreams {
			set.byName[e.Name] = &Upstream{Entry: e}
		}
		for _, served := range r.ServedNames() {
			u, tool, ok := set.Lookup(served)
			if !ok || len(served) > maxToolNameLen || ServedName(u.Entry.Name, tool) != served {
				t.Fatalf("served name %q does not lead back to its upstream and tool", served)
			}
		}
		digests := map[string]map[string]string{}
		for _, e := range r.Upstreams {
			digests[e.Name] = map[string]string{}
			for _, p := range e.Tools {
				digests[e.Name][p.Name] = strings.Repeat("b", 64)
			}
		}
		out, _, err := WritePins([]byte(text), digests)
		if err != nil {
			t.Fatalf("pinning an accepted roster: %v", err)
		}
		again, err := ParseRoster(out)
		if err != nil {
			t.Fatalf("the pinned roster is refused: %v\n%s", err, out)
		}
		if !slices.Equal(again.ServedNames(), r.ServedNames()) {
			t.Fatalf("pinning changed the tools: %v -> %v", r.ServedNames(), again.ServedNames())
		}
	})
}
