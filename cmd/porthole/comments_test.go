package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// historyInComments is what a comment of non-test code must not say: where
// a rule came from ("found by review"), what was measured once, or which
// issue asked for it (#17). Those go in commit bodies and the CHANGELOG;
// a comment says what the code does and why, as it is now. PKCS #8 is a
// standard's name, not an issue.
var historyInComments = regexp.MustCompile(`(?i)found by review|\breview of\b|from review|\bmeasured\b|(^|[^\w&])#\d+\b`)

// historyExempt are the directories whose comments may say "measured":
// the bench's subject is measuring, and its comments name what a run
// measures, not what some run once found.
var historyExempt = map[string]bool{"cmd/porthole-bench": true}

// eachGoSource parses each Go file of non-test code under root (testdata,
// node_modules, hidden directories and the directories skip names, by
// their slash path from root, aside) and calls fn with its path from root.
func eachGoSource(t *testing.T, root string, skip map[string]bool, fn func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || skip[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		fn(rel, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// commentsCarryingHistory walks the Go files under root, test files and
// testdata aside, and returns "file:line: text" for each comment that
// tells history.
func commentsCarryingHistory(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	eachGoSource(t, root, historyExempt, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, group := range f.Comments {
			// A phrase may break across lines: the group is read as one
			// text, and reported at its first line.
			text := strings.Join(strings.Fields(group.Text()), " ")
			text = strings.ReplaceAll(text, "PKCS #", "PKCS-")
			if m := historyInComments.FindString(text); m != "" {
				found = append(found, rel+":"+strconv.Itoa(fset.Position(group.Pos()).Line)+": "+strings.TrimSpace(m))
			}
		}
	})
	return found
}

// No comment of non-test code tells where its rule came from, what was
// measured, or which issue asked: the code says what it does and why.
func TestCommentsSayWhatTheCodeDoesNotItsHistory(t *testing.T) {
	t.Parallel()
	for _, f := range commentsCarryingHistory(t, "../..") {
		t.Errorf("%s: say where this came from in the commit body or the CHANGELOG, not in the code", f)
	}
}

// The check finds a planted comment of each kind, across a line break
// too, and passes what is not history.
func TestTheCommentCheckFindsAPlantedComment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	planted := map[string]string{
		"a.go": "package p\n\n// Refused, found\n// by review.\nvar A = 1\n",
		"b.go": "package p\n\n// Costs 3 µs, measured on a quiet machine.\nvar B = 1\n",
		"c.go": "package p\n\n// As #17 asked.\nvar C = 1\n",
		"d.go": "package p\n\n// Security (from review): kept.\nvar D = 1\n",
	}
	clean := "package p\n\n// Reads a PKCS #8 key; the reviewer holds the public key.\nvar E = 1\n"
	for name, src := range planted {
		os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "e.go"), []byte(clean), 0o644)
	os.WriteFile(filepath.Join(dir, "f_test.go"), []byte("package p\n\n// found by review, in a test: allowed.\n"), 0o644)
	found := commentsCarryingHistory(t, dir)
	if len(found) != len(planted) {
		t.Fatalf("found %q; want one for each of %d planted comments", found, len(planted))
	}
	for _, f := range found {
		if strings.HasPrefix(f, "e.go") || strings.HasPrefix(f, "f_test.go") {
			t.Errorf("flagged %s", f)
		}
	}
}
