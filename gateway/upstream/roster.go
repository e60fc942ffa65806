// Package upstream connects porthole to other MCP servers, its upstreams,
// and exposes the read-only tools an operator named in a roster file.
//
// # Trust model
//
// An upstream is somebody else's server. What it says about its tools (names,
// descriptions, schemas, annotations) and everything its tools return is
// untrusted: a tool is exposed only when the roster names it, the upstream
// declares it read-only, its name carries no mutating verb, and its
// definition still has the digest the operator pinned after reviewing it.
// The roster itself is trusted: whoever can write it can make porthole run a
// command (a stdio upstream is a child process), so it deserves the same write
// protection as porthole's own pod spec. It holds no secrets: tokens come
// from files or named environment variables.
package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Transports an entry may name.
const (
	TransportStdio      = "stdio"
	TransportSSE        = "sse"        // the 2024-11-05 HTTP+SSE transport
	TransportStreamable = "streamable" // streamable HTTP, the default
)

// Separator joins an upstream's name and its tool's name into the name
// porthole serves: "github__list_issues".
const Separator = "__"

// Bounds and defaults of an entry.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultListTTL        = 5 * time.Minute
	DefaultMaxResultBytes = 64 << 10
	MaxResultBytesLimit   = 1 << 20
	MaxCost               = 100

	// What one message from an upstream, one tool list, and every
	// message being read at once may hold (see bounds.go).
	DefaultMaxMessageBytes  = 4 << 20
	DefaultMaxListBytes     = 4 << 20
	DefaultMaxListPages     = 100
	DefaultMaxBytesInFlight = 32 << 20
	minBoundBytes           = 64 << 10
	maxBoundBytes           = 256 << 20
	maxListPagesLimit       = 10000
	maxToolNameLen          = 128 // the MCP limit on a tool name, which the served name must meet
)

// Roster is the roster file (PORTHOLE_ROSTER_FILE):
//
//	upstreams:
//	  - name: everything
//	    transport: stdio
//	    command: npx
//	    args: ["-y", "@modelcontextprotocol/server-everything", "stdio"]
//	    env: [NODE_OPTIONS]
//	    tools:
//	      - name: echo
//	        sha256: 4c1f…   # written by `porthole roster pin`
//	  - name: docs
//	    url: https://mcp.example.com/mcp
//	    tokenFile: /run/secrets/docs-token
//	    tools:
//	      - name: search_docs
type Roster struct {
	Upstreams []Entry `yaml:"upstreams"`
	// MaxBytesInFlight bounds the bytes of the messages porthole is
	// reading from every upstream at once; default 32 MiB. A message
	// that would pass it fails as one past its own bound does.
	MaxBytesInFlight int64 `yaml:"maxBytesInFlight"`

	// resolved holds, entry by entry, what Resolve read from outside the
	// roster; nil until it runs.
	resolved []resolution
}

// resolution is what an entry names outside the roster, read once.
type resolution struct {
	endpoint, token string
	childEnv        []string
	named           []string // the values of the variables a child is given
}

// Resolve reads, once, everything the roster names outside itself: each
// HTTP entry's URL and token, each stdio entry's child environment. It
// fails on the first that cannot be read, with a sentence naming the entry
// and the field. A Set built from a resolved roster uses exactly these
// values, so the secrets porthole redacts (Secrets) are the ones it sends.
func (r *Roster) Resolve(lookup func(string) (string, bool)) error {
	res, err := r.resolve(lookup)
	if err == nil {
		r.resolved = res
	}
	return err
}

func (r *Roster) resolve(lookup func(string) (string, bool)) ([]resolution, error) {
	getenv := func(k string) string { v, _ := lookup(k); return v }
	res := make([]resolution, len(r.Upstreams))
	for i := range r.Upstreams {
		e, x := &r.Upstreams[i], &res[i]
		var err error
		if e.Transport != TransportStdio {
			if x.endpoint, x.token, err = e.Resolve(getenv); err != nil {
				return nil, err
			}
			continue
		}
		if x.childEnv, x.named, err = e.ChildEnv(lookup); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// PlaintextBeyondLoopback names the HTTP entries of a resolved roster
// reached over plain http at an address that is not loopback: what they
// answer crosses a network unencrypted.
func (r *Roster) PlaintextBeyondLoopback() []string {
	var names []string
	for i, x := range r.resolved {
		if u, err := url.Parse(x.endpoint); err == nil && u.Scheme == "http" && !isLoopback(u.Hostname()) {
			names = append(names, r.Upstreams[i].Name)
		}
	}
	return names
}

// Secrets are what a resolved roster holds that porthole must never send or
// log: credentials (each HTTP entry's token, and a URL read from a
// variable, which may carry a key), and the values of the variables stdio
// children are given, which may or may not be secret. Nil before Resolve.
func (r *Roster) Secrets() (credentials, childValues []string) {
	for i, x := range r.resolved {
		if x.token != "" {
			credentials = append(credentials, x.token)
		}
		if r.Upstreams[i].URLEnv != "" {
			credentials = append(credentials, x.endpoint)
		}
		childValues = append(childValues, x.named...)
	}
	return credentials, childValues
}

// Entry is one upstream.
type Entry struct {
	Name      string `yaml:"name"`
	Transport string `yaml:"transport"`

	// HTTP transports: exactly one of URL and URLEnv; at most one of
	// TokenFile and TokenEnv, whose token is sent as a bearer token.
	URL       string `yaml:"url"`
	URLEnv    string `yaml:"urlEnv"`
	TokenFile string `yaml:"tokenFile"`
	TokenEnv  string `yaml:"tokenEnv"`

	// stdio: the command, its arguments, and the names of the variables
	// of porthole's environment it gets besides PATH and HOME.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []string `yaml:"env"`

	// Tools are the only tools of this upstream porthole may expose, each
	// with the digest of the definition the operator reviewed.
	Tools []Pin `yaml:"tools"`

	// StructuredContent lets the tools' structured content through
	// (redacted at the wire like everything else); without it only their
	// text is served, quoted.
	StructuredContent bool `yaml:"structuredContent"`
	// Cost is what one call is charged against the caller's rate-limit
	// bucket; default 1.
	Cost int `yaml:"cost"`
	// Timeout bounds one call; default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// ListTTL is how long the tool list is kept where the upstream cannot
	// say it changed; default 5m.
	ListTTL time.Duration `yaml:"listTTL"`
	// MaxResultBytes caps the text porthole serves from one call; default
	// 64 KiB.
	MaxResultBytes int `yaml:"maxResultBytes"`
	// MaxMessageBytes bounds one message the upstream sends (a JSON
	// answer, a server-sent event, a stdio line); default 4 MiB.
	MaxMessageBytes int64 `yaml:"maxMessageBytes"`
	// MaxListBytes bounds one reading of the tool list, all its pages
	// together, as JSON; default 4 MiB. MaxListPages bounds its pages;
	// default 100.
	MaxListBytes int64 `yaml:"maxListBytes"`
	MaxListPages int   `yaml:"maxListPages"`
}

// Pin is one tool an entry allows, with the digest of its reviewed
// definition (see Digest). A tool without a digest is not exposed.
type Pin struct {
	Name   string `yaml:"name"`
	SHA256 string `yaml:"sha256"`
}

var (
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	digestRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// LoadRoster reads and checks a roster file.
func LoadRoster(path string) (*Roster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the roster file: %w", err)
	}
	return ParseRoster(b)
}

// ParseRoster checks a roster's content. Unknown fields are refused, and
// every error names the entry and the field, so a typo cannot expose more,
// or less, than the operator meant.
func ParseRoster(b []byte) (*Roster, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("the roster file is not valid: %w", err)
	}
	if line := aliasLine(&doc); line > 0 {
		// What the operator reads is what porthole runs: no part of an
		// entry stands for another, and pinning rewrites nothing it
		// cannot write back as it was.
		return nil, fmt.Errorf("the roster file uses a YAML anchor or alias at line %d: write each entry out in full", line)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var r Roster
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the roster file is empty: add upstreams: [...]")
		}
		return nil, fmt.Errorf("the roster file is not valid: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the roster file holds more than one YAML document")
	}
	if len(r.Upstreams) == 0 {
		return nil, fmt.Errorf("the roster file names no upstreams: add upstreams: [...]")
	}
	switch {
	case r.MaxBytesInFlight == 0:
		r.MaxBytesInFlight = DefaultMaxBytesInFlight
	case r.MaxBytesInFlight < minBoundBytes || r.MaxBytesInFlight > 4*maxBoundBytes:
		return nil, fmt.Errorf("the roster's maxBytesInFlight must be %d to %d; it was %d", minBoundBytes, 4*maxBoundBytes, r.MaxBytesInFlight)
	}
	seen := map[string]bool{}
	for i := range r.Upstreams {
		e := &r.Upstreams[i]
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("roster entry %d (%q): %w", i+1, e.Name, err)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("roster entry %d (%q): field name: another entry has this name", i+1, e.Name)
		}
		seen[e.Name] = true
		if e.MaxMessageBytes > r.MaxBytesInFlight {
			// No message of this upstream could ever be read whole.
			return nil, fmt.Errorf("roster entry %d (%q): field maxMessageBytes: %d (%d when not set) is more than the roster's maxBytesInFlight (%d): set it lower, or maxBytesInFlight higher", i+1, e.Name, e.MaxMessageBytes, DefaultMaxMessageBytes, r.MaxBytesInFlight)
		}
	}
	return &r, nil
}

// check validates an entry for its transport and fills its defaults.
func (e *Entry) check() error {
	if !nameRE.MatchString(e.Name) {
		return fieldError("name", "must be 1 to 32 lower-case letters, digits and hyphens, starting with a letter (it prefixes the tool names porthole serves)")
	}
	if e.Transport == "" {
		e.Transport = TransportStreamable
	}
	switch e.Transport {
	case TransportStdio:
		if err := e.checkStdio(); err != nil {
			return err
		}
	case TransportSSE, TransportStreamable:
		if err := e.checkHTTP(); err != nil {
			return err
		}
	default:
		return fieldError("transport", "must be stdio, sse or streamable; it was %q", e.Transport)
	}
	if err := e.checkTools(); err != nil {
		return err
	}
	return e.checkBounds()
}

// checkTools holds the entry's tools to names that serve under its
// prefix, each once, with pins as `porthole roster pin` writes them.
func (e *Entry) checkTools() error {
	if len(e.Tools) == 0 {
		return fieldError("tools", "names no tools; porthole exposes only the tools an entry names")
	}
	seen := map[string]bool{}
	for j, p := range e.Tools {
		switch {
		case !toolNameRE.MatchString(p.Name):
			return fieldError(fmt.Sprintf("tools[%d].name", j), "must be 1 to 128 letters, digits, '_', '-' or '.'; it was %q", p.Name)
		case len(e.Name)+len(Separator)+len(p.Name) > maxToolNameLen:
			return fieldError(fmt.Sprintf("tools[%d].name", j), "%q is too long to serve as %s%s%s (at most %d bytes in all)", p.Name, e.Name, Separator, p.Name, maxToolNameLen)
		case seen[p.Name]:
			return fieldError(fmt.Sprintf("tools[%d].name", j), "%q is named twice", p.Name)
		case p.SHA256 != "" && !digestRE.MatchString(p.SHA256):
			return fieldError(fmt.Sprintf("tools[%d].sha256", j), "must be 64 lower-case hex digits as `porthole roster pin` writes them")
		}
		seen[p.Name] = true
	}
	return nil
}

// checkBounds fills in the default of each bound not set and refuses one
// out of its range.
//
// Whole: one case per bound, each its default and its range, read as a table.
func (e *Entry) checkBounds() error {
	switch {
	case e.Cost == 0:
		e.Cost = 1
	case e.Cost < 0 || e.Cost > MaxCost:
		return fieldError("cost", "must be 1 to %d; it was %d", MaxCost, e.Cost)
	}
	switch {
	case e.Timeout == 0:
		e.Timeout = DefaultTimeout
	case e.Timeout < 0 || e.Timeout > 10*time.Minute:
		return fieldError("timeout", "must be positive and at most 10m; it was %s", e.Timeout)
	}
	switch {
	case e.ListTTL == 0:
		e.ListTTL = DefaultListTTL
	case e.ListTTL < time.Second:
		return fieldError("listTTL", "must be at least 1s; it was %s", e.ListTTL)
	}
	switch {
	case e.MaxResultBytes == 0:
		e.MaxResultBytes = DefaultMaxResultBytes
	case e.MaxResultBytes < 1024 || e.MaxResultBytes > MaxResultBytesLimit:
		return fieldError("maxResultBytes", "must be 1024 to %d; it was %d", MaxResultBytesLimit, e.MaxResultBytes)
	}
	for _, b := range []struct {
		field string
		v     *int64
		def   int64
	}{{"maxMessageBytes", &e.MaxMessageBytes, DefaultMaxMessageBytes}, {"maxListBytes", &e.MaxListBytes, DefaultMaxListBytes}} {
		switch {
		case *b.v == 0:
			*b.v = b.def
		case *b.v < minBoundBytes || *b.v > maxBoundBytes:
			return fieldError(b.field, "must be %d to %d; it was %d", minBoundBytes, maxBoundBytes, *b.v)
		}
	}
	switch {
	case e.MaxListPages == 0:
		e.MaxListPages = DefaultMaxListPages
	case e.MaxListPages < 1 || e.MaxListPages > maxListPagesLimit:
		return fieldError("maxListPages", "must be 1 to %d; it was %d", maxListPagesLimit, e.MaxListPages)
	}
	return nil
}

// checkStdio holds a stdio entry to a command, and variables named, never
// given, for its child.
func (e *Entry) checkStdio() error {
	for field, set := range map[string]bool{"url": e.URL != "", "urlEnv": e.URLEnv != "", "tokenFile": e.TokenFile != "", "tokenEnv": e.TokenEnv != ""} {
		if set {
			return fieldError(field, "is for the sse and streamable transports; a stdio upstream passes what it needs through env")
		}
	}
	if strings.TrimSpace(e.Command) == "" {
		return fieldError("command", "is required for the stdio transport")
	}
	seen := map[string]bool{}
	for j, name := range e.Env {
		switch {
		case !envNameRE.MatchString(name):
			return fieldError(fmt.Sprintf("env[%d]", j), "must be the name of a variable (the value comes from porthole's environment, never from the roster); it was %q", name)
		case seen[name]:
			return fieldError(fmt.Sprintf("env[%d]", j), "%q is named twice", name)
		}
		seen[name] = true
	}
	return nil
}

// checkHTTP holds an sse or streamable entry to one URL, or the variable
// holding it, and at most one source of its token.
func (e *Entry) checkHTTP() error {
	for field, set := range map[string]bool{"command": e.Command != "", "args": len(e.Args) > 0, "env": len(e.Env) > 0} {
		if set {
			return fieldError(field, "is for the stdio transport")
		}
	}
	switch {
	case e.URL == "" && e.URLEnv == "":
		return fieldError("url", "or urlEnv is required for the %s transport", e.Transport)
	case e.URL != "" && e.URLEnv != "":
		return fieldError("url", "and urlEnv are both set; set exactly one")
	case e.URLEnv != "" && !envNameRE.MatchString(e.URLEnv):
		return fieldError("urlEnv", "must be the name of a variable; it was %q", e.URLEnv)
	case e.TokenFile != "" && e.TokenEnv != "":
		return fieldError("tokenFile", "and tokenEnv are both set; set at most one")
	case e.TokenEnv != "" && !envNameRE.MatchString(e.TokenEnv):
		return fieldError("tokenEnv", "must be the name of a variable; it was %q", e.TokenEnv)
	}
	if e.URL != "" {
		if err := checkURL(e.URL, e.hasToken()); err != nil {
			return fieldError("url", "%v", err)
		}
	}
	return nil
}

func (e *Entry) hasToken() bool { return e.TokenFile != "" || e.TokenEnv != "" }

// checkURL refuses what is not an absolute http(s) URL, and a token sent in
// the clear beyond this host.
func checkURL(raw string, token bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http or https URL")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials; use tokenFile or tokenEnv")
	}
	if token && u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("would send the token in the clear to %s: use https", u.Hostname())
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Resolve reads what an entry names outside the roster: the URL from its
// variable and the token from its file or variable. It is done at start,
// so a missing file or variable stops porthole with a sentence.
func (e *Entry) Resolve(getenv func(string) string) (endpoint, token string, err error) {
	endpoint = e.URL
	if e.URLEnv != "" {
		if endpoint = getenv(e.URLEnv); endpoint == "" {
			return "", "", fmt.Errorf("roster entry %q: field urlEnv: the variable %s is not set", e.Name, e.URLEnv)
		}
		if err := checkURL(endpoint, e.hasToken()); err != nil {
			return "", "", fmt.Errorf("roster entry %q: field urlEnv: the URL in %s %v", e.Name, e.URLEnv, err)
		}
	}
	switch {
	case e.TokenFile != "":
		b, err := os.ReadFile(e.TokenFile)
		if err != nil {
			return "", "", fmt.Errorf("roster entry %q: field tokenFile: %w", e.Name, err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", "", fmt.Errorf("roster entry %q: field tokenFile: %s is empty", e.Name, e.TokenFile)
		}
	case e.TokenEnv != "":
		if token = strings.TrimSpace(getenv(e.TokenEnv)); token == "" {
			return "", "", fmt.Errorf("roster entry %q: field tokenEnv: the variable %s is not set", e.Name, e.TokenEnv)
		}
	}
	return endpoint, token, nil
}

// ChildEnv is the whole environment of a stdio upstream: PATH and HOME from
// porthole's, and exactly the variables the entry names, whose values are
// also returned alone (they may be secrets). Nothing else of porthole's
// environment (its Temporal API key, its tokens) reaches the child.
func (e *Entry) ChildEnv(lookup func(string) (string, bool)) (env, values []string, err error) {
	// Never nil: os/exec gives a child with a nil Env all of porthole's
	// environment.
	env = []string{}
	for _, name := range []string{"PATH", "HOME"} {
		if v, ok := lookup(name); ok && !slices.Contains(e.Env, name) {
			env = append(env, name+"="+v)
		}
	}
	for _, name := range e.Env {
		v, ok := lookup(name)
		if !ok {
			return nil, nil, fmt.Errorf("roster entry %q: field env: the variable %s is not set in porthole's environment", e.Name, name)
		}
		env, values = append(env, name+"="+v), append(values, v)
	}
	return env, values, nil
}

// ServedName is the name porthole serves an upstream tool under.
func ServedName(upstream, tool string) string { return upstream + Separator + tool }

// ServedNames are the names of every tool the roster allows, whether or not
// it is exposed now: the names a policy file may grant.
func (r *Roster) ServedNames() []string {
	var names []string
	for _, e := range r.Upstreams {
		for _, p := range e.Tools {
			names = append(names, ServedName(e.Name, p.Name))
		}
	}
	return names
}

// Costs are the rate-limit costs of every tool the roster allows.
func (r *Roster) Costs() map[string]int {
	costs := map[string]int{}
	for _, e := range r.Upstreams {
		for _, p := range e.Tools {
			costs[ServedName(e.Name, p.Name)] = e.Cost
		}
	}
	return costs
}

// aliasLine is the line of the first anchor or alias in a YAML tree, or 0.
func aliasLine(n *yaml.Node) int {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return max(n.Line, 1)
	}
	for _, c := range n.Content {
		if line := aliasLine(c); line > 0 {
			return line
		}
	}
	return 0
}

func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("field %s: %s", field, fmt.Sprintf(format, args...))
}
