package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestTokensFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	alice, err := Append(file, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := Append(file, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if _, err := Append(file, "alice"); err == nil {
		t.Fatal("a second token for alice was appended")
	}
	raw, _ := os.ReadFile(file)
	if strings.Contains(string(raw), alice) || strings.Contains(string(raw), bob) {
		t.Fatal("the tokens file holds a token, not only its digest")
	}
	set, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{alice: "alice", bob: "bob"} {
		if got, err := set.Lookup(token, time.Now()); err != nil || got != want {
			t.Errorf("Lookup = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := set.Lookup(Digest(alice), time.Now()); err == nil {
		t.Error("the digest itself was accepted as a token")
	}

	for name, content := range map[string]string{
		"a line with one field":  "alice\n",
		"a short digest":         "alice abcd\n",
		"a non-hex digest":       "alice " + strings.Repeat("z", 64) + "\n",
		"a duplicate name":       "a " + Digest("x") + "\na " + Digest("y") + "\n",
		"the reserved local":     "local " + Digest("x") + "\n",
		"anonymous in capitals":  "ANONYMOUS " + Digest("x") + "\n",
		"a name with a space":    "al ice " + Digest("x") + "\n",
		"a name with a control":  "al\x1bice " + Digest("x") + "\n",
		"three fields on a line": "alice " + Digest("x") + " extra\n",
	} {
		if _, err := Parse(strings.NewReader(content)); err == nil {
			t.Errorf("%s was accepted", name)
		} else if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: refusal %q does not name the line", name, err)
		}
	}
	if _, err := Parse(strings.NewReader("# comment\n\nalice " + Digest("x") + "\n")); err != nil {
		t.Errorf("comments and blank lines refused: %v", err)
	}
}

// TestReservedNamesAreRefusedWithTheirLine: a tokens file naming "local" or
// "anonymous", in any case, is refused, naming the line; and no token can be
// made for them.
func TestReservedNamesAreRefusedWithTheirLine(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader("alice " + Digest("a") + "\nLocal " + Digest("b") + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("Parse = %v; want a refusal naming line 2", err)
	}
	if _, err := Append(filepath.Join(t.TempDir(), "tokens"), "anonymous"); err == nil {
		t.Fatal("a token was made for anonymous")
	}
}

// A digest on two lines would give its token to the later principal
// silently: the file is refused, naming both lines.
func TestOneDigestOnTwoLinesIsRefusedNamingBoth(t *testing.T) {
	t.Parallel()
	file := "alice " + Digest("a") + "\n# a comment\nbob " + Digest("b") + "\ncarol " + strings.ToUpper(Digest("a")) + " expires=2030-01-01T00:00:00Z\n"
	_, err := Parse(strings.NewReader(file))
	if err == nil || !strings.Contains(err.Error(), "lines 1 and 4 hold the same token digest (principals alice and carol)") {
		t.Fatalf("Parse = %v; want a refusal naming lines 1 and 4", err)
	}
}

// TestARevokedTokenDoesNotOutliveItsFile: a tokens file that is deleted
// refuses every token until it is back; one that does not parse keeps the
// last good set; each says so in Problem.
func TestARevokedTokenDoesNotOutliveItsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	alice, err := Append(path, "alice")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	s, err := OpenStore(path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	admitted := func() bool { _, err := s.Current().Lookup(alice, time.Now()); return err == nil }
	if !admitted() || s.Problem() != "" {
		t.Fatalf("a fresh store: admitted %v, problem %q", admitted(), s.Problem())
	}

	if err := os.WriteFile(path, []byte("this is not a tokens file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Reload()
	if !admitted() || s.Problem() != ProblemUnparseable {
		t.Fatalf("a file that does not parse: admitted %v, problem %q; want the last good set, said", admitted(), s.Problem())
	}

	os.Remove(path)
	s.Reload()
	if admitted() || s.Problem() != ProblemUnreadable {
		t.Fatalf("a deleted file: admitted %v, problem %q; want every token refused, said", admitted(), s.Problem())
	}
	if err := os.WriteFile(path, []byte("broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Reload()
	if admitted() || s.Problem() != ProblemUnparseable {
		t.Fatalf("a broken file after a deleted one: admitted %v, problem %q; want still refused", admitted(), s.Problem())
	}

	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Reload(); !changed || err != nil || !admitted() || s.Problem() != "" {
		t.Fatalf("the file back: changed %v, %v, admitted %v, problem %q", changed, err, admitted(), s.Problem())
	}
}
