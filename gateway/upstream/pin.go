package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// Digest is the SHA-256, in hex, of what a model reads of a tool and what
// it may send: its name, title, description, input schema and output
// schema, as canonical JSON (object keys sorted). A description rewritten
// into an instruction after review changes it.
func Digest(t *mcp.Tool) (string, error) {
	def := struct {
		Name         string `json:"name"`
		Title        string `json:"title,omitempty"`
		Description  string `json:"description,omitempty"`
		InputSchema  any    `json:"inputSchema,omitempty"`
		OutputSchema any    `json:"outputSchema,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema}
	// Round-trip the schemas through a generic value so that key order is
	// canonical whatever type carried them.
	b, err := json.Marshal(def)
	if err != nil {
		return "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if b, err = json.Marshal(generic); err != nil {
		return "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Candidate is an offered tool an entry names, as `porthole roster pin`
// would pin it.
type Candidate struct {
	Tool   *mcp.Tool
	Digest string
	// Withheld says why the tool would stay withheld once pinned; ""
	// when pinning it exposes it.
	Withheld string
}

// Candidates are the offered tools the entry names, each with its digest,
// and the names of the entry's tools the upstream does not offer.
func (e *Entry) Candidates(offered []*mcp.Tool) (candidates []Candidate, missing []string, err error) {
	byName := map[string]*mcp.Tool{}
	for _, t := range offered {
		if t != nil {
			byName[t.Name] = t
		}
	}
	for _, p := range e.Tools {
		t, ok := byName[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		d, err := Digest(t)
		if err != nil {
			return nil, nil, err
		}
		candidates = append(candidates, Candidate{Tool: t, Digest: d, Withheld: unexposable(t)})
	}
	return candidates, missing, nil
}

// PinChange is one digest `porthole roster pin` wrote.
type PinChange struct {
	Upstream, Tool string
	Old, New       string
}

// WritePins writes digests into a roster's text: digests[upstream][tool] becomes
// the sha256 of that tool's entry. Tools without a digest are left as they
// are. The rest of the file, comments included, is kept.
func WritePins(roster []byte, digests map[string]map[string]string) ([]byte, []PinChange, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(roster, &doc); err != nil {
		return nil, nil, fmt.Errorf("the roster file is not valid: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil, fmt.Errorf("the roster file is not one YAML document")
	}
	ups := mapValue(doc.Content[0], "upstreams")
	if ups == nil || ups.Kind != yaml.SequenceNode {
		return nil, nil, fmt.Errorf("the roster file has no upstreams list")
	}
	var changes []PinChange
	for _, entry := range ups.Content {
		name := mapValue(entry, "name")
		tools := mapValue(entry, "tools")
		if name == nil || tools == nil || tools.Kind != yaml.SequenceNode {
			continue
		}
		for _, tool := range tools.Content {
			if c, ok := pinTool(tool, name.Value, digests[name.Value]); ok {
				changes = append(changes, c)
			}
		}
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), changes, nil
}

// pinTool writes, into one tool's node of upstream's entry, its digest
// from digests, and reports the change, if any.
func pinTool(tool *yaml.Node, upstream string, digests map[string]string) (PinChange, bool) {
	tn := mapValue(tool, "name")
	if tn == nil {
		return PinChange{}, false
	}
	digest, ok := digests[tn.Value]
	if !ok {
		return PinChange{}, false
	}
	old := mapValue(tool, "sha256")
	switch {
	case old == nil:
		tool.Content = append(tool.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "sha256"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: digest})
		return PinChange{Upstream: upstream, Tool: tn.Value, New: digest}, true
	case old.Value != digest:
		c := PinChange{Upstream: upstream, Tool: tn.Value, Old: old.Value, New: digest}
		old.Value, old.Tag, old.Style = digest, "!!str", 0
		return c, true
	}
	return PinChange{}, false
}

// mapValue is the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
