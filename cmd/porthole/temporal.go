package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/porthole-dev/porthole/gateway/pagetoken"
	"github.com/porthole-dev/porthole/gateway/pseudonym"
	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/temporal"
)

// temporalSettings are the Temporal connection settings, named as Temporal's
// own tools name them.
type temporalSettings struct {
	address, namespace string
	apiKeyFile         string
	tls                string
	cert, key, ca, sni string
	compression        string
	disableHostVerify  bool
	logLevel           string
	secretFiles        string
	redactPersonal     string
	extraSecrets       []string // secrets other settings read (the OAuth introspection secret)
	policyFile         string
	policyReload       time.Duration
	rosterFile         string
	callTimeout        time.Duration
	queryAttributes    string
	queryMaxLen        int
	queryMaxIn         int
	queryMaxDepth      int
	queryNoOrderBy     bool
	tracing            tracingSettings
	secretKey          secretKeySettings
}

func (t *temporalSettings) register(s *settings) {
	s.string(&t.address, "temporal-address", "TEMPORAL_ADDRESS", "", "Temporal frontend host:port (required)")
	s.string(&t.namespace, "temporal-namespace", "TEMPORAL_NAMESPACE", "", "the one namespace porthole reads (required)")
	s.string(&t.apiKeyFile, "temporal-api-key-file", "TEMPORAL_API_KEY_FILE", "", "file holding a Temporal API key; $TEMPORAL_API_KEY also works, but a file keeps the key out of the environment")
	s.string(&t.tls, "temporal-tls", "TEMPORAL_TLS", "", "true or false; empty means TLS when a certificate, CA, server name or API key is set")
	s.string(&t.cert, "temporal-tls-cert", "TEMPORAL_TLS_CERT", "", "client certificate file for mTLS")
	s.string(&t.key, "temporal-tls-key", "TEMPORAL_TLS_KEY", "", "client key file for mTLS")
	s.string(&t.ca, "temporal-tls-ca", "TEMPORAL_TLS_CA", "", "CA certificate file that verifies the server")
	s.string(&t.sni, "temporal-tls-server-name", "TEMPORAL_TLS_SERVER_NAME", "", "name the server's certificate must carry")
	s.string(&t.compression, "temporal-compression", "PORTHOLE_TEMPORAL_COMPRESSION", "gzip", "what requests to Temporal are compressed with: gzip, or none (no compression either way: less CPU on both ends, more bytes between them)")
	s.bool(&t.disableHostVerify, "temporal-tls-disable-host-verification", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "refused if set: porthole always verifies the server")
	s.string(&t.logLevel, "log-level", "PORTHOLE_LOG_LEVEL", "info", "operations log level: debug, info, warn, error")
	t.tracing.register(s)
	t.secretKey.register(s)
	s.string(&t.queryAttributes, "query-attributes", "PORTHOLE_QUERY_ATTRIBUTES", "", "comma-separated custom search attributes visibility queries may name (system attributes are always allowed)")
	numeric(s, &t.queryMaxLen, "query-max-len", "PORTHOLE_QUERY_MAX_LEN", policy.MaxQueryLen, false, "longest visibility query, in bytes")
	numeric(s, &t.queryMaxIn, "query-max-in", "PORTHOLE_QUERY_MAX_IN", policy.DefaultMaxInList, false, "most values in one IN list")
	numeric(s, &t.queryMaxDepth, "query-max-depth", "PORTHOLE_QUERY_MAX_DEPTH", policy.DefaultMaxDepth, false, "deepest nesting of parentheses and NOT")
	s.bool(&t.queryNoOrderBy, "query-disable-order-by", "PORTHOLE_QUERY_DISABLE_ORDER_BY", "refuse ORDER BY in visibility queries")
	numeric(s, &t.callTimeout, "call-timeout", "PORTHOLE_CALL_TIMEOUT", 30*time.Second, false, "how long one tool call may wait for Temporal before it fails with a sentence")
	s.string(&t.policyFile, "policy-file", "PORTHOLE_POLICY_FILE", "", "JSON file granting tools to principals and listing query attributes; without it every principal may call every tool")
	numeric(s, &t.policyReload, "policy-reload", "PORTHOLE_POLICY_RELOAD", 2*time.Second, false, "how often the policy file is checked for changes (and at SIGHUP)")
	s.string(&t.rosterFile, "roster-file", "PORTHOLE_ROSTER_FILE", "", "YAML roster of upstream MCP servers whose pinned read-only tools porthole serves beside its own (see docs/upstreams.md)")
	s.string(&t.secretFiles, "secret-files", "PORTHOLE_SECRET_FILES", "", "comma-separated files whose contents porthole must never send or log (the Temporal API key, client key and audit key are included already)")
	s.string(&t.redactPersonal, "redact-personal", "PORTHOLE_REDACT_PERSONAL", "", "comma-separated personal-data detectors to switch on for everything porthole writes: "+strings.Join(redact.PersonalKinds, ", "))
}

// common is what serve and stdio share once their settings are read.
type common struct {
	cfg         temporal.Config
	query       policy.QueryRules
	policy      *policy.FileStore
	policyEvery time.Duration
	cacheTTL    time.Duration
	callTimeout time.Duration
	log         *zap.Logger
	sdkLog      *slog.Logger
	redactor    *redact.Redactor
	auditKey    []byte
	signingKey  ed25519.PrivateKey
	evidenceLog *zap.Logger // the operations log at info, whatever its level
	roster      *upstream.Roster
	tracing     tracingSettings
	pageTokens  *pagetoken.Sealer
	pseudonyms  *pseudonym.Maker
}

// setup validates the Temporal configuration, gathers every secret porthole
// holds into the redactor, and builds the operations log behind it, so that
// no secret can reach the log, the wire or the audit log.
func (t *temporalSettings) setup(as *auditSettings) (*common, error) {
	cfg, err := t.config()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := t.tracing.check(); err != nil {
		return nil, err
	}
	c := &common{cfg: cfg, tracing: t.tracing}
	c.query, c.callTimeout = t.queryRules(), t.callTimeout
	if err := policy.CheckCustomAttributes(c.query.CustomAttributes); err != nil {
		return nil, fmt.Errorf("%w: PORTHOLE_QUERY_ATTRIBUTES: %w", errUsage, err)
	}
	upstreamSecrets, err := t.loadRosterAndPolicy(c)
	if err != nil {
		return nil, err
	}
	if err := cfg.LoadClientCertificate(); err != nil {
		return nil, err
	}
	c.cfg = cfg // with the certificate and key Dial will present
	secrets, secretKey, previousKey, err := t.readSecrets(as, c, upstreamSecrets)
	if err != nil {
		return nil, err
	}
	personal, err := redact.ParsePersonal(t.redactPersonal)
	if err != nil {
		return nil, fmt.Errorf("%w: PORTHOLE_REDACT_PERSONAL: %v", errUsage, err)
	}
	red, tooShort := redact.New(secrets...)
	red = red.WithPersonal(personal...)
	c.redactor = red
	if c.log, c.evidenceLog, c.sdkLog, err = newLogger(t.logLevel, red); err != nil {
		return nil, err
	}
	warnPlaintext(c)
	if c.pageTokens, err = t.secretKey.sealer(secretKey, previousKey, c.log); err != nil {
		return nil, err
	}
	if c.pseudonyms, err = t.secretKey.pseudonyms(secretKey, previousKey, c.policy != nil && c.policy.Pseudonymising(), c.log); err != nil {
		return nil, err
	}
	if len(tooShort) > 0 {
		c.log.Warn("WARNING: some secrets are shorter than the redactor accepts and will not be redacted as exact values", zap.Int("count", len(tooShort)), zap.Int("minimumLength", redact.MinExactSecretLen))
	}
	return c, nil
}

// loadRosterAndPolicy reads the roster (resolving what it names outside
// itself, once) and the policy file, which may grant the roster's tools,
// into c; it returns the roster's secrets for the redactor.
func (t *temporalSettings) loadRosterAndPolicy(c *common) (upstreamSecrets []string, err error) {
	var upstreamTools []string
	if t.rosterFile != "" {
		if c.roster, err = upstream.LoadRoster(t.rosterFile); err != nil {
			return nil, fmt.Errorf("%w: PORTHOLE_ROSTER_FILE: %v", errUsage, err)
		}
		upstreamTools = c.roster.ServedNames()
		// Read once: the tokens porthole redacts are the ones the
		// upstreams are sent.
		if err = c.roster.Resolve(os.LookupEnv); err != nil {
			return nil, fmt.Errorf("%w: PORTHOLE_ROSTER_FILE: %v", errUsage, err)
		}
		credentials, childValues := c.roster.Secrets()
		upstreamSecrets = credentials
		for _, v := range childValues {
			// A child's variable may be a log level or a token; only one
			// long enough to be a secret is redacted, so that ordinary
			// words are not.
			if len(v) >= redact.MinExactSecretLen {
				upstreamSecrets = append(upstreamSecrets, v)
			}
		}
	}
	if t.policyFile != "" {
		if c.policy, err = policy.OpenFileStore(t.policyFile, upstreamTools...); err != nil {
			return nil, fmt.Errorf("%w: PORTHOLE_POLICY_FILE: %v", errUsage, err)
		}
		c.policyEvery = t.policyReload
	}
	return upstreamSecrets, nil
}

// readSecrets reads the audit keys and the secret keys into c and returns
// every secret porthole holds, for the redactor: the Temporal API key and
// client key, the upstreams', the audit keys, the secret keys (raw and in
// hex), and those given to be redacted.
func (t *temporalSettings) readSecrets(as *auditSettings, c *common, upstreamSecrets []string) (secrets []string, secretKey, previousKey []byte, err error) {
	secrets = append([]string{c.cfg.APIKey}, upstreamSecrets...)
	if key := c.cfg.ClientKeyPEM(); key != nil {
		secrets = append(secrets, string(key))
	}
	if as.keyFile != "" {
		if c.auditKey, err = readAuditKey(as.keyFile); err != nil {
			return nil, nil, nil, err
		}
		secrets = append(secrets, string(c.auditKey))
	}
	if as.signingKeyFile != "" {
		var pemBytes []byte
		if c.signingKey, pemBytes, err = readSigningKey(as.signingKeyFile); err != nil {
			return nil, nil, nil, err
		}
		secrets = append(secrets, string(pemBytes))
	}
	if secretKey, previousKey, err = t.secretKey.secrets(c.auditKey); err != nil {
		return nil, nil, nil, err
	}
	for _, k := range [][]byte{secretKey, previousKey} {
		if k != nil {
			secrets = append(secrets, string(k), hex.EncodeToString(k))
		}
	}
	secrets = append(secrets, t.extraSecrets...)
	for _, f := range splitList(t.secretFiles) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: reading PORTHOLE_SECRET_FILES: %v", errUsage, err)
		}
		secrets = append(secrets, string(b))
	}
	return secrets, secretKey, previousKey, nil
}

// warnPlaintext says, at every start, which links porthole reads over
// plaintext beyond loopback: what it reads crosses a network unencrypted.
func warnPlaintext(c *common) {
	cfg := c.cfg
	if cfg.PlaintextBeyondLoopback() {
		why := "set TEMPORAL_TLS=true (or give a CA, a client certificate or an API key) to encrypt it; TEMPORAL_TLS=false records that plaintext is deliberate, and this warning stays"
		if cfg.TLSDisabled {
			why = "TEMPORAL_TLS=false says this is deliberate; this warning is given at every start all the same"
		}
		c.log.Warn("WARNING: the connection to Temporal at "+cfg.Address+" is plaintext and the address is not loopback; "+why, zap.String("temporalAddress", cfg.Address))
	}
	if c.roster != nil {
		for _, name := range c.roster.PlaintextBeyondLoopback() {
			c.log.Warn("WARNING: the upstream "+name+" is reached over plain http at an address that is not loopback; use https", zap.String("upstream", name))
		}
	}
}

// config builds the Temporal configuration, reading the API key file.
func (t *temporalSettings) config() (temporal.Config, error) {
	cfg := temporal.Config{
		Address:                 strings.TrimSpace(t.address),
		Namespace:               strings.TrimSpace(t.namespace),
		CertFile:                t.cert,
		KeyFile:                 t.key,
		CAFile:                  t.ca,
		ServerName:              t.sni,
		Compression:             strings.TrimSpace(t.compression),
		DisableHostVerification: t.disableHostVerify,
	}
	if t.tls != "" {
		on, err := strconv.ParseBool(t.tls)
		if err != nil {
			return cfg, fmt.Errorf("%w: TEMPORAL_TLS=%q is not true or false", errUsage, t.tls)
		}
		cfg.TLS, cfg.TLSDisabled = on, !on
	}
	envKey := os.Getenv("TEMPORAL_API_KEY")
	switch {
	case t.apiKeyFile != "" && envKey != "":
		return cfg, fmt.Errorf("%w: both TEMPORAL_API_KEY and TEMPORAL_API_KEY_FILE are set: keep one", temporal.ErrConfig)
	case t.apiKeyFile != "":
		b, err := os.ReadFile(t.apiKeyFile)
		if err != nil {
			return cfg, fmt.Errorf("%w: reading the API key file: %v", temporal.ErrConfig, err)
		}
		cfg.APIKey = strings.TrimSpace(string(b))
		if cfg.APIKey == "" {
			return cfg, fmt.Errorf("%w: the API key file %s is empty", temporal.ErrConfig, t.apiKeyFile)
		}
	default:
		cfg.APIKey = strings.TrimSpace(envKey)
	}
	return cfg, nil
}

// queryRules are the visibility-query rules the settings describe.
func (t *temporalSettings) queryRules() policy.QueryRules {
	return policy.QueryRules{
		CustomAttributes: splitList(t.queryAttributes),
		MaxLen:           t.queryMaxLen,
		MaxInList:        t.queryMaxIn,
		MaxDepth:         t.queryMaxDepth,
		DisableOrderBy:   t.queryNoOrderBy,
	}
}

// newLogger is the operations log: JSON lines on stderr, each passed through
// the redactor. stdout is never used, because the stdio transport owns it.
// newLogger builds the operations log at level, and evidence: the same
// log at info whatever the level, for the lines a reviewer collects (the
// audit checkpoints), which PORTHOLE_LOG_LEVEL=warn must not silence.
func newLogger(level string, red *redact.Redactor) (log, evidence *zap.Logger, sdk *slog.Logger, err error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: log level %q: want debug, info, warn or error", errUsage, level)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	out := redact.NewLineWriter(os.Stderr, red)
	log = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(out), lvl), zap.ErrorOutput(zapcore.AddSync(out)))
	evidence = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(out), zapcore.InfoLevel), zap.ErrorOutput(zapcore.AddSync(out)))
	// The Temporal SDK's own lines go to stderr too, at warning and above:
	// its info lines are per-connection chatter.
	sdk = slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})).With("logger", "temporal-sdk")
	return log, evidence, sdk, nil
}
