package policy

import (
	"strings"
	"unicode"
)

// mutatingVerbs are words a tool that changes something would carry. They
// are found anywhere in a name, ignoring case and separators, so that neither
// camelCase nor run-together words hide one ("terminateworkflow"). "query" is
// among them: a Temporal workflow query runs worker code.
var mutatingVerbs = []string{
	"start", "signal", "query", "update", "cancel", "terminate", "reset", "delete",
	"pause", "unpause", "trigger", "batch", "create", "patch", "execute", "backfill", "complete", "fail", "heartbeat",
	"write", "remove", "insert", "modify", "rename", "upload", "deploy", "approve", "toggle", "destroy", "restart",
}

// mutatingWords are short verbs that would match inside harmless words
// ("input" holds "put", "dataset" holds "set"), so they count only as whole
// words of a name split at separators and case changes.
var mutatingWords = []string{
	"set", "put", "post", "add", "run", "send", "kill", "edit", "push", "merge", "drop", "move", "close", "exec", "stop", "sync", "apply", "mutate",
	"fork", "assign", "submit", "publish", "archive", "import", "commit", "enable", "disable", "lock", "unlock", "grant", "revoke",
	"invite", "transfer", "mark", "dismiss", "upsert", "purge", "save", "replace", "restore", "rollback",
}

// MutatingVerbs returns the mutating verbs a tool name carries; none means
// the name passes the screen. porthole's own tools pass it by construction
// (a test holds that); an upstream tool that fails it is withheld whatever
// its annotations say.
func MutatingVerbs(name string) []string {
	var flat strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' {
			flat.WriteRune(r)
		}
	}
	var found []string
	for _, verb := range mutatingVerbs {
		if strings.Contains(flat.String(), verb) {
			found = append(found, verb)
		}
	}
	words := nameWords(name)
	for _, verb := range mutatingWords {
		for _, w := range words {
			if w == verb {
				found = append(found, verb)
				break
			}
		}
	}
	return found
}

// nameWords splits a tool name into lower-case words at every character
// that is not a letter, at every lower-to-upper case change, and before the
// last capital of a run of capitals that a lower-case letter follows
// ("listIssues", "list_issues" and "list-issues" all give list, issues;
// "SQLExec" gives sql, exec).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(name)
	for i, r := range runes {
		var prev, next rune
		if i > 0 {
			prev = runes[i-1]
		}
		if i+1 < len(runes) {
			next = runes[i+1]
		}
		switch {
		case !unicode.IsLetter(r):
			flush()
			continue
		case unicode.IsUpper(r) && unicode.IsLower(prev),
			unicode.IsUpper(r) && unicode.IsUpper(prev) && unicode.IsLower(next):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}
