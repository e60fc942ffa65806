package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// introspectionServer answers every token as active, for issuer iss.
func introspectionServer(t *testing.T, iss func() string, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		r.ParseForm()
		json.NewEncoder(w).Encode(map[string]any{"active": true, "iss": iss(), "aud": resource, "sub": "alice",
			"exp": time.Now().Add(time.Hour).Unix(), "scope": "porthole:read", "client_id": "c"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestIntrospectionAnswersForItsOwnIssuerOnly: with two issuers, the
// introspection endpoint's answer naming the other issuer is refused (found
// by review: one authorization server could vouch for another's
// principals), and several issuers without a named one are refused at start.
func TestIntrospectionAnswersForItsOwnIssuerOnly(t *testing.T) {
	t.Parallel()
	a, b := newTestIssuer(t), newTestIssuer(t)
	var calls atomic.Int32
	var answerAs atomic.Value
	answerAs.Store(a.srv.URL)
	in := introspectionServer(t, func() string { return answerAs.Load().(string) }, &calls)
	issuers := []Issuer{{URL: a.srv.URL, Alias: "a"}, {URL: b.srv.URL, Alias: "b"}}
	if _, err := New(Config{Resource: resource, Issuers: issuers, Introspection: &Introspection{URL: in.URL, ClientID: "p", ClientSecret: "s"}}); err == nil {
		t.Fatal("two issuers and an introspection endpoint of no named issuer were accepted")
	}
	v, err := New(Config{Resource: resource, Issuers: issuers, Introspection: &Introspection{URL: in.URL, ClientID: "p", ClientSecret: "s", Issuer: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	id, err := v.Validate(context.Background(), "opaque-token-of-a-000000001")
	if err != nil || id.Principal != "oauth:a:alice" {
		t.Fatalf("an answer for its own issuer: %v, %v", id, err)
	}
	answerAs.Store(b.srv.URL)
	if _, err := v.Validate(context.Background(), "opaque-token-of-b-000000002"); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "answers for") {
		t.Fatalf("an answer naming the other issuer: %v", err)
	}
}

// TestIntrospectionCallsAreBounded: distinct opaque tokens, however many,
// cost the endpoint at most the burst and the rate; the rest are answered
// "busy", not refused as invalid (found by review).
func TestIntrospectionCallsAreBounded(t *testing.T) {
	t.Parallel()
	a := newTestIssuer(t)
	var calls atomic.Int32
	in := introspectionServer(t, func() string { return a.srv.URL }, &calls)
	v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: a.srv.URL, Alias: "a"}}, Introspection: &Introspection{URL: in.URL, ClientID: "p", ClientSecret: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	start := time.Now()
	busy := 0
	for i := range 200 {
		_, err := v.Validate(context.Background(), fmt.Sprintf("opaque-token-%06d-xxxxxxxx", i))
		if errors.Is(err, ErrIntrospectionBusy) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	allowed := IntrospectionBurst + int(IntrospectionRate*time.Since(start).Seconds()) + 1
	if n := int(calls.Load()); n > allowed || busy == 0 || n+busy != 200 {
		t.Fatalf("200 tokens: %d introspections (at most %d), %d busy", n, allowed, busy)
	}
}

// TestARecentlyValidTokenIsNotStarvedByStrangers: with the budget for new
// tokens used up by strangers' random ones, a token the endpoint vouched
// for within RecentlyValid, whose held answer has run out, is asked about
// again within the reserved budget and admitted; a stranger's is still
// busy, and a token vouched for longer ago than RecentlyValid is a
// stranger's again.
func TestARecentlyValidTokenIsNotStarvedByStrangers(t *testing.T) {
	t.Parallel()
	a := newTestIssuer(t)
	var calls atomic.Int32
	in := introspectionServer(t, func() string { return a.srv.URL }, &calls)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: a.srv.URL, Alias: "a"}}, Now: now,
		Introspection: &Introspection{URL: in.URL, ClientID: "p", ClientSecret: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	const agent = "opaque-token-of-the-agent-0001"
	if _, err := v.Validate(context.Background(), agent); err != nil {
		t.Fatal(err)
	}
	strangers := func() (busy int) {
		for i := range 100 {
			if _, err := v.Validate(context.Background(), fmt.Sprintf("opaque-token-stranger-%06d-%d", i, clock.Load())); errors.Is(err, ErrIntrospectionBusy) {
				busy++
			}
		}
		return busy
	}
	if strangers() == 0 {
		t.Fatal("a hundred strangers' tokens used no more than the budget for new tokens")
	}
	clock.Add(int64(introspectionTTL + time.Second)) // the agent's held answer has run out
	if !v.WasRecentlyValid(agent) {
		t.Fatal("the agent's token is not recently valid")
	}
	asked := calls.Load()
	if _, err := v.Validate(context.Background(), agent); err != nil {
		t.Fatalf("the agent's token after strangers used the budget for new tokens: %v", err)
	}
	if calls.Load() != asked+1 {
		t.Fatal("the agent's token was not asked about again")
	}
	if _, err := v.Validate(context.Background(), "opaque-token-stranger-after-000"); !errors.Is(err, ErrIntrospectionBusy) {
		t.Fatalf("a stranger's token with the budget for new tokens used up: %v, want busy", err)
	}
	clock.Add(int64(RecentlyValid + time.Second))
	if v.WasRecentlyValid(agent) {
		t.Fatalf("the agent's token is recently valid %s after it was last vouched for", RecentlyValid+time.Second)
	}
}
