package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReportAnswersWhoAskedWhat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.log")
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	now := start
	l, err := Open(Config{Path: path, Key: testKey, Now: func() time.Time { now = now.Add(time.Minute); return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(r Record) {
		if err := l.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		write(callRecord("alice", "list_workflows"))
		write(Record{Kind: KindResult, Principal: "alice", Tool: "list_workflows", Outcome: OutcomeOK})
	}
	write(callRecord("bob", "describe_workflow"))
	write(Record{Kind: KindResult, Principal: "bob", Tool: "describe_workflow", Outcome: OutcomeToolError})
	write(Record{Kind: KindCall, Principal: "bob", Method: "tools/list"})
	write(Record{Kind: KindResult, Principal: "bob", Method: "tools/list", Outcome: OutcomeOK})
	write(Record{Kind: KindDenial, ClientAddr: "203.0.113.9:5000", Outcome: OutcomeUnauthenticated, Status: 401, Reason: "unknown token"})
	write(Record{Kind: KindDenial, ClientAddr: "203.0.113.9:5001", Outcome: OutcomeUnauthenticated, Status: 401, Reason: "unknown token"})
	l.Close()

	s, err := Summarize([]string{path}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Principals) != 2 || s.Principals[0].Principal != "alice" || s.Principals[0].Calls != 3 {
		t.Fatalf("principals = %+v", s.Principals)
	}
	bob := s.Principals[1]
	if bob.Calls != 2 || bob.Failed != 1 || len(bob.Tools) != 2 {
		t.Fatalf("bob = %+v", bob)
	}
	if len(s.Denials) != 2 || s.Denials[0].Count != 1 || s.Denials[0].Status != 401 {
		t.Fatalf("denials = %+v", s.Denials)
	}

	only, _ := Summarize([]string{path}, Filter{Principal: "bob"})
	if len(only.Principals) != 1 || only.Principals[0].Principal != "bob" {
		t.Fatalf("filter by principal = %+v", only.Principals)
	}
	late, _ := Summarize([]string{path}, Filter{Since: start.Add(7 * time.Minute)})
	if len(late.Principals) != 1 || late.Principals[0].Principal != "bob" {
		t.Fatalf("filter by time = %+v", late.Principals)
	}

	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alice", "list_workflows", "ok=3", "tool_error=1", "unknown token", "203.0.113.9:5000"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil || !json.Valid(js.Bytes()) {
		t.Fatalf("JSON report: %v", err)
	}
}

func TestReportShowsHostileNamesQuoted(t *testing.T) {
	t.Parallel()
	if got := safe("evil\x1b[2Jname"); got != `"evil\x1b[2Jname"` {
		t.Fatalf("safe = %q", got)
	}
}
