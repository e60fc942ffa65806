package audit

import (
	"fmt"
	"testing"
	"time"
)

func TestADenialBudgetWritesTheFirstAndSummarisesTheRest(t *testing.T) {
	t.Parallel()
	b, err := NewDenialBudget(10, time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	deny := Record{Kind: KindDenial, ClientAddr: "192.0.2.1", Transport: "http", Outcome: OutcomeUnauthenticated, Status: 401, Reason: "no token"}
	written := 0
	for i := range 1000 {
		w, flush := b.Admit("addr:192.0.2.1", deny, t0.Add(time.Duration(i)*time.Millisecond))
		if len(flush) != 0 {
			t.Fatalf("denial %d flushed %v within the interval", i, flush)
		}
		if w {
			written++
		}
	}
	if written != 10 {
		t.Fatalf("%d of 1000 denials written one by one, want the budget of 10", written)
	}
	if due := b.Due(t0.Add(30 * time.Second)); len(due) != 0 {
		t.Fatalf("summaries due before the interval ended: %v", due)
	}
	due := b.Due(t0.Add(time.Minute))
	if len(due) != 1 || due[0].Kind != KindDenials || due[0].Count != 990 || due[0].ClientAddr != "192.0.2.1" ||
		len(due[0].Groups) != 1 || due[0].Groups[0].Count != 990 || !due[0].First.Equal(t0.Add(10*time.Millisecond)) {
		t.Fatalf("the summary: %+v", due)
	}
	// A new interval starts afresh.
	if w, _ := b.Admit("addr:192.0.2.1", deny, t0.Add(2*time.Minute)); !w {
		t.Fatal("the first denial of a new interval was not written")
	}
}

func TestADenialBudgetTracksABoundedNumberOfKeys(t *testing.T) {
	t.Parallel()
	b, _ := NewDenialBudget(1, time.Minute, 100)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	flushed := 0
	for i := range 10000 {
		key := fmt.Sprintf("addr:10.0.%d.%d", i/256, i%256)
		rec := Record{Kind: KindDenial, ClientAddr: key, Outcome: OutcomeUnauthenticated, Reason: fmt.Sprint("reason ", i%40)}
		_, f := b.Admit(key, rec, t0)
		flushed += len(f)
		_, f = b.Admit(key, rec, t0) // past the budget of 1: counted
		flushed += len(f)
	}
	if b.order.Len() > 100 {
		t.Fatalf("%d keys tracked, want at most 100", b.order.Len())
	}
	if rest := len(b.Drain()); flushed+rest != 10000 {
		t.Fatalf("%d summaries flushed on eviction and %d at the end, want 10000 in all", flushed, rest)
	}
	// Groups are bounded too.
	for i := range 100 {
		b.Admit("addr:x", Record{Kind: KindDenial, Reason: fmt.Sprint("reason ", i)}, t0)
	}
	if s := b.Drain(); len(s) != 1 || len(s[0].Groups) != MaxDenialGroups || s[0].Count != 99 {
		t.Fatalf("a summary of 99 denials of 99 reasons: %d groups, count %d", len(s[0].Groups), s[0].Count)
	}
}
