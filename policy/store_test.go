package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// TestARevokedGrantDoesNotOutliveItsFile: a policy file that is reloaded
// takes effect; one that does not parse keeps the last grants; one that is
// gone grants nothing (never "no policy", which grants everything) until it
// is back; each says so in Problem.
func TestARevokedGrantDoesNotOutliveItsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"principals": {"alice": {"tools": ["*"]}}, "queryAttributes": ["CustomerTier"]}`)
	s, err := OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Grants().Allows("alice", ToolListWorkflows) || len(s.QueryAttributes()) != 1 || s.Problem() != "" {
		t.Fatal("the first read is not in force")
	}
	write(`{"principals": {"alice": {"tools": ["describe_namespace"]}}}`)
	if changed, err := s.Reload(); !changed || err != nil || s.Grants().Allows("alice", ToolListWorkflows) || len(s.QueryAttributes()) != 0 {
		t.Fatalf("a narrowed file: changed %v, %v; still allows list_workflows %v", changed, err, s.Grants().Allows("alice", ToolListWorkflows))
	}
	write(`{"principals": `)
	if _, err := s.Reload(); err == nil || !s.Grants().Allows("alice", ToolDescribeNamespace) || s.Problem() != ProblemPolicyUnparseable {
		t.Fatalf("a file that does not parse: %v, problem %q; want the last grants kept, said", err, s.Problem())
	}
	os.Remove(path)
	if _, err := s.Reload(); err == nil || s.Grants().Allows("alice", ToolDescribeNamespace) || s.Grants() == nil || s.Problem() != ProblemPolicyUnreadable {
		t.Fatalf("a file that is gone: %v, problem %q; want nothing granted, said", err, s.Problem())
	}
	write(`{"principals": {"alice": {"tools": ["describe_namespace"]}}}`)
	if changed, err := s.Reload(); !changed || err != nil || !s.Grants().Allows("alice", ToolDescribeNamespace) || s.Problem() != "" {
		t.Fatalf("the file back: changed %v, %v, problem %q", changed, err, s.Problem())
	}
}
