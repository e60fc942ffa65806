package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
	"github.com/porthole-dev/porthole/gateway/oauth/oidctest"
	"github.com/porthole-dev/porthole/policy"
)

// oauthPorthole is a porthole serving with OAuth alone (no tokens file),
// trusting provider p, with introspection.
type oauthPorthole struct {
	endpoint, resource, auditLog string
	proc                         *process
}

func startOAuthPorthole(t *testing.T, p *oidctest.Provider, extraEnv ...string) *oauthPorthole {
	t.Helper()
	addr := freePort(t)
	resource := "http://" + addr + "/mcp"
	secret := filepath.Join(t.TempDir(), "introspection-secret")
	if err := os.WriteFile(secret, []byte(oidctest.ClientSecret(oidctest.ResourceServerClientID)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, auditLog, _ := auditEnv(t)
	env = append(env, "PORTHOLE_ADDR="+addr, "PORTHOLE_PUBLIC_URL="+resource, "PORTHOLE_OAUTH_ISSUER=corp="+p.Issuer(),
		"PORTHOLE_OAUTH_INTROSPECTION_URL="+p.IntrospectionURL(), "PORTHOLE_OAUTH_INTROSPECTION_CLIENT_ID="+oidctest.ResourceServerClientID,
		"PORTHOLE_OAUTH_INTROSPECTION_CLIENT_SECRET_FILE="+secret)
	env = append(env, extraEnv...)
	proc, _ := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
	return &oauthPorthole{endpoint: resource, resource: resource, auditLog: auditLog, proc: proc}
}

// status is the HTTP status of a describe_namespace call with token.
func (o *oauthPorthole) status(token string) int {
	return callRaw(o.endpoint, token, "describe_namespace", nil).status
}

// eventually polls until f holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(250 * time.Millisecond) {
		if f() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s did not happen within %s", what, d)
		}
	}
}

// TestOAuthTokensOfARealAuthorizationServer: porthole against panva's
// oidc-provider. Every token porthole must accept comes from the provider;
// the refusals are the list, each from the provider where it can
// make one.
func TestOAuthTokensOfARealAuthorizationServer(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, p)
	must := func(tok string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := must(p.ClientCredentialsToken(o.resource, "porthole:read"))
	eventually(t, 10*time.Second, "porthole accepting the provider's token", func() bool { return o.status(good) == http.StatusOK })

	signing, _ := p.SigningKey()
	other := oidctest.Start(t, oidctest.Options{Key: signing})
	key, kid := p.SigningKey()
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": p.Issuer(), "sub": "mallory", "aud": o.resource, "scope": "porthole:read", "exp": time.Now().Add(time.Hour).Unix()})
	hs.Header["kid"], hs.Header["typ"] = kid, "at+jwt"
	hsToken, _ := hs.SignedString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	for _, c := range []struct {
		name  string
		token string
		want  int
	}{
		{"another audience", must(p.ClientCredentialsToken("http://127.0.0.1:1/other/mcp", "porthole:read")), 401},
		{"another issuer, the same key", must(other.ClientCredentialsToken(o.resource, "porthole:read")), 401},
		{"expired", must(p.ExpiredToken(o.resource, "porthole:read")), 401},
		{"not yet valid", must(p.NotYetValidToken(o.resource, "porthole:read")), 401},
		{"alg switched to HS256 over the public key", hsToken, 401},
		{"without the scope", must(p.ClientCredentialsToken(o.resource)), 403},
		{"opaque, through introspection", must(p.OpaqueToken(o.resource, "porthole:read")), 200},
		{"opaque, for another resource", must(p.OpaqueToken("http://127.0.0.1:1/other/mcp", "porthole:read")), 401},
	} {
		if got := o.status(c.token); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}

	// A revoked opaque token is refused within the introspection cache's
	// 30 s.
	revoked := must(p.OpaqueToken(o.resource, "porthole:read"))
	if got := o.status(revoked); got != 200 {
		t.Fatalf("an opaque token before revocation: %d", got)
	}
	if err := p.Revoke(revoked); err != nil {
		t.Fatal(err)
	}
	eventually(t, 35*time.Second, "the revoked token refused", func() bool { return o.status(revoked) == http.StatusUnauthorized })

	// The provider restarts with new keys: a token of the new kid is
	// accepted once porthole fetches the keys again (at most once a
	// minute for unknown kids).
	p.Restart(true)
	fresh := must(p.ClientCredentialsToken(o.resource, "porthole:read"))
	eventually(t, 75*time.Second, "a token of the provider's new key accepted", func() bool { return o.status(fresh) == http.StatusOK })

	o.proc.stop(t)
	b, err := os.ReadFile(o.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"clientId":"\"`+oidctest.AgentClientID+`\""`) || !strings.Contains(string(b), `"principal":"\"oauth:corp:`) {
		t.Fatalf("the audit log does not say who called through which client:\n%s", b)
	}
	for _, tok := range []string{good, revoked, fresh} {
		if strings.Contains(string(b), tok) || strings.Contains(o.proc.logs.String(), tok) {
			t.Fatal("a token is in the audit log or the operations log")
		}
	}
}

// TestAnMCPClientFindsTheAuthorizationServerFromA401: the go-sdk's client,
// given only porthole's URL, is answered 401, reads the protected resource
// metadata, runs the authorization-code flow with PKCE at the provider
// (its development login standing in for a person), and calls tools.
func TestAnMCPClientFindsTheAuthorizationServerFromA401(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, p)
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: oidctest.PublicClientID},
		RedirectURL:         "http://127.0.0.1:9/callback",
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			r, err := p.Login(ctx, args.URL, "alice")
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: r.Code, State: r.State, Iss: r.Iss}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "porthole-oauth-e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: o.endpoint, OAuthHandler: handler, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting with OAuth: %v\n%s", err, o.proc.logs.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_namespace", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("describe_namespace: %v %+v", err, res)
	}
	o.proc.stop(t)
	b, _ := os.ReadFile(o.auditLog)
	if !strings.Contains(string(b), `"principal":"\"oauth:corp:alice\""`) || !strings.Contains(string(b), `"clientId":"\"`+oidctest.PublicClientID+`\""`) {
		t.Fatalf("the audit log does not name alice through %s:\n%s", oidctest.PublicClientID, b)
	}
}

// TestTypeScriptSDKWithAnOAuthToken: the TypeScript SDK's client calls
// every tool through porthole with an access token from the real
// authorization server, as it does with a static token.
func TestTypeScriptSDKWithAnOAuthToken(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	p := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, p)
	token, err := p.ClientCredentialsToken(o.resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "porthole accepting the provider's token", func() bool { return o.status(token) == http.StatusOK })
	script, _ := filepath.Abs(filepath.Join("testdata", "clients", "list-and-call.mjs"))
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "list-and-call-oauth.mjs")
	if err := os.WriteFile(copyPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	calls, _ := json.Marshal(everyCallArgs())
	out, err := runNode(t, dir, node, copyPath, o.endpoint, token, string(calls))
	var got struct {
		Tools   []struct{ Name string } `json:"tools"`
		Results []struct {
			Name    string `json:"name"`
			IsError bool   `json:"isError"`
		} `json:"results"`
	}
	if err != nil || json.Unmarshal([]byte(lastJSON(out)), &got) != nil {
		t.Fatalf("TypeScript SDK client with an OAuth token: %v\n%s", err, out)
	}
	if len(got.Tools) != len(policy.Tools) || len(got.Results) != len(everyCallArgs()) {
		t.Fatalf("the TypeScript SDK saw %d tools and %d results:\n%s", len(got.Tools), len(got.Results), out)
	}
	for _, r := range got.Results {
		if r.IsError {
			t.Errorf("%s failed through the TypeScript SDK with an OAuth token", r.Name)
		}
	}
}

// TestATypeScriptConnectorGetsItsChallengeAfterAHundredTokenlessRequests:
// a hundred requests without a token from one address, each answered 401
// with the challenge, and then the TypeScript SDK's OAuth flow (auth(),
// from a bare URL, the test logging in at the provider for the person)
// from the same address reaches a tool result: first contacts are never
// counted as failed authentications, so they cannot turn a connector's
// challenge into a 429.
func TestATypeScriptConnectorGetsItsChallengeAfterAHundredTokenlessRequests(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	p := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, p)
	for i := 0; i < 100; i++ {
		req, _ := http.NewRequest(http.MethodPost, o.endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`) {
			t.Fatalf("token-less request %d: status %d, WWW-Authenticate %q; want 401 naming the resource metadata", i, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "clients", "oauth-from-a-bare-url.mjs"))
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "oauth-from-a-bare-url.mjs")
	if err := os.WriteFile(copyPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, copyPath, o.endpoint, oidctest.PublicClientID, "http://127.0.0.1:9/callback")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CI=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		var line struct {
			Authorize string `json:"authorize"`
		}
		if json.Unmarshal(lines.Bytes(), &line) != nil || line.Authorize == "" {
			result = lines.Text()
			continue
		}
		r, err := p.Login(ctx, line.Authorize, "alice")
		if err != nil {
			t.Fatalf("logging in at %s: %v", line.Authorize, err)
		}
		fmt.Fprintln(stdin, r.Code)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the TypeScript connector: %v\n%s\n%s", err, result, stderr.String())
	}
	var got struct {
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structured"`
	}
	if json.Unmarshal([]byte(result), &got) != nil || got.IsError || got.Structured["namespace"] == nil {
		t.Fatalf("the TypeScript connector's describe_namespace: %s\n%s", result, stderr.String())
	}
}

// fromAddress is an HTTP client whose connections leave from the loopback
// address ip (any of 127.0.0.0/8 can be bound on Linux) and, when to is
// not empty, go to the address to whatever the URL's host, as a load
// balancer in front of replicas sends them.
func fromAddress(ip, to string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	dial := d.DialContext
	if to != "" {
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) { return d.DialContext(ctx, network, to) }
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 4}}
}

// postList posts tools/list with token (and X-Forwarded-For, if given) and
// returns the status.
func postList(c *http.Client, endpoint, token, forwardedFor string) int {
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	resp, err := c.Do(req)
	if err != nil {
		return -1
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestStrangersCannotStarveValidOpaqueTokens: while random opaque tokens
// arrive at 50 a second from 64 loopback addresses, and at 50 a second
// more through a trusted proxy's X-Forwarded-For from 10,000 IPv6
// addresses in 100 /64s, ten opaque tokens of oidc-provider that were
// valid when the flood began are answered 200 within 2 s throughout,
// across the 30 s after which porthole asks the introspection endpoint
// about each of them again.
func TestStrangersCannotStarveValidOpaqueTokens(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t, oidctest.Options{})
	o := startOAuthPorthole(t, p, "PORTHOLE_TRUSTED_PROXIES=127.0.0.1/32")
	holdThroughFlood(t, p, o.endpoint, "", "")
}

// TestStrangersCannotStarveValidOpaqueTokensAcrossReplicas: the same, with
// two replicas sharing Redis behind one public URL: the ten tokens are
// first validated by one replica, and then sent only to the other, which
// the whole flood reaches and which has never asked about them. It learns
// from Redis that they were vouched for.
func TestStrangersCannotStarveValidOpaqueTokensAcrossReplicas(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t, oidctest.Options{})
	redis := redistest.Start(t, redistest.Options{})
	a := startOAuthPorthole(t, p, "PORTHOLE_TRUSTED_PROXIES=127.0.0.1/32", "PORTHOLE_REDIS_URL="+redis.URL())
	b := startOAuthPorthole(t, p, "PORTHOLE_TRUSTED_PROXIES=127.0.0.1/32", "PORTHOLE_REDIS_URL="+redis.URL(), "PORTHOLE_PUBLIC_URL="+a.resource)
	holdThroughFlood(t, p, a.endpoint, hostOf(t, a.endpoint), hostOf(t, b.endpoint))
}

func hostOf(t *testing.T, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// holdThroughFlood validates ten opaque tokens of p for endpoint at the
// address primeAt, then floods the address floodAt with strangers' random
// tokens for 36 s while sending the ten tokens there, each answer wanted
// 200 within 2 s; an empty address is the endpoint's own.
func holdThroughFlood(t *testing.T, p *oidctest.Provider, endpoint, primeAt, floodAt string) {
	t.Helper()
	primer := fromAddress("127.0.0.2", primeAt)
	agent := fromAddress("127.0.0.2", floodAt)
	var valid []string
	for range 10 {
		tok, err := p.OpaqueToken(endpoint, "porthole:read")
		if err != nil {
			t.Fatal(err)
		}
		valid = append(valid, tok)
	}
	for _, tok := range valid {
		if status := postList(primer, endpoint, tok, ""); status != http.StatusOK {
			t.Fatalf("a valid opaque token before the flood: %d", status)
		}
	}
	const flood = 36 * time.Second // past the 30 s a positive answer is held
	ctx, stop := context.WithTimeout(context.Background(), flood)
	defer stop()
	var wg sync.WaitGroup
	var sent, answered atomic.Int64
	strangers := make([]*http.Client, 64)
	for i := range strangers {
		strangers[i] = fromAddress(fmt.Sprintf("127.0.1.%d", i+1), floodAt)
	}
	proxy := fromAddress("127.0.0.1", floodAt)
	pace := func(every time.Duration, send func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			sem := make(chan struct{}, 64)
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				select {
				case sem <- struct{}{}:
				default:
					continue // the bound on requests in flight: this tick is skipped
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					sent.Add(1)
					send(i)
					answered.Add(1)
				}()
			}
		}()
	}
	random := func() string { return fmt.Sprintf("stranger-%016x%016x", rand.Uint64(), rand.Uint64()) }
	pace(20*time.Millisecond, func(i int) { postList(strangers[i%64], endpoint, random(), "") })
	pace(20*time.Millisecond, func(int) {
		postList(proxy, endpoint, random(), fmt.Sprintf("2001:db8:0:%x::%x", rand.IntN(100), rand.IntN(100)+1))
	})
	var worst time.Duration
	began := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		start := time.Now()
		status := postList(agent, endpoint, valid[i%len(valid)], "")
		took := time.Since(start)
		worst = max(worst, took)
		if status != http.StatusOK || took > 2*time.Second {
			stop()
			wg.Wait()
			t.Fatalf("%s into the flood, valid token %d: status %d after %s; want 200 within 2 s", time.Since(began).Round(time.Second), i%len(valid), status, took)
		}
		time.Sleep(400 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("strangers sent %d requests (%d answered); the valid tokens' slowest answer took %s", sent.Load(), answered.Load(), worst)
	if sent.Load() < int64(flood/(20*time.Millisecond)) {
		t.Fatalf("the flood sent %d requests, fewer than one side's pace", sent.Load())
	}
}
