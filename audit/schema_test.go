package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestALogWrittenBySchemaVersion1StillVerifies: audit/testdata/v1 is a
// rotated series (genesis, calls, results, a denial, a denials summary, a
// tool change, rotations, a restart) written by porthole before records
// carried a schema version. A reviewer holding such a trail must be able to
// verify and report on it with its key for as long as porthole exists: do
// not regenerate these files.
func TestALogWrittenBySchemaVersion1StillVerifies(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/v1/audit.log*")
	if err != nil || len(files) != 5 {
		t.Fatalf("testdata/v1 holds %d files (%v)", len(files), err)
	}
	key, err := os.ReadFile("testdata/v1/audit.key")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(files, key)
	if err != nil || !v.OK() {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	if v.Records != 29 || v.FirstSeq != 1 || v.LastSeq != 29 || !v.Keyed {
		t.Fatalf("verified %d records, seq %d to %d, keyed %v; want 29, 1 to 29, keyed", v.Records, v.FirstSeq, v.LastSeq, v.Keyed)
	}
	// The files are given newest first (as a glob names them): a result
	// in the file after its call's is still counted with it.
	s, err := Report(files, Filter{}, ReportOptions{VerifyOptions: VerifyOptions{Keys: NewKeyring([][]byte{key}, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Verified || len(s.Principals) != 1 || s.Principals[0].Principal != "alice" || s.Principals[0].Calls != 8 || len(s.Denials) == 0 {
		t.Fatalf("report: verified %v, %+v", s.Verified, s.Principals)
	}
	if tools := s.Principals[0].Tools; len(tools) != 1 || tools[0].Outcomes[OutcomeOK] != 8 {
		t.Fatalf("alice's tools = %+v; want list_workflows, ok=8", tools)
	}
}
