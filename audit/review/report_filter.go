package review

import (
	"strconv"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// Filter narrows a report. A call is counted when the filter admits it,
// and its result when the call was counted (whatever the result's own
// time). Denials name no tool and no arguments: a filter of either leaves
// them out.
type Filter struct {
	Since     time.Time `json:"since,omitzero"` // zero means open
	Until     time.Time `json:"until,omitzero"` // zero means open
	Principal string    `json:"principal,omitempty"`
	// Tool is the tool as the client named it, unquoted; a tools/list
	// call counts as the tool "tools/list", as the report shows it.
	Tool string `json:"tool,omitempty"`
	// Args must each be admitted by an argument of the call.
	Args []ArgFilter `json:"args,omitempty"`
	// Normalize, when set, gives another reading of an argument's value
	// that an ArgFilter also matches: porthole sends Temporal a visibility
	// query printed from its parse, where 'or\der-123' is 'order-123', so
	// a query is matched as Temporal read it too.
	Normalize func(name, value string) string `json:"-"`
}

// ArgFilter admits a call that holds an argument named Name whose value
// equals Value, or with Substring contains it. Names and values are
// compared unquoted, as the record holds them: after redaction, and cut at
// MaxArgBytes (a value that was cut equals only what was kept of it). An
// argument the record left out (ArgsOmitted) admits nothing.
type ArgFilter struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Substring bool   `json:"substring,omitempty"`
}

func (f Filter) admitsTime(t time.Time) bool {
	return (f.Since.IsZero() || !t.Before(f.Since)) && (f.Until.IsZero() || t.Before(f.Until))
}

func (f Filter) admitsCall(e audit.Entry) bool {
	switch {
	case !f.admitsTime(e.Time), f.Principal != "" && e.Principal != f.Principal:
		return false
	case f.Tool != "" && toolName(e) != f.Tool:
		return false
	}
	for _, a := range f.Args {
		if !a.admits(e, f.Normalize) {
			return false
		}
	}
	return true
}

func (a ArgFilter) admits(e audit.Entry, normalize func(name, value string) string) bool {
	match := func(v string) bool { return v == a.Value || (a.Substring && strings.Contains(v, a.Value)) }
	for _, arg := range e.Args {
		name := unquote(arg.Name)
		if name != a.Name {
			continue
		}
		v := unquote(arg.Value)
		if match(v) || normalize != nil && match(normalize(name, v)) {
			return true
		}
	}
	return false
}

// admitsDenial: a denial names a principal only when it came after
// authentication (a rate limit, an OAuth token's missing scope, a refused
// body, a 503).
func (f Filter) admitsDenial(e audit.Entry) bool {
	return !f.namesCalls() && f.admitsTime(e.Time) && (f.Principal == "" || e.Principal == f.Principal)
}

// namesCalls says the filter names what only calls have.
func (f Filter) namesCalls() bool { return f.Tool != "" || len(f.Args) > 0 }

// describe says what the filter admits, for a report's header; "" when it
// admits everything. What an operator typed is quoted, like what a client
// sent.
func (f Filter) describe() string {
	var parts []string
	if !f.Since.IsZero() {
		parts = append(parts, "since "+f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "until "+f.Until.UTC().Format(time.RFC3339))
	}
	if f.Principal != "" {
		parts = append(parts, "principal "+strconv.QuoteToASCII(f.Principal))
	}
	if f.Tool != "" {
		parts = append(parts, "tool "+strconv.QuoteToASCII(f.Tool))
	}
	for _, a := range f.Args {
		op := "="
		if a.Substring {
			op = "contains"
		}
		parts = append(parts, "argument "+strconv.QuoteToASCII(a.Name)+" "+op+" "+strconv.QuoteToASCII(a.Value))
	}
	return strings.Join(parts, "; ")
}
