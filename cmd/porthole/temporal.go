package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/porthole-dev/porthole/temporal"
)

// temporalSettings are the Temporal connection settings, named as Temporal's
// own tools name them.
type temporalSettings struct {
	address, namespace string
	apiKeyFile         string
	tls                string
	cert, key, ca, sni string
	disableHostVerify  bool
	logLevel           string
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
	s.bool(&t.disableHostVerify, "temporal-tls-disable-host-verification", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "refused if set: porthole always verifies the server")
	s.string(&t.logLevel, "log-level", "PORTHOLE_LOG_LEVEL", "info", "operations log level: debug, info, warn, error")
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

// newLogger is the operations log: JSON lines on stderr. stdout is never
// used, because the stdio transport owns it.
func newLogger(level string) (*zap.Logger, *slog.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: log level %q: want debug, info, warn or error", errUsage, level)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	cfg.EncoderConfig.TimeKey = "time"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.Sampling = nil
	log, err := cfg.Build()
	if err != nil {
		return nil, nil, err
	}
	// The Temporal SDK's own lines go to stderr too, at warning and above:
	// its info lines are per-connection chatter.
	sdk := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("logger", "temporal-sdk")
	return log, sdk, nil
}
