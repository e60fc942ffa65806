package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// asvsRow is one row of docs/asvs.md.
type asvsRow struct {
	id, level, status, evidence, how string
	line                             int
}

var (
	asvsRowRE   = regexp.MustCompile(`^\| (V\d+\.\d+\.\d+) \| ([12]) \| (met|met by document|not applicable) \| (.*) \| (.+) \|$`)
	asvsTestRE  = regexp.MustCompile("^`([a-z0-9_/-]+)\\.(Test[A-Za-z0-9_]+)`$")
	asvsDocRE   = regexp.MustCompile("^`([A-Za-z0-9_./-]+\\.md)#([a-z0-9-]+)`$")
	asvsHeading = regexp.MustCompile(`^#{1,6} (.+)$`)
)

func readASVSRows(t *testing.T) []asvsRow {
	t.Helper()
	f, err := os.Open("../../docs/asvs.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []asvsRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if !strings.HasPrefix(l, "| V") {
			continue
		}
		m := asvsRowRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("docs/asvs.md:%d: not a row of the table's form: %.120s", n, l)
			continue
		}
		rows = append(rows, asvsRow{id: m[1], level: m[2], status: m[3], evidence: m[4], how: m[5], line: n})
	}
	return rows
}

// anchor is a Markdown heading's anchor as GitHub makes it.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestTheASVSTableHasARowForEveryRequirement holds docs/asvs.md to the ids
// and levels of ASVS 5.0.0's Level 1 and 2 requirements: a row for each, in
// order, at its level, and each met, met by a document or not applicable
// (a row of any other status is no row); a met row names tests that exist
// (and may name sections beside them), a row met by a document names
// sections that exist, and every row says how or why.
func TestTheASVSTableHasARowForEveryRequirement(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/asvs/asvs-5.0.0-l1-l2.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want [][2]string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && !strings.HasPrefix(l, "#") {
			want = append(want, [2]string{f[0], f[1]})
		}
	}
	if len(want) != 253 {
		t.Fatalf("the test data holds %d requirements; ASVS 5.0.0 has 253 at Levels 1 and 2", len(want))
	}
	rows := readASVSRows(t)
	if len(rows) != len(want) {
		t.Errorf("docs/asvs.md has %d rows; want %d", len(rows), len(want))
	}
	tests := map[string]bool{} // "dir.TestName"
	headings := map[string]map[string]bool{}
	for i, r := range rows {
		if i < len(want) && (r.id != want[i][0] || r.level != want[i][1]) {
			t.Errorf("docs/asvs.md:%d: row %s (L%s); want %s (L%s) here", r.line, r.id, r.level, want[i][0], want[i][1])
		}
		if len(strings.TrimSpace(r.how)) < 20 {
			t.Errorf("docs/asvs.md:%d: %s says too little of how or why", r.line, r.id)
		}
		items := strings.Split(r.evidence, ", ")
		switch r.status {
		case "met", "met by document":
			named := 0
			for _, it := range items {
				if m := asvsTestRE.FindStringSubmatch(it); m != nil && r.status == "met" {
					named++
					if !testExists(t, tests, m[1], m[2]) {
						t.Errorf("docs/asvs.md:%d: %s names %s.%s, which no test file of %s holds", r.line, r.id, m[1], m[2], m[1])
					}
					continue
				}
				m := asvsDocRE.FindStringSubmatch(it)
				if m == nil {
					t.Errorf("docs/asvs.md:%d: %s: %q is not `dir.TestName` (for a met row) or `FILE.md#anchor`", r.line, r.id, it)
					continue
				}
				if !headingExists(t, headings, m[1], m[2]) {
					t.Errorf("docs/asvs.md:%d: %s names %s#%s, which is no heading of that file", r.line, r.id, m[1], m[2])
				}
			}
			if r.status == "met" && named == 0 {
				t.Errorf("docs/asvs.md:%d: %s is met and names no test", r.line, r.id)
			}
		default:
			if r.evidence != "—" {
				t.Errorf("docs/asvs.md:%d: %s is %s and names evidence %q", r.line, r.id, r.status, r.evidence)
			}
		}
	}
}

// testExists reports whether a _test.go file in dir (from the repository's
// root) declares func name.
func testExists(t *testing.T, seen map[string]bool, dir, name string) bool {
	t.Helper()
	if len(seen) == 0 {
		root := filepath.Join("..", "..")
		decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				seen[filepath.ToSlash(rel)+"."+m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return seen[dir+"."+name]
}

func headingExists(t *testing.T, seen map[string]map[string]bool, file, a string) bool {
	t.Helper()
	if seen[file] == nil {
		seen[file] = map[string]bool{}
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			if m := asvsHeading.FindStringSubmatch(l); m != nil {
				seen[file][anchor(strings.ReplaceAll(m[1], "`", ""))] = true
			}
		}
	}
	return seen[file][a]
}
