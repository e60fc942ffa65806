package rpcdecode

import "testing"

func BenchmarkStrictDecode(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_workflows","arguments":{"query":"ExecutionStatus = 'Running' AND WorkflowType = 'Order'","pageSize":50}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
