package pseudonym

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func secret(b byte) []byte { return bytes.Repeat([]byte{b}, SecretSize) }

// TestAPseudonymOpensOnlyForItsProfileClassNamespaceAndKey: one value is
// one pseudonym for one profile, class and namespace, across Makers of one
// secret; it opens to the value for them and for nothing else; another
// secret's (another deployment's) does not open; the previous secret's
// opens until its time.
func TestAPseudonymOpensOnlyForItsProfileClassNamespaceAndKey(t *testing.T) {
	t.Parallel()
	a, _ := New(secret(1), nil, time.Time{})
	b, _ := New(secret(1), nil, time.Time{}) // another replica, or after a restart
	p := a.Make("vendor", "workflow-id", "default", "order-jane@example.com")
	if p != b.Make("vendor", "workflow-id", "default", "order-jane@example.com") || !strings.HasPrefix(p, Prefix) {
		t.Fatalf("not stable across Makers of one secret: %q", p)
	}
	if strings.Contains(p, "jane") || strings.ToLower(p) != p {
		t.Errorf("the pseudonym %q", p)
	}
	if v, err := b.Open("vendor", "workflow-id", "default", p); err != nil || v != "order-jane@example.com" {
		t.Fatalf("open: %q, %v", v, err)
	}
	for name, open := range map[string]func() (string, error){
		"another profile":   func() (string, error) { return a.Open("other", "workflow-id", "default", p) },
		"another class":     func() (string, error) { return a.Open("vendor", "task-queue", "default", p) },
		"another namespace": func() (string, error) { return a.Open("vendor", "workflow-id", "prod", p) },
		"another secret": func() (string, error) {
			c, _ := New(secret(2), nil, time.Time{})
			return c.Open("vendor", "workflow-id", "default", p)
		},
		"an altered one": func() (string, error) { return a.Open("vendor", "workflow-id", "default", p[:20]+"a"+p[21:]) },
		"a real value":   func() (string, error) { return a.Open("vendor", "workflow-id", "default", "order-jane@example.com") },
	} {
		if v, err := open(); err == nil {
			t.Errorf("%s opened to %q", name, v)
		}
	}
	if a.Make("other", "workflow-id", "default", "order-jane@example.com") == p {
		t.Error("two profiles' pseudonyms of one value are linked")
	}
	rotated, _ := New(secret(3), secret(1), time.Now().Add(time.Hour))
	if v, err := rotated.Open("vendor", "workflow-id", "default", p); err != nil || v != "order-jane@example.com" {
		t.Errorf("the previous secret's pseudonym within its time: %q, %v", v, err)
	}
	rotated.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := rotated.Open("vendor", "workflow-id", "default", p); err == nil {
		t.Error("the previous secret's pseudonym opened after its time")
	}
}

// TestThePreviousKeyOpensWhenItsIdIsTheCurrentOnes: the key id is one
// byte, so two secrets' keys can share it; a pseudonym of either then
// opens, each under its own key.
func TestThePreviousKeyOpensWhenItsIdIsTheCurrentOnes(t *testing.T) {
	t.Parallel()
	current := secret(1)
	want, _ := derive(current, "vendor")
	var previous []byte
	for i := 0; i < 1<<16 && previous == nil; i++ {
		s := secret(2)
		s[0], s[1] = byte(i), byte(i>>8)
		if k, _ := derive(s, "vendor"); k.id == want.id {
			previous = s
		}
	}
	if previous == nil {
		t.Fatal("no secret of 65,536 has the current key's id")
	}
	old, _ := New(previous, nil, time.Time{})
	p := old.Make("vendor", "workflow-id", "default", "order-1")
	rotated, _ := New(current, previous, time.Now().Add(time.Hour))
	if v, err := rotated.Open("vendor", "workflow-id", "default", p); err != nil || v != "order-1" {
		t.Errorf("the previous key's pseudonym under a shared id: %q, %v", v, err)
	}
	q := rotated.Make("vendor", "workflow-id", "default", "order-2")
	if v, err := rotated.Open("vendor", "workflow-id", "default", q); err != nil || v != "order-2" {
		t.Errorf("the current key's pseudonym under a shared id: %q, %v", v, err)
	}
}

// TestAPseudonymRevealsOnlyItsLengthClass: values of different lengths
// within one bucket make pseudonyms of one length.
func TestAPseudonymRevealsOnlyItsLengthClass(t *testing.T) {
	t.Parallel()
	m, _ := New(secret(1), nil, time.Time{})
	lengths := map[int]bool{}
	for n := 0; n < 16; n++ {
		lengths[len(m.Make("p", "run-id", "ns", strings.Repeat("x", n)))] = true
	}
	if len(lengths) != 1 {
		t.Errorf("values of 0 to 15 bytes made pseudonyms of %d lengths", len(lengths))
	}
	if len(m.Make("p", "run-id", "ns", strings.Repeat("x", 16))) == len(m.Make("p", "run-id", "ns", "x")) {
		t.Error("16 bytes is the next bucket")
	}
	// Ten classes from 0 to 256 bytes: 16, 24, 32, 48, 64, 96, 128, 192,
	// 256 and 512.
	lengths = map[int]bool{}
	for n := 0; n <= 256; n++ {
		lengths[len(m.Make("p", "run-id", "ns", strings.Repeat("x", n)))] = true
	}
	if len(lengths) != 10 {
		t.Errorf("values of 0 to 256 bytes made pseudonyms of %d lengths", len(lengths))
	}
	for _, n := range []int{0, 15, 16, 255, 256, 999} {
		v := strings.Repeat("y", n)
		if got, err := m.Open("p", "run-id", "ns", m.Make("p", "run-id", "ns", v)); err != nil || got != v {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

// FuzzOpenRefusesWhatItDidNotMake: whatever a caller sends, Open does not
// panic, and what opens is exactly what Make gives back for the value.
func FuzzOpenRefusesWhatItDidNotMake(f *testing.F) {
	m, _ := New(secret(1), nil, time.Time{})
	f.Add(m.Make("vendor", "workflow-id", "default", "order-1"))
	f.Add("ps")
	f.Add("psaaaa")
	f.Add(Prefix + strings.Repeat("a", 60))
	f.Fuzz(func(t *testing.T, s string) {
		v, err := m.Open("vendor", "workflow-id", "default", s)
		if err != nil {
			return
		}
		if m.Make("vendor", "workflow-id", "default", v) != s {
			t.Fatalf("%q opened to %q, which makes another pseudonym", s, v)
		}
	})
}
