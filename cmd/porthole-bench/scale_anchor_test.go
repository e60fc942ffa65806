package main

import (
	"strings"
	"testing"
)

// TestThePlantedCorpusIsOneMiBWithEveryKindPlantedFourTimes: the corpus
// both sides of the redaction anchor scan is exactly 1 MiB, holds every
// kind plantingsPerKind times, each planting whole and once, and blobText
// between them.
func TestThePlantedCorpusIsOneMiBWithEveryKindPlantedFourTimes(t *testing.T) {
	text, planted, exact := plantedCorpus(anchorBytes)
	if len(text) != 1<<20 {
		t.Fatalf("the corpus is %d bytes, not 1 MiB", len(text))
	}
	if len(exact) != 40 {
		t.Errorf("the exact secret is %d bytes, not 40", len(exact))
	}
	counts := map[string]int{}
	for _, p := range planted {
		counts[p.kind]++
		if !strings.Contains(p.line, p.secret) || !strings.HasSuffix(p.line, "\n") {
			t.Errorf("%s: the line %q does not hold its secret %q, or does not end a line", p.kind, p.line, p.secret)
		}
		if n := strings.Count(text, p.line); n != 1 {
			t.Errorf("%s: the corpus holds its line %d times, not once", p.kind, n)
		}
		if p.kind != exactKind && strings.Count(text, p.secret) != 1 {
			t.Errorf("%s: the corpus holds the secret %q %d times, not once", p.kind, p.secret, strings.Count(text, p.secret))
		}
	}
	if n := strings.Count(text, exact); n != plantingsPerKind {
		t.Errorf("the corpus holds the exact secret %d times, not %d", n, plantingsPerKind)
	}
	want := append([]string{exactKind}, func() []string {
		var ks []string
		for _, k := range plantedKinds {
			ks = append(ks, k.kind)
		}
		return ks
	}()...)
	for _, k := range want {
		if counts[k] != plantingsPerKind {
			t.Errorf("%s is planted %d times, not %d", k, counts[k], plantingsPerKind)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("%d kinds are planted, not %d: %v", len(counts), len(want), counts)
	}
	// Planted between lines: what is left when the plantings are taken
	// out is blobText's text of that size.
	rest := text
	for _, p := range planted {
		rest = strings.Replace(rest, p.line, "", 1)
	}
	if rest != blobText(len(rest)) {
		t.Error("taking the plantings out does not leave the answer text: a planting cut one of its lines")
	}
}

// TestPortholeFindsEveryPlantedSecret: porthole's redactor, configured as
// the anchor measures it, finds every secret planted in the corpus (each
// shaped as its detector takes it), and its first scan is what the
// anchor counts.
func TestPortholeFindsEveryPlantedSecret(t *testing.T) {
	text, planted, exact := plantedCorpus(anchorBytes)
	out, _ := anchorRedactor(exact).String(text)
	for _, p := range planted {
		if strings.Contains(out, p.secret) {
			t.Errorf("%s: porthole passed %q in %q", p.kind, p.secret, strings.TrimSpace(p.line))
		}
	}
	side := portholeAnchor(text, planted, exact, 0)
	if side.scans != 1 || side.foundCount() != len(planted) || side.bytes != len(text) {
		t.Errorf("the anchor's porthole side: %d scans of %d bytes, %d of %d found; want 1 scan of %d bytes, every one found",
			side.scans, side.bytes, side.foundCount(), len(planted), len(text))
	}
}

// TestGitleaksFindingsAreMatchedToThePlantedSecrets: a finding counts for a
// planted secret when its secret or match holds it, or its secret of 8
// bytes or more lies inside it; not when it is shorter or elsewhere.
func TestGitleaksFindingsAreMatchedToThePlantedSecrets(t *testing.T) {
	secret := "T0123456789/B0123456789/abcdefghijklmnopqrstuvwx"
	for _, c := range []struct {
		f    gitleaksFinding
		want bool
	}{
		{gitleaksFinding{Secret: secret}, true},
		{gitleaksFinding{Match: "https://hooks.slack.com/services/" + secret}, true},
		{gitleaksFinding{Secret: "abcdefghijklmnop"}, true},
		{gitleaksFinding{Secret: "abcdefg"}, false},
		{gitleaksFinding{Secret: "somethingelse", Match: "key=somethingelse"}, false},
	} {
		if got := gitleaksFound(secret, []gitleaksFinding{c.f}); got != c.want {
			t.Errorf("gitleaksFound(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}
