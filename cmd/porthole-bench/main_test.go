package main

import "testing"

// TestModesStartOnlyTheServersTheyCall: -modes hop,porthole needs no
// Jaeger, oidc-provider or Redis; every mode has its server named, and a
// mode the bench does not have is refused.
func TestModesStartOnlyTheServersTheyCall(t *testing.T) {
	o := options{only: "hop, porthole"}
	for server, want := range map[string]bool{"bare": true, "porthole": true, "traced": false, "oauth": false, "redis": false, "cached": false, "porthole-aa": false, "profiled": false, "pseudonymised": false, "signed": false, "merkle": false} {
		if got := o.needs(server); got != want {
			t.Errorf("-modes hop,porthole needs %s: %v, want %v", server, got, want)
		}
	}
	all := options{}
	for _, server := range []string{"bare", "porthole", "cached", "oauth", "redis", "traced", "profiled", "pseudonymised", "signed", "merkle", "porthole-aa"} {
		if !all.needs(server) {
			t.Errorf("every mode runs, yet %s is not started", server)
		}
	}
	for _, m := range modeNames {
		if _, ok := modeServer[m]; !ok && m != "sdk" {
			t.Errorf("mode %s names no server", m)
		}
	}
	if err := (options{only: "porthole,tracd"}).checkModes(); err == nil {
		t.Error("-modes with a mode the bench does not have was taken")
	}
	if err := o.checkModes(); err != nil {
		t.Error(err)
	}
}
