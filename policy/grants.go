package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// File is the policy file (PORTHOLE_POLICY_FILE): which tools each principal
// may call, and which custom search attributes queries may name.
//
//	{
//	  "principals": {
//	    "ci-agent": {"tools": ["list_workflows", "describe_workflow"]},
//	    "oncall":   {"tools": ["*"]}
//	  },
//	  "scopes": {"porthole:admin": {"tools": ["*"]}},
//	  "claims": {"groups": {"sre": {"tools": ["describe_workflow"]}}},
//	  "queryAttributes": ["CustomerTier"]
//	}
//
// A grant may name a disclosure profile ("profile", one of "profiles"; see
// Profile) for the callers it matches.
//
// "scopes" and "claims" grant tools to callers with an OAuth access token
// (their principals are "oauth:<issuer alias>:<claim value>", which
// "principals" may name too): by a scope the token was granted, and by a
// value of one of its claims (a string, or an array of strings). A caller
// may call a tool any of these grant it.
//
// A principal not named has no tool at all. "*" grants every tool, the
// tools of upstream MCP servers (PORTHOLE_ROSTER_FILE) included; an upstream
// tool is granted by the name porthole serves it under, e.g.
// "github__list_issues". Unknown fields and unknown tool names are refused
// when the file is read, so a typo cannot grant less, or more, than the
// operator meant.
type File struct {
	Principals      map[string]Grant            `json:"principals"`
	Scopes          map[string]Grant            `json:"scopes"`
	Claims          map[string]map[string]Grant `json:"claims"`
	QueryAttributes []string                    `json:"queryAttributes"`
	Profiles        map[string]Profile          `json:"profiles"`
}

// Grant is what one principal may call, and the disclosure profile its
// answers are made with ("" for the default, which keeps everything).
type Grant struct {
	Tools   []string `json:"tools"`
	Profile string   `json:"profile"`
}

// Grants answers whether a principal may call a tool. A nil *Grants grants
// every tool to every principal: that is porthole without a policy file.
type Grants struct {
	tools map[string]map[string]bool
	all   map[string]bool // principals granted "*"
	// By OAuth scope, and by claim name and value ("groups\x00sre").
	scopes, claims *Grants
	// profiles are the grants' disclosure profiles (on the top-level
	// Grants only).
	profiles *profiles
}

// Caller is who calls, as grants see it: a principal, and, for a caller
// with an OAuth access token, its scopes and claims.
type Caller struct {
	Principal string
	Scopes    []string
	Claims    map[string][]string
}

// eachGrant calls fn with every grant of the file and whom it names, until
// fn fails.
func (f *File) eachGrant(fn func(whom string, g Grant) error) error {
	for _, name := range slices.Sorted(maps.Keys(f.Principals)) {
		if err := fn(fmt.Sprintf("%q", name), f.Principals[name]); err != nil {
			return err
		}
	}
	for _, scope := range slices.Sorted(maps.Keys(f.Scopes)) {
		if err := fn(fmt.Sprintf("the scope %q", scope), f.Scopes[scope]); err != nil {
			return err
		}
	}
	for _, claim := range slices.Sorted(maps.Keys(f.Claims)) {
		values := f.Claims[claim]
		for _, value := range slices.Sorted(maps.Keys(values)) {
			if err := fn(fmt.Sprintf("the claim %s=%q", claim, value), values[value]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTools refuses a grant of a tool porthole does not have (its own,
// or extra), and a claim name holding the separator grants are keyed by.
func (f *File) checkTools(extra []string) error {
	for claim := range f.Claims {
		if strings.ContainsRune(claim, 0) {
			return fmt.Errorf("the policy file's claim name %q holds a NUL", claim)
		}
	}
	return f.eachGrant(func(whom string, g Grant) error {
		for _, t := range g.Tools {
			if t != "*" && !slices.Contains(Tools, t) && !slices.Contains(extra, t) {
				return fmt.Errorf("the policy file grants %s the tool %q, which porthole does not have", whom, t)
			}
		}
		return nil
	})
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
	if f.Principals == nil && f.Scopes == nil && f.Claims == nil {
		return nil, fmt.Errorf(`the policy file grants nothing: add "principals": {"name": {"tools": [...]}}`)
	}
	if err := CheckCustomAttributes(f.QueryAttributes); err != nil {
		return nil, fmt.Errorf("the policy file's queryAttributes: %w", err)
	}
	if err := f.checkTools(extra); err != nil {
		return nil, err
	}
	if err := f.checkProfiles(); err != nil {
		return nil, err
	}
	if err := f.checkPseudonymKeys(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Grants returns the file's grants.
func (f *File) Grants() *Grants {
	g := grantsOf(f.Principals)
	g.scopes = grantsOf(f.Scopes)
	byClaim := map[string]Grant{}
	for claim, values := range f.Claims {
		for value, grant := range values {
			byClaim[claim+"\x00"+value] = grant
		}
	}
	g.claims = grantsOf(byClaim)
	g.profiles = f.grantProfiles()
	return g
}

func grantsOf(m map[string]Grant) *Grants {
	g := &Grants{tools: map[string]map[string]bool{}, all: map[string]bool{}}
	for name, grant := range m {
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

// AllowsCaller reports whether c may call tool: by its principal, or by
// one of its scopes or claim values.
func (g *Grants) AllowsCaller(c Caller, tool string) bool {
	if g == nil || g.Allows(c.Principal, tool) {
		return true
	}
	for _, s := range c.Scopes {
		if g.scopes.Allows(s, tool) {
			return true
		}
	}
	for claim, values := range c.Claims {
		for _, v := range values {
			if g.claims.Allows(claim+"\x00"+v, tool) {
				return true
			}
		}
	}
	return false
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
