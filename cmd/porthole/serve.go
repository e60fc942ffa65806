package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/tlsserver"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

const serveSummary = `Serve MCP over streamable HTTP at POST /mcp, stateless, with JSON responses.
Every request needs "Authorization: Bearer <token>" with a token whose digest is in
the tokens file (make one with 'porthole token new'). Without a tokens file the
HTTP listener is not started, unless authentication is deliberately switched off.
A separate admin listener serves /healthz, /readyz and /metrics.`

// shutdownGrace bounds how long SIGTERM waits for calls in flight.
const shutdownGrace = 10 * time.Second

// frontSettings are the HTTP front's settings.
type frontSettings struct {
	addr, adminAddr         string
	tokensFile              string
	adminTokensFile         string
	tokensReload            time.Duration
	noAuth                  bool
	hosts, origins, proxies string
	loopbackOrigins         bool
	ratePer, rateGlobal     float64
	burstPer, burstGlobal   int
	maxBody                 int64
	failedAuthBurst         int
	clientIPv6Prefix        int
	cacheTTL                time.Duration
	legacySSE               bool
	sseMaxPerPrincipal      int
	sseMaxStreams           int
	sseIdleTimeout          time.Duration
	pprof                   bool
	tls                     tlsserver.Files
}

func (f *frontSettings) register(s *settings) {
	s.string(&f.addr, "addr", "PORTHOLE_ADDR", "127.0.0.1:8082", "address the MCP listener binds")
	s.string(&f.tls.Cert, "tls-cert-file", "PORTHOLE_TLS_CERT_FILE", "", "PEM certificate (chain) the MCP listener serves TLS with, read again when it changes; with --tls-key-file")
	s.string(&f.tls.Key, "tls-key-file", "PORTHOLE_TLS_KEY_FILE", "", "PEM private key of --tls-cert-file, read again when it changes")
	s.string(&f.tls.ClientCA, "tls-client-ca-file", "PORTHOLE_TLS_CLIENT_CA_FILE", "", "PEM CA certificates whose client certificates the MCP listener requires, beside the bearer token (a second factor, never a replacement); the subject is audited")
	s.string(&f.adminAddr, "admin-addr", "PORTHOLE_ADMIN_ADDR", "127.0.0.1:9090", "address of the admin listener (/healthz, /readyz, /metrics); empty turns it off")
	s.string(&f.adminTokensFile, "admin-tokens-file", "PORTHOLE_ADMIN_TOKENS_FILE", "", "tokens file (as porthole token new writes) whose tokens /metrics and the profiler ask for; without it they ask for none. /healthz and /readyz never ask")
	s.bool(&f.pprof, "admin-pprof", "PORTHOLE_ADMIN_PPROF", "serve Go's profiler at /debug/pprof/ on the admin listener")
	s.string(&f.tokensFile, "tokens-file", "PORTHOLE_TOKENS_FILE", "", "file of principal names and token digests; reloaded when it changes and on SIGHUP")
	numeric(s, &f.tokensReload, "tokens-reload", "PORTHOLE_TOKENS_RELOAD", 2*time.Second, false, "how often the tokens file, the OAuth withdrawals file and the TLS files are checked for changes")
	s.bool(&f.noAuth, "dangerously-serve-without-authentication", "PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION",
		"serve everyone as principal \"anonymous\" with no token; logged at every start")
	s.string(&f.hosts, "allowed-hosts", "PORTHOLE_ALLOWED_HOSTS", "localhost,127.0.0.1,::1", "comma-separated Host names (optionally with :port) the MCP listener answers; others get 403")
	s.string(&f.origins, "allowed-origins", "PORTHOLE_ALLOWED_ORIGINS", "", "comma-separated browser origins (scheme://host[:port]) allowed to call, whose pages get CORS; a request with another Origin gets 403")
	s.boolDefault(&f.loopbackOrigins, "allow-loopback-origins", "PORTHOLE_ALLOW_LOOPBACK_ORIGINS", true, "allow browser pages served from this machine (localhost, 127.0.0.1, [::1], any port), with CORS")
	s.string(&f.proxies, "trusted-proxies", "PORTHOLE_TRUSTED_PROXIES", "", "comma-separated CIDRs whose X-Forwarded-For is believed; from anyone else it is ignored")
	numeric(s, &f.ratePer, "rate-per-principal", "PORTHOLE_RATE_PER_PRINCIPAL", 5, false, "each principal's sustained rate, in read units per second (a describe is 1, a list 2, a history page 3)")
	numeric(s, &f.burstPer, "rate-per-principal-burst", "PORTHOLE_RATE_PER_PRINCIPAL_BURST", 20, false, "each principal's burst, in read units")
	numeric(s, &f.rateGlobal, "rate-global", "PORTHOLE_RATE_GLOBAL", 15, false, "the rate across all principals, in read units per second; keep it under the namespace's own limit")
	numeric(s, &f.burstGlobal, "rate-global-burst", "PORTHOLE_RATE_GLOBAL_BURST", 30, false, "the global burst, in read units")
	numeric(s, &f.maxBody, "max-body-bytes", "PORTHOLE_MAX_BODY_BYTES", 1<<20, false, "largest request body; larger ones get 413")
	numeric(s, &f.failedAuthBurst, "failed-auth-burst", "PORTHOLE_FAILED_AUTH_BURST", 10, false, "failed authentications allowed per client address before 429 (then one per 6s)")
	numeric(s, &f.clientIPv6Prefix, "client-ipv6-prefix", "PORTHOLE_CLIENT_IPV6_PREFIX", 64, false, "the IPv6 prefix length that counts as one client address for the failed-authentication limit and the introspection quota (1 to 128)")
	s.bool(&f.legacySSE, "legacy-sse", "PORTHOLE_LEGACY_SSE", "also serve the 2024-11-05 HTTP+SSE transport at /sse, behind the same chain (sessions need sticky routing across replicas)")
	numeric(s, &f.sseMaxPerPrincipal, "sse-max-per-principal", "PORTHOLE_SSE_MAX_PER_PRINCIPAL", 8, false, "legacy SSE streams one principal may hold open at once (429 past it)")
	numeric(s, &f.sseMaxStreams, "sse-max-streams", "PORTHOLE_SSE_MAX_STREAMS", 256, false, "legacy SSE streams open at once in all (429 past it)")
	numeric(s, &f.sseIdleTimeout, "sse-idle-timeout", "PORTHOLE_SSE_IDLE_TIMEOUT", 5*time.Minute, false, "a legacy SSE stream on which nothing happens for this long is closed")
	numeric(s, &f.cacheTTL, "cache-ttl", "PORTHOLE_CACHE_TTL", 2*time.Second, true, "how long identical reads share one answer; 0 turns the cache off")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// httpOptions turns the settings into the front's options.
func (f *frontSettings) httpOptions() (gateway.HTTPOptions, error) {
	o := gateway.HTTPOptions{
		DangerouslyServeWithoutAuthentication: f.noAuth,
		LegacySSE:                             f.legacySSE,
		SSEMaxPerPrincipal:                    f.sseMaxPerPrincipal,
		SSEMaxSessions:                        f.sseMaxStreams,
		SSEIdleTimeout:                        f.sseIdleTimeout,
		Hosts:                                 gateway.HostPolicy{Hosts: splitList(f.hosts), Origins: splitList(f.origins), LoopbackOrigins: f.loopbackOrigins},
		Limits:                                limit.Limits{PerPrincipal: f.ratePer, PerPrincipalBurst: f.burstPer, Global: f.rateGlobal, GlobalBurst: f.burstGlobal},
		MaxBodyBytes:                          f.maxBody,
		FailedAuthBurst:                       f.failedAuthBurst,
		AddrIPv6Prefix:                        f.clientIPv6Prefix,
	}
	if (f.tls.Cert == "") != (f.tls.Key == "") || f.tls.ClientCA != "" && f.tls.Cert == "" {
		return o, fmt.Errorf("%w: TLS needs both PORTHOLE_TLS_CERT_FILE and PORTHOLE_TLS_KEY_FILE, and PORTHOLE_TLS_CLIENT_CA_FILE needs them", errUsage)
	}
	// A client certificate is a second factor beside a token: without
	// tokens it would be the only one.
	if f.tls.ClientCA != "" && f.noAuth {
		return o, fmt.Errorf("%w: PORTHOLE_TLS_CLIENT_CA_FILE is a second factor beside the bearer token, and PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION asks for none: choose one", errUsage)
	}
	if strings.TrimSpace(f.addr) == "" {
		// net.Listen reads an empty address as every interface, on a
		// random port: not what an unset-by-mistake variable should mean.
		return o, fmt.Errorf("%w: $PORTHOLE_ADDR (--addr) is empty; name the address to bind, such as 127.0.0.1:8082", errUsage)
	}
	var err error
	if o.TrustedProxies, err = gateway.ParseTrustedProxies(f.proxies); err != nil {
		return o, fmt.Errorf("%w: PORTHOLE_TRUSTED_PROXIES: %v", errUsage, err)
	}
	return o, nil
}

// readLinkSecrets reads the secrets of the links porthole opens that the
// redactor must know before it is made: the introspection client secret
// and the Redis password.
func readLinkSecrets(ts *temporalSettings, oa *oauthSettings, rs *redisSettings) error {
	secret, err := oa.readSecret()
	if err != nil {
		return err
	}
	password, err := rs.readURL()
	if err != nil {
		return err
	}
	for _, v := range []string{secret, password} {
		if v != "" {
			ts.extraSecrets = append(ts.extraSecrets, v)
		}
	}
	return nil
}

// watchAdminTokens has g ask for the admin tokens at /metrics, read again
// every interval and at SIGHUP.
func watchAdminTokens(ctx context.Context, g *gateway.Server, admins *tokens.Store, interval time.Duration) {
	go admins.Watch(ctx, interval)
	go reloadOnHangup(ctx, admins)
	g.RequireAdminTokens(admins)
}

// openCredentials reads what callers authenticate with: the tokens file,
// the admin tokens file (at start, before anything dials: a file that
// cannot be read is refused as any other setting is), and the OAuth
// settings into httpOpts.
func openCredentials(ctx context.Context, fs *frontSettings, oa *oauthSettings, httpOpts *gateway.HTTPOptions, log *zap.Logger) (store, admins *tokens.Store, err error) {
	if store, err = fs.openTokens(log); err != nil {
		return nil, nil, err
	}
	if admins, err = fs.openAdminTokens(log); err != nil {
		return nil, nil, err
	}
	if httpOpts.OAuth, err = oa.options(ctx, fs.tokensReload, log); err != nil {
		return nil, nil, err
	}
	if httpOpts.OAuth != nil && !fs.allowsHostOf(oa.publicURL) {
		log.Warn("WARNING: the host of PORTHOLE_PUBLIC_URL is not in PORTHOLE_ALLOWED_HOSTS: clients that reach porthole by it get 403, unless a proxy changes Host", zap.String("publicURL", oa.publicURL))
	}
	return store, admins, nil
}

// runServe is porthole serve: the MCP endpoint over HTTP, and the admin
// listener.
func runServe(args []string, stderr io.Writer) error {
	var (
		ts temporalSettings
		fs frontSettings
		as auditSettings
		oa oauthSettings
		rs redisSettings
	)
	s := newSettings("serve", serveSummary, stderr)
	fs.register(s)
	ts.register(s)
	as.register(s)
	oa.register(s)
	rs.register(s)
	if err := s.parse(args); err != nil {
		return err
	}
	httpOpts, err := fs.httpOptions()
	if err != nil {
		return err
	}
	if err := readLinkSecrets(&ts, &oa, &rs); err != nil {
		return err
	}
	c, err := ts.setup(&as)
	if err != nil {
		return err
	}
	log := c.log
	defer log.Sync()
	if c.roster != nil {
		httpOpts.Limits.Costs = c.roster.Costs()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, admins, err := openCredentials(ctx, &fs, &oa, &httpOpts, log)
	if err != nil {
		return err
	}
	if (store == nil || store.Current().Len() == 0) && !fs.noAuth && httpOpts.OAuth == nil {
		fs.waitUnconfigured(ctx, log)
		return nil
	}
	fs.authenticate(ctx, &httpOpts, store, c.cfg.Namespace, log)
	closeRedis, err := rs.options(ctx, &httpOpts, c.cfg.Namespace, log)
	if err != nil {
		return err
	}
	defer closeRedis()

	return serveGateway(ctx, &fs, &as, c, httpOpts, store, admins)
}

// serveGateway dials Temporal, builds the MCP server and serves it until
// ctx ends, with the admin tokens, when given, guarding /metrics.
func serveGateway(ctx context.Context, fs *frontSettings, as *auditSettings, c *common, httpOpts gateway.HTTPOptions, store, admins *tokens.Store) error {
	c.cacheTTL = fs.gatewayCacheTTL()
	g, closeAll, err := dialGateway(ctx, as, c)
	if err != nil {
		return err
	}
	defer closeAll()
	if admins != nil {
		watchAdminTokens(ctx, g, admins, fs.tokensReload)
	}
	return fs.serveMCP(ctx, g, httpOpts, store, c.cfg.Namespace, c.log)
}

// openAdminTokens reads the admin tokens file; the store is nil when none
// is named. Its log lines name it, apart from the tokens file's.
func (f *frontSettings) openAdminTokens(log *zap.Logger) (*tokens.Store, error) {
	if f.adminTokensFile == "" {
		return nil, nil
	}
	store, err := tokens.OpenStore(f.adminTokensFile, log.With(zap.String("tokensFile", "admin")))
	if err != nil {
		return nil, fmt.Errorf("%w: reading PORTHOLE_ADMIN_TOKENS_FILE: %v", errUsage, err)
	}
	return store, nil
}

// allowsHostOf reports whether the Host of rawURL is among the allowed
// hosts (a name alone allows it at any port).
func (f *frontSettings) allowsHostOf(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	for _, h := range splitList(f.hosts) {
		if strings.EqualFold(h, u.Host) || strings.EqualFold(h, u.Hostname()) {
			return true
		}
	}
	return false
}

// openTokens reads the tokens file; the store is nil when none is named.
func (f *frontSettings) openTokens(log *zap.Logger) (*tokens.Store, error) {
	if f.tokensFile == "" {
		return nil, nil
	}
	store, err := tokens.OpenStore(f.tokensFile, log)
	if err != nil {
		return nil, fmt.Errorf("reading the tokens file: %w", err)
	}
	return store, nil
}

// waitUnconfigured waits for ctx to end without an MCP listener, the admin
// listener (when set) answering that no token is configured. Not a crash:
// an orchestrator would only restart porthole into the same state, so it
// serves nothing on the MCP port and says why until stopped.
func (f *frontSettings) waitUnconfigured(ctx context.Context, log *zap.Logger) {
	log.Warn("WARNING: no token is configured, so the MCP listener is not started and nothing is served on its port. " +
		"Make a token with 'porthole token new --name NAME --tokens-file FILE' and set PORTHOLE_TOKENS_FILE.")
	if f.adminAddr != "" {
		go serveAdmin(ctx, f.adminAddr, gateway.UnconfiguredAdminHandler("no token is configured"), log)
	}
	<-ctx.Done()
}

// authenticate sets whom o serves: with authentication switched off,
// everyone as "anonymous", which is logged at every start; otherwise the
// holders of the tokens in store, which is watched for changes and
// reloaded on SIGHUP until ctx ends.
func (f *frontSettings) authenticate(ctx context.Context, o *gateway.HTTPOptions, store *tokens.Store, namespace string, log *zap.Logger) {
	if f.noAuth {
		log.Warn("WARNING: PORTHOLE_DANGEROUSLY_SERVE_WITHOUT_AUTHENTICATION is set: anyone who reaches " + f.addr +
			" can read the Temporal namespace " + namespace + " as principal \"anonymous\"")
		return
	}
	if store == nil {
		return // OAuth alone
	}
	o.Tokens = store.Current
	go store.Watch(ctx, f.tokensReload)
	go reloadOnHangup(ctx, store)
}

// gatewayCacheTTL is --cache-ttl as the gateway reads it: there 0 means
// the default, and -1 turns the cache off.
func (f *frontSettings) gatewayCacheTTL() time.Duration {
	if f.cacheTTL == 0 {
		return -1
	}
	return f.cacheTTL
}

// serveMCP serves g's MCP handler on f.addr, and its admin handler on
// f.adminAddr when one is set, until ctx ends.
func (f *frontSettings) serveMCP(ctx context.Context, g *gateway.Server, o gateway.HTTPOptions, store *tokens.Store, namespace string, log *zap.Logger) error {
	h, err := g.Handler(o)
	if err != nil {
		return err
	}
	if store != nil && !f.noAuth {
		g.WatchTokens(store)
	}
	ln, scheme, err := f.listen(ctx, log)
	if err != nil {
		return err
	}
	if f.adminAddr != "" {
		admin := g.AdminHandler()
		if f.pprof {
			admin = g.AdminHandlerWithProfiling()
		}
		go serveAdmin(ctx, f.adminAddr, admin, log)
	}
	principals := 0
	if store != nil {
		principals = store.Current().Len()
	}
	log.Info("serving MCP", zap.String("addr", ln.Addr().String()), zap.String("endpoint", scheme+"://"+ln.Addr().String()+"/mcp"),
		zap.String("namespace", namespace), zap.Int("principals", principals), buildField())
	err = gateway.Serve(ctx, gateway.NewHTTPServer(h, log), ln, shutdownGrace)
	log.Info("stopped")
	return err
}

// listen binds the MCP listener: TLS when a certificate is set, its files
// checked every tokensReload until ctx ends; scheme is "https" or "http".
func (f *frontSettings) listen(ctx context.Context, log *zap.Logger) (ln net.Listener, scheme string, err error) {
	var srv *tlsserver.Server
	if f.tls.Cert != "" {
		if srv, err = tlsserver.New(f.tls, log); err != nil {
			return nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if ln, err = net.Listen("tcp", f.addr); err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", f.addr, err)
	}
	if srv == nil {
		return ln, "http", nil
	}
	go srv.Watch(ctx, f.tokensReload)
	log.Info("serving TLS", append(srv.Fields(), zap.Bool("clientCertificatesRequired", srv.RequiresClientCertificates()))...)
	return tls.NewListener(ln, srv.Config()), "https", nil
}

// serveAdmin runs the admin listener until ctx ends. A failure to bind is
// logged, not fatal: the MCP port still serves.
func serveAdmin(ctx context.Context, addr string, h http.Handler, log *zap.Logger) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("the admin listener could not start", zap.String("addr", addr), zap.Error(err))
		return
	}
	log.Info("serving admin", zap.String("addr", ln.Addr().String()))
	if err := gateway.Serve(ctx, gateway.NewHTTPServer(h, log), ln, shutdownGrace); err != nil {
		log.Error("the admin listener stopped", zap.Error(err))
	}
}

// reloadOnHangup reloads the tokens file on SIGHUP.
func reloadOnHangup(ctx context.Context, store *tokens.Store) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_, _ = store.Reload()
		}
	}
}
