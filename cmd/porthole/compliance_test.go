package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestComplianceDocNamesOnlyTestsThatExist: docs/compliance.md maps each
// control to the tests that show it; a test renamed or removed must take
// its row with it.
func TestComplianceDocNamesOnlyTestsThatExist(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "compliance.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)`").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 20 {
		t.Fatalf("docs/compliance.md names %d tests", len(named))
	}
	var sources strings.Builder
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		if !strings.Contains(sources.String(), "func "+m[1]+"(") {
			t.Errorf("docs/compliance.md names %s, which no test file defines", m[1])
		}
	}
}
