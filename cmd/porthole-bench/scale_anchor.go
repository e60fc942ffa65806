package main

// scale_anchor.go is the outside anchor of the answer-size curve:
// porthole's redactor and gitleaks (github.com/zricethezav/gitleaks/v8,
// its default rules, run by porthole-bench-gitleaks, a module of its own)
// scanning the same corpus one after the other, their throughputs and the
// planted secrets each finds.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/redact"
)

// anchorBytes is the size of the corpus both sides scan.
const anchorBytes = 1 << 20

// plantingsPerKind is how often each kind of secret is planted.
const plantingsPerKind = 4

// plantedSecret is one secret planted in the corpus: its kind (porthole's
// name for it, with the form where a kind has two), the line inserted,
// which holds it, and the secret itself, the part that must not pass.
type plantedSecret struct {
	kind, line, secret string
}

// plantedKind makes one planting of a kind from fresh random values.
type plantedKind struct {
	kind string
	make func() (line, secret string)
}

// plantedKinds are the kinds planted: every kind porthole's redactor
// detects (redact/detectors.go, redact/personal.go), each in a shape its
// detector takes, in a line as a worker's log would hold it. The exact
// secret porthole is configured with is planted by plantedCorpus.
var plantedKinds = []plantedKind{
	{"private-key", func() (string, string) {
		// A PEM body of 64-character lines, as openssl writes.
		der := randBytes(600)
		body := base64.StdEncoding.EncodeToString(der)
		var lines []string
		for len(body) > 64 {
			lines, body = append(lines, body[:64]), body[64:]
		}
		secret := strings.Join(append(lines, body), "\n")
		return "2026-12-01T10:00:00.000Z worker-3 activity LoadSigningKey read the key file:\n-----BEGIN RSA PRIVATE KEY-----\n" +
			secret + "\n-----END RSA PRIVATE KEY-----\n", secret
	}},
	{"jwt", func() (string, string) {
		enc := base64.RawURLEncoding
		header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
		payload := enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%s","iat":%d}`, randFrom(lowerDigits, 12), 1796100000+randInt(1000000))))
		secret := header + "." + payload + "." + enc.EncodeToString(randBytes(32))
		return "2026-12-01T10:00:01.000Z worker-1 activity FetchProfile session " + secret + " refused: expired\n", secret
	}},
	{"bearer", func() (string, string) {
		secret := randFrom(alnum, 24) + "." + randFrom(alnum, 15) + randFrom(digits, 1)
		return "2026-12-01T10:00:02.000Z worker-2 activity CallPartner sent Authorization: Bearer " + secret + " and got 401\n", secret
	}},
	{"basic-auth", func() (string, string) {
		secret := base64.StdEncoding.EncodeToString([]byte("svc-orders:" + randFrom(alnum, 20)))
		return "2026-12-01T10:00:03.000Z worker-4 activity PushInvoice sent Authorization: Basic " + secret + " and got 403\n", secret
	}},
	{"aws-access-key-id", func() (string, string) {
		// An access key id is AKIA and 16 characters of base32's alphabet.
		secret := "AKIA" + randFrom(base32Upper, 16)
		return "2026-12-01T10:00:04.000Z worker-5 activity UploadReport aws_access_key_id=" + secret + " region=eu-west-1\n", secret
	}},
	{"aws-secret-access-key", func() (string, string) {
		secret := randFrom(alnum+"/+", 39) + randFrom(alnum, 1)
		return "2026-12-01T10:00:05.000Z worker-5 activity UploadReport aws_secret_access_key=" + secret + " loaded from the environment\n", secret
	}},
	{"github-token (ghp_)", func() (string, string) {
		secret := "ghp_" + randFrom(alnum, 36)
		return "2026-12-01T10:00:06.000Z worker-6 activity OpenPullRequest GITHUB_TOKEN " + secret + " lacks the repo scope\n", secret
	}},
	{"github-token (github_pat_)", func() (string, string) {
		secret := "github_pat_" + randFrom(alnum, 22) + "_" + randFrom(alnum, 59)
		return "2026-12-01T10:00:07.000Z worker-6 activity OpenPullRequest GITHUB_TOKEN " + secret + " lacks the repo scope\n", secret
	}},
	{"gitlab-token", func() (string, string) {
		secret := "glpat-" + randFrom(alnum, 20)
		return "2026-12-01T10:00:08.000Z worker-0 activity TagRelease GITLAB_TOKEN " + secret + " expired\n", secret
	}},
	{"slack-token (xoxb-)", func() (string, string) {
		secret := "xoxb-" + randFrom(digits, 12) + "-" + randFrom(digits, 13) + "-" + randFrom(alnum, 24)
		return "2026-12-01T10:00:09.000Z worker-1 activity NotifyChannel posted with " + secret + ": not_in_channel\n", secret
	}},
	{"slack-token (webhook)", func() (string, string) {
		// The webhook's path is the credential.
		secret := "T" + randFrom(upperDigits, 10) + "/B" + randFrom(upperDigits, 10) + "/" + randFrom(alnum, 24)
		return "2026-12-01T10:00:10.000Z worker-2 activity NotifyChannel posted to https://hooks.slack.com/services/" + secret + " status 200\n", secret
	}},
	{"porthole-token", func() (string, string) {
		secret := "ph_" + randFrom(alnum+"_-", 42) + randFrom(alnum, 1)
		return "2026-12-01T10:00:11.000Z worker-3 activity AskAgent called the gateway with " + secret + " and got 429\n", secret
	}},
	{"google-api-key", func() (string, string) {
		secret := "AIza" + randFrom(alnum+"_-", 34) + randFrom(alnum, 1)
		return "2026-12-01T10:00:12.000Z worker-4 activity GeocodeAddress maps key " + secret + " over its quota\n", secret
	}},
	{"stripe-key", func() (string, string) {
		secret := "sk_live_" + randFrom(alnum, 24)
		return "2026-12-01T10:00:13.000Z worker-5 activity ChargeCard STRIPE_KEY " + secret + " refused: api_key_expired\n", secret
	}},
	{"anthropic-key", func() (string, string) {
		secret := "sk-ant-api03-" + randFrom(alnum+"_-", 92) + randFrom(alnum, 1) + "AA"
		return "2026-12-01T10:00:14.000Z worker-6 activity SummariseTicket ANTHROPIC_API_KEY " + secret + " invalid\n", secret
	}},
	{"openai-key", func() (string, string) {
		// A project key mixes cases and digits; one of each is placed
		// so that a short run of chance holds all three.
		secret := "sk-proj-" + randFrom(upper, 1) + randFrom(lower, 1) + randFrom(digits, 1) + randFrom(alnum+"_-", 71) +
			"T3BlbkFJ" + randFrom(alnum+"_-", 73) + randFrom(alnum, 1)
		return "2026-12-01T10:00:15.000Z worker-0 activity SummariseTicket OPENAI_API_KEY " + secret + " invalid\n", secret
	}},
	{"npm-token", func() (string, string) {
		secret := "npm_" + randFrom(alnum, 36)
		return "2026-12-01T10:00:16.000Z worker-1 activity PublishPackage NPM_TOKEN " + secret + " cannot publish\n", secret
	}},
	{"sendgrid-key", func() (string, string) {
		secret := "SG." + randFrom(alnum+"_-", 21) + randFrom(alnum, 1) + "." + randFrom(alnum+"_-", 42) + randFrom(alnum, 1)
		return "2026-12-01T10:00:17.000Z worker-2 activity SendReceipt SENDGRID_API_KEY " + secret + " forbidden\n", secret
	}},
	{"huggingface-token", func() (string, string) {
		secret := "hf_" + randFrom(upper+lower, 34)
		return "2026-12-01T10:00:18.000Z worker-3 activity EmbedDocuments HF_TOKEN " + secret + " unauthorized\n", secret
	}},
	{"digitalocean-token", func() (string, string) {
		secret := "dop_v1_" + hex.EncodeToString(randBytes(32))
		return "2026-12-01T10:00:19.000Z worker-4 activity ResizeDroplet DIGITALOCEAN_TOKEN " + secret + " unauthorized\n", secret
	}},
	{"azure-key", func() (string, string) {
		// A storage account's key is 64 bytes in base64.
		secret := base64.StdEncoding.EncodeToString(randBytes(64))
		return "2026-12-01T10:00:20.000Z worker-5 activity ArchiveOrders connecting with DefaultEndpointsProtocol=https;AccountName=ordersarchive;AccountKey=" +
			secret + ";EndpointSuffix=core.windows.net\n", secret
	}},
	{"azure-sas", func() (string, string) {
		// A signature is an HMAC-SHA256 in base64, percent-encoded in
		// the URL.
		secret := url.QueryEscape(base64.StdEncoding.EncodeToString(randBytes(32)))
		return "2026-12-01T10:00:21.000Z worker-6 activity ExportOrders GET https://ordersarchive.blob.core.windows.net/exports/orders.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&spr=https&sig=" +
			secret + " status 403\n", secret
	}},
	{"url-credentials", func() (string, string) {
		secret := randFrom(alnum, 24)
		return "2026-12-01T10:00:22.000Z worker-0 activity ReserveStock dial postgres://orders_app:" + secret + "@db.internal:5432/orders failed: timeout\n", secret
	}},
	{"password", func() (string, string) {
		secret := randFrom(alnum+"!#%*", 23) + randFrom(alnum, 1)
		return "2026-12-01T10:00:23.000Z worker-1 activity ReserveStock environment DB_HOST=db.internal DB_PASSWORD=" + secret + " DB_NAME=orders\n", secret
	}},
	{"email", func() (string, string) {
		secret := randFrom(lower, 8) + "." + randFrom(lower, 6) + "@" + randFrom(lower, 7) + ".com"
		return "2026-12-01T10:00:24.000Z worker-2 activity SendReceipt receipt for order-123456 sent to " + secret + "\n", secret
	}},
	{"phone", func() (string, string) {
		secret := "+44 20 " + randFrom(digits, 4) + " " + randFrom(digits, 4)
		return "2026-12-01T10:00:25.000Z worker-3 activity ArrangeDelivery courier to call " + secret + " on arrival\n", secret
	}},
	{"iban", func() (string, string) {
		iban := germanIBAN()
		var groups []string
		for len(iban) > 4 {
			groups, iban = append(groups, iban[:4]), iban[4:]
		}
		secret := strings.Join(append(groups, iban), " ")
		return "2026-12-01T10:00:26.000Z worker-4 activity RefundOrder refund of 42.00 EUR to " + secret + " queued\n", secret
	}},
	{"card", func() (string, string) {
		n := "4" + randFrom(digits, 14)
		n += luhnDigit(n)
		secret := n[:4] + " " + n[4:8] + " " + n[8:12] + " " + n[12:]
		return "2026-12-01T10:00:27.000Z worker-5 activity ChargeCard declined card " + secret + " insufficient funds\n", secret
	}},
}

// exactKind is the kind of the exact secret porthole is configured with.
const exactKind = "secret"

// plantedCorpus is size bytes of blobText with secrets planted between
// its lines: each of plantedKinds, and the exact secret porthole is
// configured with (returned as exact), plantingsPerKind times, made
// afresh from crypto/rand (so no scanner can know them beforehand), the
// kinds taking turns so that each is spread evenly through the text.
func plantedCorpus(size int) (text string, planted []plantedSecret, exact string) {
	exact = randFrom(alnum, 40)
	for round := range plantingsPerKind {
		for _, k := range plantedKinds {
			line, secret := k.make()
			planted = append(planted, plantedSecret{kind: k.kind, line: line, secret: secret})
		}
		planted = append(planted, plantedSecret{kind: exactKind, secret: exact,
			line: fmt.Sprintf("2026-12-01T10:00:28.000Z worker-%d activity StartWorkflow dial temporal namespace orders.a1b2c with api key %s: permission denied\n", round, exact)})
	}
	plantedBytes := 0
	for _, p := range planted {
		plantedBytes += len(p.line)
	}
	blob := blobText(max(0, size-plantedBytes))
	var b strings.Builder
	b.Grow(size)
	last := 0
	for i, p := range planted {
		// The i+1th of len+1 equal parts, on to the next line's start
		// (or back to the last one's, near the end).
		at := (i + 1) * len(blob) / (len(planted) + 1)
		if nl := strings.IndexByte(blob[max(at, last):], '\n'); nl >= 0 {
			at = max(at, last) + nl + 1
		} else {
			at = max(last, strings.LastIndexByte(blob, '\n')+1)
		}
		b.WriteString(blob[last:at])
		b.WriteString(p.line)
		last = at
	}
	b.WriteString(blob[last:])
	return b.String(), planted, exact
}

// anchorRedactor is porthole's redactor as the anchor measures it: the
// exact secret, every credential detector and every personal-data one.
func anchorRedactor(exact string) *redact.Redactor {
	r, _ := redact.New(exact)
	return r.WithPersonal(redact.PersonalKinds...)
}

// anchorSide is one side's scans of the corpus and what it found.
type anchorSide struct {
	bytes   int
	scans   int
	elapsed time.Duration
	found   []bool // by planting, in plantedCorpus's order
}

// mbPerSecond is the side's throughput, in MB (10^6 bytes) a second.
func (s anchorSide) mbPerSecond() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.bytes) * float64(s.scans) / 1e6 / s.elapsed.Seconds()
}

// foundCount is how many planted secrets the side found.
func (s anchorSide) foundCount() int {
	n := 0
	for _, f := range s.found {
		if f {
			n++
		}
	}
	return n
}

// anchorResult is the anchor's measure: both sides over one corpus.
type anchorResult struct {
	duration           time.Duration // each side's, at the least
	gitleaksVersion    string        // the gitleaks module's version in the binary
	planted            []plantedSecret
	porthole, gitleaks anchorSide
}

// kinds are the planted kinds in order, each once.
func (a *anchorResult) kinds() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range a.planted {
		if !seen[p.kind] {
			seen[p.kind] = true
			out = append(out, p.kind)
		}
	}
	return out
}

// kindCount is how many of kind's plantings s found, of how many.
func (a *anchorResult) kindCount(s anchorSide, kind string) (found, of int) {
	for i, p := range a.planted {
		if p.kind == kind {
			of++
			if s.found[i] {
				found++
			}
		}
	}
	return found, of
}

// anchorDuration is how long each side scans: a round's share of
// -duration (5 s of the default 20 s in 4 rounds), at most 1 s under
// -smallest.
func anchorDuration(o scaleOptions) time.Duration {
	d := o.duration / time.Duration(o.rounds)
	if o.smallest {
		d = min(d, time.Second)
	}
	return d
}

// checkGitleaks fails, before anything is measured, when the gitleaks
// binary the answer-size curve runs beside porthole's redactor is missing.
func checkGitleaks(o scaleOptions) error {
	if _, err := os.Stat(o.gitleaks); err != nil {
		return fmt.Errorf("-gitleaks %s: %v: make bench-scale builds it (and make bench-gitleaks alone)", o.gitleaks, err)
	}
	return nil
}

// redactionAnchor plants secrets in a 1 MiB corpus and scans it with
// porthole's redactor, in this process, then with gitleaks, in the binary
// o.gitleaks, each for anchorDuration in one goroutine.
func redactionAnchor(o scaleOptions, dir string) (*anchorResult, error) {
	if err := checkGitleaks(o); err != nil {
		return nil, err
	}
	text, planted, exact := plantedCorpus(anchorBytes)
	a := &anchorResult{duration: anchorDuration(o), planted: planted}
	a.porthole = portholeAnchor(text, planted, exact, a.duration)
	var err error
	if a.gitleaks, a.gitleaksVersion, err = gitleaksAnchor(o.gitleaks, dir, text, planted, a.duration); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		side anchorSide
	}{{"porthole redacts", a.porthole}, {"gitleaks detects", a.gitleaks}} {
		scans := "scans"
		if s.side.scans == 1 {
			scans = "scan"
		}
		fmt.Printf("redaction 1 MiB: %s %6.1f MB/s (%d %s in %s), %d of %d planted secrets found\n", s.name,
			s.side.mbPerSecond(), s.side.scans, scans, s.side.elapsed.Round(time.Millisecond), s.side.foundCount(), len(planted))
	}
	return a, nil
}

// portholeAnchor times porthole's redactor over text for d (once at the
// least): a planted secret is found when the redacted text no longer
// holds it.
func portholeAnchor(text string, planted []plantedSecret, exact string, d time.Duration) anchorSide {
	r := anchorRedactor(exact)
	s := anchorSide{bytes: len(text)}
	var first string
	start := time.Now()
	for deadline := start.Add(d); s.scans == 0 || time.Now().Before(deadline); s.scans++ {
		out, _ := r.String(text)
		if s.scans == 0 {
			first = out
		}
	}
	s.elapsed = time.Since(start)
	for _, p := range planted {
		s.found = append(s.found, !strings.Contains(first, p.secret))
	}
	return s
}

// gitleaksFinding is one of the findings porthole-bench-gitleaks prints.
type gitleaksFinding struct {
	Rule   string `json:"rule"`
	Secret string `json:"secret"`
	Match  string `json:"match"`
}

// gitleaksAnchor has the gitleaks binary bin scan text, written to a file
// in dir, for d, and returns the gitleaks version the binary names: a
// planted secret is found when a finding's secret or match holds it, or
// the finding's secret (8 bytes or more) lies inside it.
func gitleaksAnchor(bin, dir, text string, planted []plantedSecret, d time.Duration) (s anchorSide, version string, err error) {
	corpus := filepath.Join(dir, "anchor-corpus.txt")
	if err := os.WriteFile(corpus, []byte(text), 0o600); err != nil {
		return s, "", err
	}
	defer os.Remove(corpus)
	var stderr strings.Builder
	cmd := exec.Command(bin, "-corpus", corpus, "-duration", d.String())
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return s, "", fmt.Errorf("%s: %v: %s", bin, err, stderr.String())
	}
	var got struct {
		Version  string            `json:"version"`
		Bytes    int               `json:"bytes"`
		Scans    int               `json:"scans"`
		Seconds  float64           `json:"seconds"`
		Findings []gitleaksFinding `json:"findings"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return s, "", fmt.Errorf("%s printed no result: %v: %.300s", bin, err, out)
	}
	if got.Bytes != len(text) || got.Scans < 1 {
		return s, "", fmt.Errorf("%s scanned %d bytes %d times, not the corpus's %d", bin, got.Bytes, got.Scans, len(text))
	}
	s = anchorSide{bytes: got.Bytes, scans: got.Scans, elapsed: time.Duration(got.Seconds * float64(time.Second))}
	for _, p := range planted {
		s.found = append(s.found, gitleaksFound(p.secret, got.Findings))
	}
	return s, got.Version, nil
}

// gitleaksFound reports whether one of the findings is the planted secret:
// its secret or match holds the secret, or its secret, of 8 bytes or
// more, lies inside it.
func gitleaksFound(secret string, findings []gitleaksFinding) bool {
	for _, f := range findings {
		if strings.Contains(f.Secret, secret) || strings.Contains(f.Match, secret) ||
			len(f.Secret) >= 8 && strings.Contains(secret, f.Secret) {
			return true
		}
	}
	return false
}

// The alphabets the secrets are drawn from.
const (
	upper       = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower       = "abcdefghijklmnopqrstuvwxyz"
	digits      = "0123456789"
	alnum       = upper + lower + digits
	upperDigits = upper + digits
	lowerDigits = lower + digits
	base32Upper = upper + "234567"
)

// randFrom is n characters drawn uniformly from alphabet with crypto/rand.
func randFrom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[randInt(len(alphabet))]
	}
	return string(b)
}

// randInt is a uniform random number in [0, n).
func randInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err) // crypto/rand does not fail (Go 1.24 and later)
	}
	return int(v.Int64())
}

// randBytes is n random bytes.
func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (Go 1.24 and later)
	return b
}

// germanIBAN is a German IBAN of a random account: DE, the check digits
// ISO 13616 computes (98 less the remainder by 97 of the account, the
// country's digits (D 13, E 14) and 00), and 18 digits.
func germanIBAN() string {
	bban := randFrom(digits, 18)
	rem := 0
	for _, c := range bban + "131400" {
		rem = (rem*10 + int(c-'0')) % 97
	}
	return fmt.Sprintf("DE%02d%s", 98-rem, bban)
}

// luhnDigit is the digit that, appended to n, makes its Luhn check hold.
func luhnDigit(n string) string {
	sum := 0
	for k := range len(n) {
		d := int(n[len(n)-1-k] - '0')
		if k%2 == 0 { // doubled: the check digit will stand to its right
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return fmt.Sprint((10 - sum%10) % 10)
}
