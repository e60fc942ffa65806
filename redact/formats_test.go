package redact

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTheFormatsPeopleLeakAreRedacted: the review's list of formats the
// redactor missed (#17), each spelled as it is leaked, with the part that
// must not survive.
func TestTheFormatsPeopleLeakAreRedacted(t *testing.T) {
	t.Parallel()
	r, _ := New()
	cases := []struct{ name, text, secret string }{
		{"a URL password with an empty user", "redis://:s3cretpassw0rd@cache:6379/0", "s3cretpassw0rd"},
		{"an @ in a URL password", "postgres://u:p@ss@w0rd@db:5432/orders", "ss@w0rd"},
		{"brackets and a slash in a URL password", "mysql://app:pa[s]s/w0rd@db:3306/x", "pa[s]s/w0rd"},
		{"a PGP private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0secretkeymaterial\n-----END PGP PRIVATE KEY BLOCK-----", "lQOYBF0secretkeymaterial"},
		{"a Google API key", "key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "SyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"},
		{"a Stripe restricted key", "rk_live_51H8xYzAbCdEfGhIjKlMnOpQr", "51H8xYzAbCdEfGhIjKlMnOpQr"},
		{"a Stripe test key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"},
		{"a legacy OpenAI key", "sk-" + strings.Repeat("Ab3d", 12), strings.Repeat("Ab3d", 12)},
		{"an OpenAI service account key", "sk-svcacct-" + strings.Repeat("x9Y_", 10), strings.Repeat("x9Y_", 10)},
		{"an Anthropic admin key", "sk-ant-admin01-" + strings.Repeat("q", 30), strings.Repeat("q", 30)},
		{"an npm token", "//registry.npmjs.org/:_authToken=npm_" + strings.Repeat("Zx81", 9), strings.Repeat("Zx81", 9)},
		{"an Azure Service Bus key", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=" + strings.Repeat("QUJD", 10) + "=", strings.Repeat("QUJD", 10)},
		{"a SAS signature alone", "sv=2022-11-02&ss=b&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA%3D%3D", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA"},
		{"Basic in lower case", "authorization: basic ZGVwbG95Omh1bnRlcjJodW50ZXIy", "ZGVwbG95Omh1bnRlcjJodW50ZXIy"},
		{"a password in an environment dump", "DB_PASSWORD=hunter2hunter2 HOME=/root", "hunter2hunter2"},
		{"passwd with spaces", "passwd = hunter2hunter2", "hunter2hunter2"},
		{"a Slack app token", "xapp-1-A0123456789-1234567890123-abcdef0123456789", "A0123456789-1234567890123-abcdef0123456789"},
		{"a Slack webhook without its scheme", "post to hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX now", "XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"a Slack workflow webhook", "https://hooks.slack.com/workflows/T0000/A0000/123456/abcdefABCDEF", "abcdefABCDEF"},
		{"a DigitalOcean OAuth token", "doo_v1_" + strings.Repeat("fedcba9876543210", 4), strings.Repeat("fedcba9876543210", 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, n := r.String("failure: " + c.text + " while charging")
			if n == 0 || strings.Contains(got, c.secret) {
				t.Fatalf("String(%q) = %q, %d", c.text, got, n)
			}
			if again, m := r.String(got); again != got || m != 0 {
				t.Fatalf("redacting twice changed %q to %q (%d)", got, again, m)
			}
			doc := mustMarshal(t, map[string]string{"m": c.text})
			if out, _ := r.JSON(doc); strings.Contains(string(out), strings.ReplaceAll(c.secret, "\n", `\n`)) {
				t.Fatalf("JSON(%s) = %s", doc, out)
			}
		})
	}
}

// TestNearMissesOfTheNewFormatsAreLeftAlone: what looks like one of the
// formats but is not a credential passes unchanged.
func TestNearMissesOfTheNewFormatsAreLeftAlone(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for _, s := range []string{
		"redis://cache:6379/0",
		"https://social.example/users:443/@alice", // no credentials before the host
		"https://h.example:443/@alice/posts",      // a port, then a path with an @
		"https://example.com/a:b@c",               // the path, not userinfo
		"mailto:someone@example.com",
		"-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQENBF0publickeymaterial\n-----END PGP PUBLIC KEY BLOCK-----",
		"AIzaTooShortForAKey123",
		"sk_live_short", "rk_test_abc",
		"sk-orders-processing-workflow-v2-2024-11-30", // no upper case: a name
		"sk-learn pipeline",
		"sk-ant-short",
		"npm_install_step_for_the_build_of_orders_v2",
		"SG.orders.eu-west",
		"hf_model_v2", "hf_short123",
		"dop_v1_notahexvalue",
		"AccountKey=short",
		"sig=abc", "design=minimal&assign=1234567890abcdefghij",
		"basic information about the order", "Basic auth failed for the worker",
		"basic dXNlcg==", // base64 of "user": no colon
		"password reset failed", "password=", "the password was wrong",
		"xappy-something-long-enough",
		"see hooks.slack.com/docs for help",
		"TaskQueue: payments-DB_PASS_ROTATION",
		// From review: ordinary names the first patterns took.
		"xapp-checkout-service-v2", "sk-OrdersProcessingWorkflowRunV2-2024", "reset_password=true", "PASSWORD=none",
	} {
		if got, n := r.String(s); got != s || n != 0 {
			t.Errorf("String(%q) = %q, %d", s, got, n)
		}
	}
}

// TestEncodedCopiesOfExactSecretsAreRedacted: an exact secret porthole
// knows is found base64-encoded (alone, or inside a longer encoded text at
// any alignment, in either alphabet), URL-encoded and upper- or
// lower-cased.
func TestEncodedCopiesOfExactSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	const secret = "tmprl-Api+Key/0123456789?abc="
	r, _ := New(secret)
	b64 := base64.StdEncoding.EncodeToString
	cases := map[string]string{
		"base64":                          b64([]byte(secret)),
		"base64, URL alphabet":            base64.URLEncoding.EncodeToString([]byte(secret)),
		"base64 of user:secret":           "Basic " + b64([]byte("porthole:"+secret)),
		"base64 one byte in":              b64([]byte("x" + secret + "tail")),
		"base64 two bytes in":             b64([]byte("xy" + secret)),
		"URL-encoded as a query value":    "?key=" + url.QueryEscape(secret),
		"URL-encoded as a path":           "/keys/" + url.PathEscape(secret),
		"URL-encoded with lower-case hex": strings.NewReplacer("%2B", "%2b", "%2F", "%2f", "%3F", "%3f", "%3D", "%3d").Replace(url.QueryEscape(secret)),
		"upper-cased":                     strings.ToUpper(secret),
		"lower-cased":                     strings.ToLower(secret),
	}
	for name, text := range cases {
		got, n := r.String("value " + text + " end")
		if n == 0 {
			t.Errorf("%s: %q kept", name, got)
		}
		doc := mustMarshal(t, map[string]string{"m": text})
		if out, m := r.JSON(doc); m == 0 {
			t.Errorf("%s: JSON kept %s", name, out)
		}
	}
	// Another key's encodings are not this one's.
	other := "tmprl-Api+Key/9876543210?xyz="
	for _, text := range []string{b64([]byte(other)), url.QueryEscape(other), strings.ToUpper(other)} {
		if got, n := r.String(text); n != 0 {
			t.Errorf("another key's spelling %q redacted to %q", text, got)
		}
	}
}

// TestTheNewFormatsArePartialsAtACut: a cut that leaves the start of one of
// the new tokens (8 characters or more, at a word boundary, only what the
// token holds) finds it; an ordinary name that begins the same way does not.
func TestTheNewFormatsArePartialsAtACut(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for _, s := range []string{
		"id-sk_live_4eC39HqLy", "key AIzaSyDaGmWKa4", "k=sk-ant-api03-Ab1_", "k sk-proj-T3BlbkFJ9x",
		"npm_Zx81Zx81", "SG.aB3_aB3_aB3_", "hf_aBcDaBcD", "dop_v1_0123abcd", "xapp-1-A0123",
	} {
		if i := r.TrailingPartial(s); i == len(s) || len(s)-i < MinPartialLen {
			t.Errorf("TrailingPartial(%q) = %d: the start of a token survives a cut", s, i)
		}
	}
	for _, s := range []string{"queue-sk-orders-processing", "worker-sk-eu-west-1", "hf_model_v2_release"} {
		if i := r.TrailingPartial(s); i != len(s) {
			t.Errorf("TrailingPartial(%q) = %d: an ordinary name would lose %q at a cut", s, i, s[i:])
		}
	}
}

// TestAURLWithCredentialsInsideAnotherURLIsRedacted: the userinfo of a
// URL runs to the last @, and a match refused as a host, a port and a
// path was skipped whole, with a URL with credentials inside it (found by
// review; the pattern before #17 found these).
func TestAURLWithCredentialsInsideAnotherURLIsRedacted(t *testing.T) {
	t.Parallel()
	r, _ := New()
	for _, c := range []struct{ text, secret string }{
		{"http://localhost:8080/callback?db=postgres://app:s3cr3t@db:5432/app", "s3cr3t"},
		{"http://proxy:3128/https://user:hunter2@site.example", "hunter2"},
		{"https://h:443/@alice,postgres://u:secretpw@db", "secretpw"},
	} {
		if got, n := r.String(c.text); n == 0 || strings.Contains(got, c.secret) {
			t.Errorf("String(%q) = %q, %d", c.text, got, n)
		}
	}
}

// TestRedactingTwiceChangesNothing: a password marker's colon made a
// userinfo on a second pass (found by review).
func TestRedactingTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	r, _ := New("tmprl-api-key-0123456789")
	for _, s := range []string{"https://password=abc;@host", "postgres://u:tmprl-api-key-0123456789@db", "redis://:password=x@h"} {
		once, _ := r.String(s)
		if twice, n := r.String(once); twice != once || n != 0 {
			t.Errorf("%q: once %q, twice %q (%d)", s, once, twice, n)
		}
	}
}

// TestARunOfStartsCostsLinearTime: every detector's regexp ran at every
// start of a run of them (eyJeyJeyJ…), each time to the run's end, and the
// partial-secret search tried each start against its whole tail: 80 KiB
// of eyJ took 84 s. A quarter of a MiB of each must now take a moment; the
// bound is generous, for a loaded machine, and quadratic time cannot meet
// it.
func TestARunOfStartsCostsLinearTime(t *testing.T) {
	t.Parallel()
	r, _ := New("tmprl-api-key-0123456789")
	for _, start := range []string{"eyJ", "eyJa", "sk-", "SG..", "AIza", "ghp_", "xoxb-", "password=", "Basic ", "://"} {
		run := strings.Repeat(start, (256<<10)/len(start))
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.String(run)
			r.TrailingPartial(run)
			r.Cut(run, 4096)
			r.JSON(mustMarshal(t, map[string]string{"m": run}))
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("256 KiB of %q took more than 20 s", start)
		}
	}
}
