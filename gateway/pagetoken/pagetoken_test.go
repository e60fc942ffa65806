package pagetoken

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/redact"
)

func secret(b byte) []byte { return bytes.Repeat([]byte{b}, SecretSize) }

func TestATokenOpensOnlyForTheCallItWasIssuedFor(t *testing.T) {
	t.Parallel()
	s, err := New(secret(1), nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	temporal := "\x0a\x10branch-token-of-workflow-a\x00\xff"
	ad := AD("get_workflow_history", "default", "alice", "order-a", "")
	sealed := s.Seal(temporal, ad)
	if strings.Contains(sealed, base64.RawURLEncoding.EncodeToString([]byte("branch-token"))) || strings.Contains(sealed, "branch") {
		t.Fatalf("the sealed token shows Temporal's bytes: %s", sealed)
	}
	if got, err := s.Open(sealed, ad); err != nil || got != temporal {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for name, other := range map[string][]byte{
		"another workflow":              AD("get_workflow_history", "default", "alice", "order-b", ""),
		"another run":                   AD("get_workflow_history", "default", "alice", "order-a", "run-2"),
		"another principal":             AD("get_workflow_history", "default", "bob", "order-a", ""),
		"another tool":                  AD("list_workflows", "default", "alice", "order-a", ""),
		"another namespace":             AD("get_workflow_history", "orders", "alice", "order-a", ""),
		"parts that run together alike": AD("get_workflow_history", "default", "aliceorder-a", ""),
	} {
		if _, err := s.Open(sealed, other); !errors.Is(err, ErrNotIssued) {
			t.Errorf("%s: %v; want ErrNotIssued", name, err)
		}
	}
	raw, _ := encoding.DecodeString(strings.TrimPrefix(sealed, prefix))
	for i := range raw {
		altered := bytes.Clone(raw)
		altered[i] ^= 0x01
		if _, err := s.Open(prefix+encoding.EncodeToString(altered), ad); !errors.Is(err, ErrNotIssued) {
			t.Fatalf("a token altered at byte %d opened: %v", i, err)
		}
	}
	for _, junk := range []string{"not base32!", base64.RawURLEncoding.EncodeToString([]byte(temporal)), "AQ", strings.TrimPrefix(sealed, prefix), "pAQ"} {
		if _, err := s.Open(junk, ad); !errors.Is(err, ErrNotIssued) {
			t.Errorf("%q opened: %v", junk, err)
		}
	}
	if got, err := s.Open("", ad); got != "" || err != nil || s.Seal("", ad) != "" {
		t.Error("no token is sealed or opened as no token")
	}
}

func TestTheSecretRotatesAndAnotherProcessesKeyOpensNothing(t *testing.T) {
	t.Parallel()
	ad := AD("list_workflows", "default", "alice", "")
	old, _ := New(secret(1), nil, time.Time{})
	sealed := old.Seal("token", ad)
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	rotated, err := New(secret(2), secret(1), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rotated.now = func() time.Time { return now }
	if got, err := rotated.Open(sealed, ad); err != nil || got != "token" {
		t.Fatalf("the previous key's token, while it is accepted: %q, %v", got, err)
	}
	if _, err := old.Open(rotated.Seal("token", ad), ad); !errors.Is(err, ErrNotIssued) {
		t.Error("a token of the new key opened with the old one alone")
	}
	rotated.now = func() time.Time { return now.Add(time.Hour) }
	if _, err := rotated.Open(sealed, ad); !errors.Is(err, ErrNotIssued) {
		t.Error("the previous key's token opened after it stopped being accepted")
	}
	e1, _ := Ephemeral()
	e2, _ := Ephemeral()
	if _, err := e2.Open(e1.Seal("token", ad), ad); !errors.Is(err, ErrNotIssued) {
		t.Error("one process's token opened in another")
	}
	if _, err := New(make([]byte, 16), nil, time.Time{}); err == nil {
		t.Error("a secret of 16 bytes was taken")
	}
}

// TestASealedTokenHoldsNothingTheRedactorTakes: sealed tokens pass the
// wire redactor unchanged, with every detector on, personal data
// included (in base64url about one in 100,000 did not).
func TestASealedTokenHoldsNothingTheRedactorTakes(t *testing.T) {
	t.Parallel()
	s, err := New(bytes.Repeat([]byte{7}, SecretSize), nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := redact.New("tmprl-api-key-0123456789abcdef")
	r = r.WithPersonal(redact.PersonalKinds...)
	token := make([]byte, 120)
	for i := range 200_000 {
		_, _ = rand.Read(token)
		sealed := s.Seal(string(token[:1+i%len(token)]), []byte("ad"))
		doc := `{"nextPageToken":"` + sealed + `"}`
		if out, n := r.JSON([]byte(doc)); n != 0 {
			t.Fatalf("the redactor changed a sealed token: %s", out)
		}
	}
}
