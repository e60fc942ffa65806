package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// A principal not named has no tool at all. "*" grants every tool, the
// tools of upstream MCP servers (PORTHOLE_ROSTER_FILE) included; an upstream
// tool is granted by the name porthole serves it under, e.g.
// "github__list_issues". Unknown fields and unknown tool names are refused
// when the file is read, so a typo cannot grant less, or more, than the
// operator meant.
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
	all   map[string]bool // principals granted "*"
}

// ParseFile checks a policy file's content. extra names the tools porthole
// serves beyond its own (upstream tools), which the file may grant.
func ParseFile(b []byte, extra ...string) (*File, error) {
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
	if err := CheckCustomAttributes(f.QueryAttributes); err != nil {
		return nil, fmt.Errorf("the policy file's queryAttributes: %w", err)
	}
	for name, g := range f.Principals {
		for _, t := range g.Tools {
			if t != "*" && !slices.Contains(Tools, t) && !slices.Contains(extra, t) {
				return nil, fmt.Errorf("the policy file grants %q the tool %q, which porthole does not have", name, t)
			}
		}
	}
	return &f, nil
}

// Grants returns the file's grants.
func (f *File) Grants() *Grants {
	g := &Grants{tools: map[string]map[string]bool{}, all: map[string]bool{}}
	for name, grant := range f.Principals {
		set := map[string]bool{}
		for _, t := range grant.Tools {
			if t == "*" {
				g.all[name] = true
				continue
			}
			set[t] = true
		}
		g.tools[name] = set
	}
	return g
}

// Allows reports whether principal may call tool. It answers for grants
// only: whether porthole serves a tool of that name is the gateway's to
// check, since upstream tools come and go.
func (g *Grants) Allows(principal, tool string) bool {
	if g == nil {
		return true
	}
	return g.all[principal] || g.tools[principal][tool]
}
