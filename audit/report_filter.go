package audit

import (
	"strconv"
	"strings"
	"time"
)

// Filter narrows a report. A call is counted when the filter admits it,
// and its result when the call was counted (whatever the result's own
// time).
type Filter struct {
	Since     time.Time `json:"since,omitzero"` // zero means open
	Until     time.Time `json:"until,omitzero"` // zero means open
	Principal string    `json:"principal,omitempty"`
}

func (f Filter) admitsTime(t time.Time) bool {
	return (f.Since.IsZero() || !t.Before(f.Since)) && (f.Until.IsZero() || t.Before(f.Until))
}

func (f Filter) admitsCall(e Entry) bool {
	return f.admitsTime(e.Time) && (f.Principal == "" || e.Principal == f.Principal)
}

// admitsDenial: a denial names a principal only when it is a principal's
// rate limit.
func (f Filter) admitsDenial(e Entry) bool {
	return !f.namesCalls() && f.admitsTime(e.Time) && (f.Principal == "" || e.Principal == f.Principal)
}

// namesCalls says the filter names what only calls have.
func (f Filter) namesCalls() bool { return false }

// describe says what the filter admits, for a report's header; "" when it
// admits everything.
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
	return strings.Join(parts, "; ")
}
