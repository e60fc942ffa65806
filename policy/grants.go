package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// File is the policy file (PORTHOLE_POLICY_FILE): which tools each principal
// may call, and which custom search attributes queries may name.
//
//	{
//	  "principals": {
//	    "ci-agent": {"tools": ["list_workflows", "describe_workflow"]},
//	    "oncall":   {"tools": ["*"]}
//	  },
//	  "queryAttributes": ["CustomerTier"]
//	}
//
// A principal not named has no tool at all. "*" grants every tool. Unknown
// fields and unknown tool names are refused when the file is read, so a
// typo cannot grant less, or more, than the operator meant.
type File struct {
	Principals      map[string]Grant `json:"principals"`
	QueryAttributes []string         `json:"queryAttributes"`
}

// Grant is what one principal may call.
type Grant struct {
	Tools []string `json:"tools"`
}

// Grants answers whether a principal may call a tool. A nil *Grants grants
// every tool to every principal: that is porthole without a policy file.
type Grants struct {
	tools map[string]map[string]bool
}

// LoadFile reads and checks a policy file.
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the policy file: %w", err)
	}
	return ParseFile(b)
}

// ParseFile checks a policy file's content.
func ParseFile(b []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("the policy file is not valid: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the policy file holds more than one JSON object")
	}
	if f.Principals == nil {
		return nil, fmt.Errorf(`the policy file names no principals: add "principals": {"name": {"tools": [...]}}`)
	}
	for name, g := range f.Principals {
		for _, t := range g.Tools {
			if t != "*" && !slices.Contains(Tools, t) {
				return nil, fmt.Errorf("the policy file grants %q the tool %q, which porthole does not have", name, t)
			}
		}
	}
	return &f, nil
}

// Grants returns the file's grants.
func (f *File) Grants() *Grants {
	g := &Grants{tools: map[string]map[string]bool{}}
	for name, grant := range f.Principals {
		set := map[string]bool{}
		for _, t := range grant.Tools {
			if t == "*" {
				for _, all := range Tools {
					set[all] = true
				}
				continue
			}
			set[t] = true
		}
		g.tools[name] = set
	}
	return g
}

// Allows reports whether principal may call tool. Unknown tools are never
// allowed.
func (g *Grants) Allows(principal, tool string) bool {
	if !slices.Contains(Tools, tool) {
		return false
	}
	if g == nil {
		return true
	}
	return g.tools[principal][tool]
}
