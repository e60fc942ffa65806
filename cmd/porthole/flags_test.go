package main

import (
	"crypto/ed25519"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit/witness"
)

func TestNumericSettings(t *testing.T) {
	cases := []struct {
		name    string
		env     string
		args    []string
		want    time.Duration
		refused string
	}{
		{"the default stands without a variable or a flag", "", nil, 2 * time.Second, ""},
		{"the variable overrides the default", "5s", nil, 5 * time.Second, ""},
		{"the flag overrides the variable", "5s", []string{"--wait", "7s"}, 7 * time.Second, ""},
		{"a variable that does not parse is refused, naming it", "soon", nil, 0, `$PORTHOLE_TEST_WAIT="soon" is not a duration`},
		{"zero is refused where it must be positive", "0s", nil, 0, "it must be positive"},
		{"a negative flag is refused", "", []string{"--wait", "-1s"}, 0, "it must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PORTHOLE_TEST_WAIT", tc.env)
			s := newSettings("test", "", io.Discard)
			var wait time.Duration
			numeric(s, &wait, "wait", "PORTHOLE_TEST_WAIT", 2*time.Second, false, "how long")
			err := s.parse(tc.args)
			if tc.refused != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("parse = %v, want a usage error containing %q", err, tc.refused)
				}
				return
			}
			if err != nil || wait != tc.want {
				t.Fatalf("parse = %v, wait %s; want %s", err, wait, tc.want)
			}
		})
	}
}

// TestRatesThatAreNotNumbersAreRefused: "NaN" and "Inf" parse as floats,
// and either, as a rate, let every call through; they passed the range
// check (NaN compares false with everything) until it was written to fail
// them.
func TestRatesThatAreNotNumbersAreRefused(t *testing.T) {
	for _, v := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "1e400"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("PORTHOLE_TEST_RATE", v)
			s := newSettings("test", "", io.Discard)
			var r float64
			numeric(s, &r, "rate", "PORTHOLE_TEST_RATE", 5, false, "a rate")
			if err := s.parse(nil); !errors.Is(err, errUsage) {
				t.Fatalf("PORTHOLE_TEST_RATE=%s: parse = %v (rate %v), want a usage error", v, err, r)
			}
		})
	}
	t.Setenv("PORTHOLE_TEST_RATE", "")
	s := newSettings("test", "", io.Discard)
	var r float64
	numeric(s, &r, "rate", "PORTHOLE_TEST_RATE", 5, true, "a rate")
	if err := s.parse([]string{"--rate", "NaN"}); !errors.Is(err, errUsage) {
		t.Fatalf("--rate NaN where zero is allowed: parse = %v, want a usage error", err)
	}
}

// TestAnEmptyListenAddressIsRefused: PORTHOLE_ADDR= (set, empty) made
// net.Listen bind every interface on a random port.
func TestAnEmptyListenAddressIsRefused(t *testing.T) {
	t.Setenv("PORTHOLE_ADDR", "")
	var f frontSettings
	s := newSettings("serve", "", io.Discard)
	f.register(s)
	if err := s.parse(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.httpOptions(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "PORTHOLE_ADDR") {
		t.Fatalf("httpOptions with an empty address = %v, want a usage error naming PORTHOLE_ADDR", err)
	}
}

// TestTLSSettingsThatCannotStandAreRefused: a certificate without its key,
// a key without its certificate, a client CA without either, and a client
// CA with authentication off (the certificate would be the only factor)
// are each refused at start.
func TestTLSSettingsThatCannotStandAreRefused(t *testing.T) {
	for name, args := range map[string][]string{
		"a certificate alone":           {"--tls-cert-file", "c.pem"},
		"a key alone":                   {"--tls-key-file", "k.pem"},
		"a client CA alone":             {"--tls-client-ca-file", "ca.pem"},
		"a client CA as the one factor": {"--tls-cert-file", "c.pem", "--tls-key-file", "k.pem", "--tls-client-ca-file", "ca.pem", "--dangerously-serve-without-authentication"},
	} {
		var f frontSettings
		s := newSettings("serve", "", io.Discard)
		f.register(s)
		if err := s.parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := f.httpOptions(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "PORTHOLE_TLS_") {
			t.Errorf("%s: %v, want a usage error naming the TLS settings", name, err)
		}
	}
}

// TestAuditOriginsThatCannotStandAreRefused: an origin that is no C2SP
// tlog-checkpoint origin, one without the signing key its notes are signed
// with, one with a stream for a log, and one without a checkpoint file are
// each refused at start, before the log is opened; a good one keeps the
// tree.
func TestAuditOriginsThatCannotStandAreRefused(t *testing.T) {
	_, signer, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	logPath, checkpoints := filepath.Join(t.TempDir(), "audit.log"), filepath.Join(t.TempDir(), "checkpoints")
	for _, tc := range []struct {
		name   string
		args   []string
		signer ed25519.PrivateKey
		want   string
	}{
		{"an origin with a space", []string{"--audit-origin", "example.com/porthole audit"}, signer, `holds " "`},
		{"an origin with a newline, which would end the note's first line", []string{"--audit-origin", "example.com/porthole\n3"}, signer, `holds "\n"`},
		{"an origin with a tab", []string{"--audit-origin", "example.com/\tporthole"}, signer, `holds "\t"`},
		{"an origin with a +, which no note key name may hold", []string{"--audit-origin", "example.com/porthole+0"}, signer, `holds "+"`},
		{"an origin past ASCII", []string{"--audit-origin", "example.com/portholé-0"}, signer, `holds "\u00e9"`},
		{"an origin of 256 bytes", []string{"--audit-origin", strings.Repeat("a", 256)}, signer, "1 to 255"},
		{"an origin without the signing key", []string{"--audit-origin", "example.com/porthole-0", "--audit-checkpoint-file", ""}, nil, "PORTHOLE_AUDIT_SIGNING_KEY_FILE"},
		{"an origin with the log on stderr", []string{"--audit-origin", "example.com/porthole-0", "--audit-log", "stderr", "--audit-checkpoint-file", ""}, signer, "a file PORTHOLE_AUDIT_LOG"},
		{"an origin without a checkpoint file", []string{"--audit-origin", "example.com/porthole-0", "--audit-checkpoint-file", ""}, signer, "PORTHOLE_AUDIT_CHECKPOINT_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a auditSettings
			s := newSettings("serve", "", io.Discard)
			a.register(s)
			if err := s.parse(append([]string{"--audit-log", logPath, "--audit-checkpoint-file", checkpoints, "--audit-checkpoint-same-volume"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			l, err := a.open(zap.NewNop(), zap.NewNop(), nil, tc.signer)
			if err == nil {
				l.Close()
			}
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "PORTHOLE_AUDIT_ORIGIN") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("open = %v, want a usage error naming PORTHOLE_AUDIT_ORIGIN and %q", err, tc.want)
			}
			if _, err := os.Stat(logPath); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the audit log was created before the origin was refused (%v)", err)
			}
		})
	}
	var a auditSettings
	s := newSettings("serve", "", io.Discard)
	a.register(s)
	if err := s.parse([]string{"--audit-log", logPath, "--audit-checkpoint-file", checkpoints, "--audit-checkpoint-same-volume", "--audit-origin", "example.com/porthole/audit-0"}); err != nil {
		t.Fatal(err)
	}
	l, err := a.open(zap.NewNop(), zap.NewNop(), nil, signer)
	if err != nil {
		t.Fatalf("open with a good origin: %v", err)
	}
	defer l.Close()
	if _, err := os.Stat(logPath + ".tree"); err != nil {
		t.Errorf("a good origin keeps no tree beside the log: %v", err)
	}
}

// TestAuditWitnessSettingsThatCannotStandAreRefused: witnesses without an
// origin (they cosign a tree), a list that does not parse, a quorum no
// list of them meets, and a maximum lag without witnesses are each refused
// at start, before the log is opened.
func TestAuditWitnessSettingsThatCannotStandAreRefused(t *testing.T) {
	_, signer, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, vkey, err := witness.GenerateKey("witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	one := "http://127.0.0.1:7380 " + vkey
	logPath, checkpoints := filepath.Join(t.TempDir(), "audit.log"), filepath.Join(t.TempDir(), "checkpoints")
	base := []string{"--audit-log", logPath, "--audit-checkpoint-file", checkpoints, "--audit-checkpoint-same-volume", "--audit-origin", "example.com/porthole-0"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"witnesses without an origin", []string{"--audit-origin", "", "--audit-witnesses", one}, "needs PORTHOLE_AUDIT_ORIGIN"},
		{"a witness without its key", []string{"--audit-witnesses", "http://127.0.0.1:7380"}, "URL and verifier key"},
		{"a witness's key that is not one", []string{"--audit-witnesses", "http://127.0.0.1:7380 witness+00000000+AAAA"}, "verifier key"},
		{"one witness named twice", []string{"--audit-witnesses", one + "," + one}, "named twice"},
		{"a quorum of two of one", []string{"--audit-witnesses", one, "--audit-witness-quorum", "2"}, "PORTHOLE_AUDIT_WITNESS_QUORUM"},
		{"a maximum lag without witnesses", []string{"--audit-witness-max-lag", "1m"}, "without PORTHOLE_AUDIT_WITNESSES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a auditSettings
			s := newSettings("serve", "", io.Discard)
			a.register(s)
			if err := s.parse(append(append([]string{}, base...), tc.args...)); err != nil {
				t.Fatal(err)
			}
			l, err := a.open(zap.NewNop(), zap.NewNop(), nil, signer)
			if err == nil {
				l.Close()
			}
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("open = %v, want a usage error saying %q", err, tc.want)
			}
			if _, err := os.Stat(logPath); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the audit log was created before the setting was refused (%v)", err)
			}
		})
	}
}
