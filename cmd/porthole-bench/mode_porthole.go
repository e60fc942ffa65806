package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit"
	"github.com/porthole-dev/porthole/gateway/limit/redislimit/redistest"
	"github.com/porthole-dev/porthole/gateway/oauth/oidctest"
	"github.com/porthole-dev/porthole/gateway/pseudonym"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/gateway/tracetest"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// startOAuthPorthole runs the real authorization server (oidc-provider,
// as the OAuth tests do) and a porthole like the porthole mode's that
// trusts it, and returns that porthole and an access token for it from
// the provider (client credentials, RS256 at+jwt).
func (r *rig) startOAuthPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, string, error) {
	work := filepath.Join(dir, "oidc")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, "", err
	}
	p, stop, err := oidctest.Launch(oidctest.Options{TokenTTL: time.Hour}, work)
	if err != nil {
		return nil, "", err
	}
	r.onClose(stop)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	resource := "http://" + addr + "/mcp"
	token, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		return nil, "", err
	}
	e := append(env("oauth", "0"), "PORTHOLE_ADDR="+addr, "PORTHOLE_PUBLIC_URL="+resource, "PORTHOLE_OAUTH_ISSUER=bench="+p.Issuer())
	s, err := r.startServer(ctx, bin, []string{"serve"}, e, "serving MCP")
	return s, token, err
}

// startRedisPorthole runs a real Redis (redis-server, as the tests do) and
// a porthole like the porthole mode's whose limits are shared there, and
// returns that porthole and a call that is the Redis round trip alone: the
// charge porthole makes per call, made from this process with the same
// client and script.
func (r *rig) startRedisPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, func(context.Context) error, error) {
	work := filepath.Join(dir, "redis")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, nil, err
	}
	rs, err := redistest.Launch(redistest.Options{}, work)
	if err != nil {
		return nil, nil, err
	}
	r.onClose(rs.Stop)
	s, err := r.startServer(ctx, bin, []string{"serve"}, append(env("redis", "0"), "PORTHOLE_REDIS_URL="+rs.URL()), "serving MCP")
	if err != nil {
		return nil, nil, err
	}
	high := limit.Limits{PerPrincipal: 1000000, PerPrincipalBurst: 1000000, Global: 1000000, GlobalBurst: 1000000}
	store, err := redislimit.New(redislimit.Options{URL: rs.URL(), Prefix: "porthole-bench-rtt", Limits: high, FailedAuthBurst: 1, FailedAuthEvery: time.Second, Timeout: time.Second})
	if err != nil {
		return nil, nil, err
	}
	r.onClose(func() { store.Close() })
	rtt := func(ctx context.Context) error {
		ref, err := store.Charge(ctx, "bench", 1, true)
		if err == nil && ref != nil {
			err = fmt.Errorf("the bench's charge was refused: %+v", ref)
		}
		return err
	}
	return s, rtt, nil
}

// startTracedPorthole runs a real Jaeger (as the tracing tests do) and a
// porthole like the porthole mode's that traces its calls to it with the
// sampler named (OTEL_TRACES_SAMPLER and its argument).
func (r *rig) startTracedPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string, sampler, samplerArg string) (*server, error) {
	work := filepath.Join(dir, "jaeger")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	j, err := tracetest.Launch(work)
	if err != nil {
		return nil, err
	}
	r.onClose(j.Stop)
	e := append(env("traced", "0"), "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPEndpoint, "OTEL_TRACES_SAMPLER="+sampler, "OTEL_SERVICE_NAME=porthole-bench")
	if samplerArg != "" {
		e = append(e, "OTEL_TRACES_SAMPLER_ARG="+samplerArg)
	}
	return r.startServer(ctx, bin, []string{"serve"}, e, "serving MCP")
}

// portholeEnv makes a token and an audit key in dir and returns the token
// and the environment of a porthole named name (its audit log's name) with
// the cache TTL cache: rate limits too high to reach, and nothing from this
// process's own porthole or Temporal settings.
func portholeEnv(dir string, srv *temporaltest.DevServer, pprof bool) (token string, env func(name, cache string) []string, err error) {
	tokensFile := filepath.Join(dir, "tokens")
	if token, err = tokens.Append(tokensFile, "bench"); err != nil {
		return "", nil, err
	}
	key := filepath.Join(dir, "audit.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		return "", nil, err
	}
	env = func(name, cache string) []string {
		return append(ownEnviron(),
			"TEMPORAL_ADDRESS="+srv.FrontendHostPort(), "TEMPORAL_NAMESPACE="+srv.Namespace,
			"PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_ADMIN_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+tokensFile,
			"PORTHOLE_AUDIT_LOG="+filepath.Join(dir, name+".audit.log"), "PORTHOLE_AUDIT_KEY_FILE="+key,
			"PORTHOLE_RATE_PER_PRINCIPAL=1000000", "PORTHOLE_RATE_PER_PRINCIPAL_BURST=1000000",
			"PORTHOLE_RATE_GLOBAL=1000000", "PORTHOLE_RATE_GLOBAL_BURST=1000000", "PORTHOLE_FAILED_AUTH_BURST=1000000",
			"PORTHOLE_CACHE_TTL="+cache, "PORTHOLE_LOG_LEVEL=info", fmt.Sprintf("PORTHOLE_ADMIN_PPROF=%t", pprof))
	}
	return token, env, nil
}

// profiledPolicy grants the bench's principal every tool with a disclosure
// profile that withholds worker identities and runs the e-mail detector on
// the free text it keeps: each answer is copied where it changes, its
// identities removed and its failure messages read by the detector.
const profiledPolicy = `{"principals": {"bench": {"tools": ["*"], "profile": "vendor"}},
 "profiles": {"vendor": {"classes": {"worker-identity": "withhold"}, "personal": ["email"]}}}`

// startProfiledPorthole runs a porthole like the porthole mode's whose
// policy file gives the bench's principal a disclosure profile.
func (r *rig) startProfiledPorthole(ctx context.Context, bin, dir string, env func(name, cache string) []string) (*server, error) {
	policy := filepath.Join(dir, "profiled-policy.json")
	if err := os.WriteFile(policy, []byte(profiledPolicy), 0o600); err != nil {
		return nil, err
	}
	return r.startServer(ctx, bin, []string{"serve"}, append(env("profiled", "0"), "PORTHOLE_POLICY_FILE="+policy), "serving MCP")
}

// pseudonymisedPolicy grants the bench's principal every tool with a
// disclosure profile that shows workflow ids, run ids and worker
// identities as pseudonyms.
const pseudonymisedPolicy = `{"principals": {"bench": {"tools": ["*"], "profile": "vendor"}},
 "profiles": {"vendor": {"classes": {"workflow-id": "pseudonymise", "run-id": "pseudonymise", "worker-identity": "pseudonymise"}}}}`

// startPseudonymisedPorthole runs a porthole like the porthole mode's whose
// policy file gives the bench's principal a profile that pseudonymises,
// with a secret key of the bench's, and returns it and the running
// workflow's pseudonym under that key, by which the mode asks for it.
func (r *rig) startPseudonymisedPorthole(ctx context.Context, bin, dir, namespace string, env func(name, cache string) []string) (*server, string, error) {
	policy, secretFile := filepath.Join(dir, "pseudonymised-policy.json"), filepath.Join(dir, "pseudonymised-secret")
	secret := make([]byte, pseudonym.SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(policy, []byte(pseudonymisedPolicy), 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(secretFile, []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		return nil, "", err
	}
	m, err := pseudonym.New(secret, nil, time.Time{})
	if err != nil {
		return nil, "", err
	}
	s, err := r.startServer(ctx, bin, []string{"serve"}, append(env("pseudonymised", "0"), "PORTHOLE_POLICY_FILE="+policy, "PORTHOLE_SECRET_KEY_FILE="+secretFile), "serving MCP")
	return s, m.Make("vendor", "workflow-id", namespace, temporaltest.RunningWorkflowID), err
}

// merkleOrigin is the origin of the merkle mode's audit tree.
const merkleOrigin = "bench.porthole.example/audit/merkle"

// startSigningPorthole runs a porthole like the porthole mode's that signs
// checkpoints of its audit log at the default cadence, with a signing key
// of the bench's, appending each to a checkpoint file beside the log (on
// its volume, as PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME allows), and, given
// an origin, keeps the log's records as a Merkle tree under it, each
// checkpoint carrying the tree's signed note.
func (r *rig) startSigningPorthole(ctx context.Context, bin, dir, name, origin string, env func(name, cache string) []string) (*server, error) {
	priv, _, err := audit.GenerateSigningKey()
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, name+"-signing-key.pem")
	if err := os.WriteFile(keyFile, priv, 0o600); err != nil {
		return nil, err
	}
	e := append(env(name, "0"), "PORTHOLE_AUDIT_SIGNING_KEY_FILE="+keyFile,
		"PORTHOLE_AUDIT_CHECKPOINT_FILE="+filepath.Join(dir, name+".checkpoints"), "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true")
	if origin != "" {
		e = append(e, "PORTHOLE_AUDIT_ORIGIN="+origin)
	}
	s, err := r.startServer(ctx, bin, []string{"serve"}, e, "serving MCP")
	if err != nil {
		return nil, err
	}
	// A porthole that kept no tree would be measured as one that did.
	if origin != "" {
		if _, err := os.Stat(filepath.Join(dir, name+".audit.log"+audit.TreeSuffix)); err != nil {
			return nil, fmt.Errorf("the %s mode's porthole keeps no audit tree: %w", name, err)
		}
	}
	return s, nil
}
