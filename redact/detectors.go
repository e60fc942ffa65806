package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// detectors are the shapes of credentials the redactor knows, in the order
// they run: a detector whose shape begins with another's (sk-ant- and sk-)
// comes first. SECURITY.md lists them; a detector added here is added there.
//
// A regexp here uses no (?i) on a pattern with an s or a k in it: (?i)
// lets s match U+017F (long s) and k the Kelvin sign, which no ASCII-folded
// hint finds, so the fast path would pass what the regexp redacts. Such
// patterns spell each letter's two cases out instead ([Ss]).
var detectors = []detector{
	// A PGP key's armour ends its lines with " BLOCK-----".
	{kind: "private-key", hints: []string{"PRIVATE KEY"},
		re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`)},
	{kind: "jwt", starts: []string{"eyJ"},
		re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}`)},
	{kind: "bearer", starts: []string{"bearer"}, fold: true, wordStart: true,
		re: regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)`), group: 1,
		// "bearer instruments" is English; a credential has a digit or a
		// punctuation character in it.
		accept: func(s string) bool { return strings.ContainsAny(s, "0123456789-._~+/=") }},
	// "basic information" is English too: a Basic credential is base64 of
	// user:password, so only what decodes to text with a colon counts.
	{kind: "basic-auth", starts: []string{"basic"}, fold: true, wordStart: true,
		re: regexp.MustCompile(`\b[Bb][Aa][Ss][Ii][Cc][ \t]+([A-Za-z0-9+/]{8,}={0,2})`), group: 1,
		accept: decodesToUserPassword},
	{kind: "aws-access-key-id", starts: awsKeyPrefixes, wordStart: true,
		re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b`)},
	// The hint is "ecret", not "secret": (?i) lets the regexp's s match
	// U+017F (long s) and its k the Kelvin sign, which an ASCII-folded hint
	// of "secret" would not find, so the fast path would pass
	// "aws_\u017fecret_access_key=..." that the regexp redacts. No letter of
	// "ecret" folds to anything beyond ASCII.
	{kind: "aws-secret-access-key", hints: []string{"ecret"}, fold: true, window: secretKeyWindow,
		re: regexp.MustCompile(`(?i)(?:aws)?_?secret_?(?:access)?_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})\b`), group: 1},
	{kind: "github-token", starts: githubPrefixes, wordStart: true,
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	{kind: "gitlab-token", starts: []string{"glpat-"}, wordStart: true,
		re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`)},
	// A webhook's path is the credential, with or without its scheme.
	{kind: "slack-token", hints: []string{"xox", "xapp-", "hooks.slack.com"},
		re: regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}|(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+`)},
	{kind: "porthole-token", starts: []string{"ph_"}, wordStart: true,
		re: regexp.MustCompile(`\bph_[A-Za-z0-9_-]{43}`)},
	{kind: "google-api-key", starts: []string{"AIza"}, wordStart: true,
		re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	// The hints are rarer than the starts (rk is in every "workflow").
	{kind: "stripe-key", starts: stripePrefixes, wordStart: true, hints: []string{"k_live_", "k_test_"},
		re: regexp.MustCompile(`\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}`)},
	{kind: "anthropic-key", starts: []string{"sk-ant-"}, wordStart: true,
		re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	// sk- begins ordinary names too (sk-orders-processing-2024,
	// sk-OrdersProcessingWorkflowRunV2-2024): an OpenAI key is a project,
	// service-account or admin key, or a legacy key of 48 letters and
	// digits (with T3BlbkFJ in it, or not), and mixes cases and digits.
	{kind: "openai-key", starts: []string{"sk-"}, wordStart: true,
		re:     regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48})`),
		accept: mixesCasesAndDigits},
	{kind: "npm-token", starts: []string{"npm_"}, wordStart: true,
		re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`)},
	{kind: "sendgrid-key", starts: []string{"SG."}, wordStart: true,
		re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`)},
	{kind: "huggingface-token", starts: []string{"hf_"}, wordStart: true,
		re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{34,}`)},
	{kind: "digitalocean-token", starts: digitalOceanPrefixes, wordStart: true,
		re: regexp.MustCompile(`\bdo[opr]_v1_[a-f0-9]{64}`)},
	// An Azure storage or Service Bus connection string's key, and a
	// shared access signature's sig parameter.
	{kind: "azure-key", hints: []string{"AccountKey=", "SharedAccessKey="},
		re: regexp.MustCompile(`(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})`), group: 1},
	{kind: "azure-sas", hints: []string{"sig="},
		re: regexp.MustCompile(`\bsig=([A-Za-z0-9%+/]{16,}(?:=|%3[Dd]){0,2})`), group: 1},
	// The userinfo runs to the last @ before the host: a password may hold
	// @, [, ] and /. The user may be empty (redis://:pw@host), and holds no
	// [ (a marker is not a user: redacting twice must change nothing). A
	// host and port followed by a path with an @ in it
	// (https://h:443/@alice) is not userinfo. The password holds no ":/",
	// so a match never spans another URL's scheme: a match refused as a
	// port and a path is skipped whole, and a URL with credentials inside
	// it (http://h:8080/cb?db=postgres://u:pw@db) was skipped with it.
	{kind: "url-credentials", hints: []string{"://"},
		re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.\-]*://([^/\s:@"'<>\[]*:(?:[^\s"'<>:]|:[^/\s"'<>])*)@`), group: 1,
		accept: func(s string) bool { return !portThenPath.MatchString(s) }},
	// password= in a connection string or a command line; DB_PASSWORD=
	// too, so no word boundary before it.
	{kind: "password", starts: []string{"password", "passwd"}, fold: true,
		re: regexp.MustCompile(`[Pp][Aa][Ss][Ss](?:[Ww][Oo][Rr][Dd]|[Ww][Dd])[ \t]*=[ \t]*([^\s;&"'<>]+)`), group: 1,
		// reset_password=true is a setting, not a password.
		accept: func(s string) bool { return !settingWords[strings.ToLower(s)] }},
}

var (
	awsKeyPrefixes       = []string{"AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "ABIA", "ACCA"}
	githubPrefixes       = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}
	stripePrefixes       = []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}
	digitalOceanPrefixes = []string{"dop_v1_", "doo_v1_", "dor_v1_"}
	portThenPath         = regexp.MustCompile(`^[^:]*:[0-9]{1,5}/`)
	settingWords         = map[string]bool{"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true, "null": true, "none": true, "0": true, "1": true}
)

// decodesToUserPassword reports whether s is base64 of printable text with
// a colon in it: a Basic credential's user:password.
func decodesToUserPassword(s string) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	if err != nil || !strings.Contains(string(b), ":") {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// mixesCasesAndDigits reports whether s holds an upper-case letter, a
// lower-case letter and a digit, as a random key of any length here does.
func mixesCasesAndDigits(s string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		upper = upper || 'A' <= c && c <= 'Z'
		lower = lower || 'a' <= c && c <= 'z'
		digit = digit || '0' <= c && c <= '9'
	}
	return upper && lower && digit
}

// partialStarts are how the secrets of the case-sensitive detectors with
// starts begin, for TrailingPartial: each start, the bytes that may follow
// it in such a secret, and how long the secret can be at most (0: no
// bound). A private key's detector matches to the end of a text that lost
// its END line, so a cut key needs no entry here; nor do the detectors
// that need text around the secret (bearer, basic, password, the AWS
// secret key, Azure keys, URL credentials): a cut before the secret leaves
// only the words before it, and a cut inside it leaves a shorter secret
// that the detector still finds.
var partialStarts = func() []partialStart {
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	upperDigit := func(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	withUnderscore := func(c byte) bool { return alnum(c) || c == '_' }
	withDash := func(c byte) bool { return alnum(c) || c == '_' || c == '-' }
	jwt := func(c byte) bool { return alnum(c) || c == '_' || c == '-' || c == '.' }
	slack := func(c byte) bool { return alnum(c) || c == '-' }
	hexLower := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
	var out []partialStart
	for _, p := range awsKeyPrefixes {
		out = append(out, partialStart{text: p, follow: upperDigit, max: 20})
	}
	for _, p := range githubPrefixes {
		if p == "github_pat_" {
			out = append(out, partialStart{text: p, follow: withUnderscore})
		} else {
			out = append(out, partialStart{text: p, follow: alnum})
		}
	}
	for _, p := range stripePrefixes {
		out = append(out, partialStart{text: p, follow: alnum})
	}
	for _, p := range digitalOceanPrefixes {
		out = append(out, partialStart{text: p, follow: hexLower, max: 71})
	}
	return append(out,
		partialStart{text: "glpat-", follow: withDash}, partialStart{text: "ph_", follow: withDash, max: 46},
		partialStart{text: "eyJ", follow: jwt}, partialStart{text: "xox", follow: slack},
		partialStart{text: "xapp-", follow: slack}, partialStart{text: "AIza", follow: withDash, max: 39},
		partialStart{text: "sk-ant-", follow: withDash},
		// An ordinary name may begin sk- too: only a run that already
		// mixes cases and digits is taken for the start of a key.
		partialStart{text: "sk-", follow: withDash, accept: mixesCasesAndDigits},
		partialStart{text: "npm_", follow: alnum, max: 40}, partialStart{text: "SG.", follow: jwt, max: 69},
		partialStart{text: "hf_", follow: alnum})
}()

// partialStart is how one kind of secret begins.
type partialStart struct {
	text   string
	follow func(byte) bool
	max    int
	// accept, when set, must approve what follows the start.
	accept func(tail string) bool
}
