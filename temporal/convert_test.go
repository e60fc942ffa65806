package temporal

import (
	"strings"
	"testing"

	failurepb "go.temporal.io/api/failure/v1"

	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// TestAFailureMessageCutAtItsCapLeavesNoHalfSecret: a worker's failure
// message longer than the quoting cap, with a token straddling the cap, is
// redacted whole before it is cut. Cut first, its first half would reach
// the client, and no later redaction recognises half a JWT.
func TestAFailureMessageCutAtItsCapLeavesNoHalfSecret(t *testing.T) {
	t.Parallel()
	red, _ := redact.New()
	msg := strings.Repeat("x", quote.MaxQuotedLen-30) + " " + temporaltest.SecretJWT + " the end"
	f := &failurepb.Failure{Message: msg}
	got := conv{q: quote.New(red)}.failureSummary(f).Message.Text
	if strings.Contains(got, "eyJ") || !strings.Contains(got, "[REDACTED:jwt]") {
		t.Fatalf("the cut message is %q; want the token redacted whole", got[len(got)-80:])
	}
	if unredacted := (conv{q: quote.New(nil)}).failureSummary(f).Message.Text; !strings.Contains(unredacted, "eyJ") {
		t.Fatal("without a redactor the cut does not split the token, so this test shows nothing")
	}
	// Redacted once more, as every answer is, the cut-first message still
	// holds the token's first half: the leak this guards against.
	if again, _ := red.String((conv{q: quote.New(nil)}).failureSummary(f).Message.Text); !strings.Contains(again, "eyJ") {
		t.Fatal("the redactor recognises half a token; the test's premise is wrong")
	}
}
