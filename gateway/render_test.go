package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// A hit answered from a rendered cache entry is, byte for byte, what
// marshalling and redacting the aged value would give, whatever the result
// type and however hostile the namespace's name.
func TestCachedAnswersRenderAsIfMarshalledAnew(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	now := time.Date(2026, 11, 30, 7, 0, 0, 123456789, time.UTC)
	for _, ns := range []string{"default", `x","observedAt":"1999","ageSeconds":9,"y":"`, "AKIAIOSFODNN7EXAMPLE"} {
		obs := read.Observation{Namespace: ns, ObservedAt: now}
		d, _ := (&describeReader{}).DescribeWorkflow(context.Background(), read.WorkflowRef{WorkflowID: "w"})
		d.Observation = obs
		for name, v := range map[string]interface{ Observed() *read.Observation }{
			"description":  d,
			"list":         &read.WorkflowList{Observation: obs, Workflows: []read.WorkflowSummary{{WorkflowID: "a", Status: "Running"}}, NextPageToken: "tok"},
			"count":        &read.WorkflowCount{Observation: obs, Count: 3},
			"namespace":    &read.NamespaceDescription{Observation: obs, State: "Registered"},
			"history":      &read.History{Observation: obs, WorkflowID: "w", Events: []read.HistoryEvent{{EventID: 1, EventType: "WorkflowExecutionStarted", EventTime: now}}},
			"long history": &read.History{Observation: obs, WorkflowID: "w", Events: longHistory(now)},
			"task queue":   &read.TaskQueueDescription{Observation: obs, TaskQueue: "q", Workflow: read.TaskQueuePart{Pollers: []read.Poller{{Identity: quote.New(nil).Of(quote.OriginTemporal, "w\u202e")}}}},
		} {
			entry := &cacheEntry{v: v}
			// The read that fills the entry (no age), then hits.
			for i, age := range []float64{-1, 0.25, 1.5e-7, 1.999} {
				a := &age
				if age < 0 {
					a = nil
				}
				v.Observed().AgeSeconds = a
				got, n, err := g.render(entry, v)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(v)
				want, m := g.redactor.JSON(b)
				if string(got) != string(want) || n != m {
					t.Fatalf("%s in %q, hit %d: rendered\n%s (%d), want\n%s (%d)", name, ns, i, got, n, want, m)
				}
				if v.Observed().AgeSeconds != a {
					t.Fatalf("%s: render changed the value's age", name)
				}
				kept := entry.rendered.Load()
				if kept != nil && len(kept.json) > maxRenderedBytes {
					t.Fatalf("%s: the entry keeps %d bytes of rendering", name, len(kept.json))
				}
				if kept == nil && len(want) <= maxRenderedBytes {
					// The first rendering, the read's own, is kept for the
					// hits after it.
					t.Fatalf("%s, call %d: the entry keeps no rendering", name, i)
				}
			}
		}
	}
}

func longHistory(at time.Time) []read.HistoryEvent {
	events := make([]read.HistoryEvent, 500)
	for i := range events {
		events[i] = read.HistoryEvent{EventID: int64(i + 1), EventType: "ActivityTaskScheduled", EventTime: at, ActivityID: "a", ActivityType: "Charge"}
	}
	return events
}

// TestTheWireSkipsOnlyACopyOfWhatItReads: the wire redaction of an answer
// whose text block is its structured content as a string, told where the
// text block is, gives the bytes redacting the whole body gives, whatever
// the structured content holds.
func TestTheWireSkipsOnlyACopyOfWhatItReads(t *testing.T) {
	t.Parallel()
	for _, raw := range wireCopyCases {
		checkWireCopy(t, raw)
	}
}

var wireCopyCases = []string{
	`{"a":"clean"}`,
	`{"a":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl"}`,
	`{"a":"key tmprl-api-key-0123456789 here"}`,
	`{"a":"pass\"word-0123456789"}`,
	`{"a":"\u0041KIAIOSFODNN7EXAMPLE"}`,
	`{"t":"{\"a\":\"\\u0041KIAIOSFODNN7EXAMPLE\"}"}`,
	`{"a":"[REDACTED:jwt] and Bearer [REDACTED:bearer]"}`,
	`{"a":"mail alice@example.com or call +44 20 7946 0958"}`,
	`{"a":"<b>\u2028 password=hunter22 https://u:p@h"}`,
	`{"000":"000\b0000://0:0@0"}`,
}

func checkWireCopy(t *testing.T, raw string) {
	t.Helper()
	r, _ := redact.New("tmprl-api-key-0123456789", `pass"word-0123456789`)
	r = r.WithPersonal(redact.PersonalKinds...)
	g := &Server{redactor: r}
	// The structured content as it came, and porthole's rendering of it.
	rendered, _ := r.JSON([]byte(raw))
	for i, structured := range [][]byte{[]byte(raw), rendered} {
		text, _ := json.Marshal(string(structured))
		head := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":`
		middle := `}],"structuredContent":`
		body := []byte(head + string(text) + middle + string(structured) + `}}`)
		want, _ := r.JSON(body)
		rw := &redactingWriter{writes: 1,
			text:       fastpath.Span{Start: len(head), End: len(head) + len(text)},
			structured: fastpath.Span{Start: len(head) + len(text) + len(middle), End: len(head) + len(text) + len(middle) + len(structured)}}
		if got := g.redactJSONBody(rw, append([]byte{}, body...)); string(got) != string(want) {
			t.Errorf("case %d, the wire redaction of %s:\n got %s\nwant %s", i, raw, got, want)
		}
	}
}

func FuzzTheWireSkipsOnlyACopyOfWhatItReads(f *testing.F) {
	for _, raw := range wireCopyCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		checkWireCopy(t, raw)
	})
}
