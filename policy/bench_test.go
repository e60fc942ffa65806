package policy

import "testing"

func BenchmarkScreenQuery(b *testing.B) {
	q := "WorkflowType = 'Order' AND ExecutionStatus IN ('Failed', 'TimedOut') AND StartTime > '2026-01-01T00:00:00Z' ORDER BY StartTime DESC"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ScreenQuery(q, QueryRules{}); err != nil {
			b.Fatal(err)
		}
	}
}
