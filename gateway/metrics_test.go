package gateway

import "testing"

// TestBuildInfoIsAMetric: porthole_build_info is 1, labelled with what
// the binary says of itself.
func TestBuildInfoIsAMetric(t *testing.T) {
	t.Parallel()
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: &fakeAuditor{},
		Build: &BuildInfo{Version: "1.2.3", Commit: "abc", CommitTime: "2026-12-01T10:00:00Z", GoVersion: "go1.26", TemporalSDK: "v1.51.0", MCPSDK: "v1.8.0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	mfs, err := g.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "porthole_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if mf.GetMetric()[0].GetGauge().GetValue() != 1 || labels["version"] != "1.2.3" || labels["commit"] != "abc" ||
			labels["commit_time"] != "2026-12-01T10:00:00Z" || labels["go_version"] != "go1.26" || labels["temporal_sdk"] != "v1.51.0" || labels["mcp_sdk"] != "v1.8.0" {
			t.Fatalf("porthole_build_info: %v", mf)
		}
		return
	}
	t.Fatal("no porthole_build_info")
}
