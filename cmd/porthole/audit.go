package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal"
)

// auditSettings are the audit log's settings, shared by serve and stdio.
type auditSettings struct {
	path     string
	keyFile  string
	fsync    string
	timeout  time.Duration
	maxBytes int64
	// The denial budget (gateway.Options.DenialBudget and the rest).
	denialBudget   int
	denialInterval time.Duration
	denialClients  int
}

func (a *auditSettings) register(s *settings) {
	s.string(&a.path, "audit-log", "PORTHOLE_AUDIT_LOG", "stderr", "audit log: a file path, or stdout or stderr")
	s.string(&a.keyFile, "audit-key-file", "PORTHOLE_AUDIT_KEY_FILE", "", "file holding the key (at least 32 bytes) of the audit records' HMAC; without it a random key is used and the log cannot be verified after exit")
	s.string(&a.fsync, "audit-fsync", "PORTHOLE_AUDIT_FSYNC", "interval", "always: fsync each record before the call proceeds; interval: within a second")
	numeric(s, &a.timeout, "audit-timeout", "PORTHOLE_AUDIT_TIMEOUT", 2*time.Second, false, "how long a call waits for its audit record before it is refused")
	numeric(s, &a.maxBytes, "audit-max-bytes", "PORTHOLE_AUDIT_MAX_BYTES", 100<<20, true, "rotate the audit file above this size; 0 never rotates")
	numeric(s, &a.denialBudget, "audit-denial-budget", "PORTHOLE_AUDIT_DENIAL_BUDGET", 10, false, "denial records written one by one per client address (per principal for its rate limit) per interval; past it they are summarised")
	numeric(s, &a.denialInterval, "audit-denial-interval", "PORTHOLE_AUDIT_DENIAL_INTERVAL", time.Minute, false, "the interval of the denial budget; one summary record per client per interval")
	numeric(s, &a.denialClients, "audit-denial-clients", "PORTHOLE_AUDIT_DENIAL_CLIENTS", 10000, false, "clients the denial budget tracks at once; past it the least recently seen is summarised at once")
}

// readAuditKey reads a key file: its trimmed contents are the key, and
// must be at least audit.MinKeyBytes long.
func readAuditKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the audit key file: %w", err)
	}
	key := []byte(strings.TrimSpace(string(b)))
	if len(key) < audit.MinKeyBytes {
		return nil, fmt.Errorf("the audit key file %s holds %d bytes; it needs at least %d (e.g. openssl rand -hex 32)", path, len(key), audit.MinKeyBytes)
	}
	return key, nil
}

// open opens the audit log these settings describe, keyed with key, or with
// a random key (and a warning) when the operator gave none.
func (a *auditSettings) open(log *zap.Logger, key []byte) (*audit.Log, error) {
	cfg := audit.Config{Path: a.path, Fsync: audit.FsyncPolicy(a.fsync), Timeout: a.timeout, MaxBytes: a.maxBytes}
	if cfg.Fsync != audit.FsyncAlways && cfg.Fsync != audit.FsyncInterval {
		return nil, fmt.Errorf("%w: PORTHOLE_AUDIT_FSYNC=%q: want always or interval", errUsage, a.fsync)
	}
	cfg.Key = key
	if cfg.Key == nil {
		cfg.Key = audit.NewKey()
		log.Warn("WARNING: PORTHOLE_AUDIT_KEY_FILE is not set: the audit log is chained with a random key that dies with this process, so it cannot be verified afterwards")
	}
	l, err := audit.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log %s: %w", a.path, err)
	}
	return l, nil
}

// dialGateway dials Temporal, opens the audit log and builds the MCP
// server. closeAll writes the audit log's close record and closes the
// connection; call it after serving ends.
func dialGateway(ctx context.Context, as *auditSettings, c *common) (g *gateway.Server, closeAll func(), err error) {
	log := c.log
	cfg := c.cfg
	cfg.Redactor = c.redactor // quoted text is redacted before it is cut
	adapter, err := temporal.Dial(ctx, cfg, c.sdkLog)
	if err != nil {
		return nil, nil, err
	}
	auditLog, err := as.open(log, c.auditKey)
	if err != nil {
		adapter.Close()
		return nil, nil, err
	}
	stopUpstreams, closeGateway := func() {}, func() {}
	closeAll = func() {
		stopUpstreams()
		closeGateway() // writes the denial summaries not yet written
		if err := auditLog.Close(); err != nil {
			log.Error("closing the audit log", zap.Error(err))
		}
		adapter.Close()
	}
	g, err = gateway.NewServer(adapter, gateway.Options{
		Namespace: adapter.Namespace(), Version: Version(), Logger: log, Audit: auditLog, Redactor: c.redactor,
		QueryRules: c.query, Policy: c.policy, CacheTTL: c.cacheTTL, CallTimeout: c.callTimeout, Roster: c.roster,
		DenialBudget: as.denialBudget, DenialInterval: as.denialInterval, DenialClients: as.denialClients,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closeGateway = g.Close
	if c.policy != nil {
		go watchPolicy(ctx, c.policy, c.policyEvery, log)
	}
	stopUpstreams = g.StartUpstreams(ctx)
	return g, closeAll, nil
}

const auditUsage = `Usage:
  porthole audit verify [--key-file FILE] LOG...
      check a log, or a rotated series in any order; exit 1 at the first
      record that was edited, deleted, reordered, inserted or truncated
  porthole audit report [--since T] [--until T] [--principal NAME] [--json] LOG...
      who asked what: calls per principal and tool, denials by reason and
      address, first and last seen (T is RFC 3339, or a duration ago like 24h)
`

func runAudit(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return fmt.Errorf("%w: porthole audit verify|report", errUsage)
	}
	switch args[0] {
	case "verify":
		return runAuditVerify(args[1:], stdout, stderr)
	case "report":
		return runAuditReport(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, auditUsage)
		return nil
	}
	fmt.Fprint(stderr, auditUsage)
	return fmt.Errorf("%w: unknown audit command %q", errUsage, args[0])
}

// parseInterspersed parses flags that may come before, between or after
// the file arguments, and returns the files.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// errChainBroken makes verify exit 1 without a usage message.
var errChainBroken = fmt.Errorf("the audit chain is broken")

func runAuditVerify(args []string, stdout, stderr io.Writer) error {
	var keyFile string
	s := newSettings("audit verify", "Check an audit log or a rotated series of logs.", stderr)
	s.string(&keyFile, "key-file", "PORTHOLE_AUDIT_KEY_FILE", "", "the audit key; without it only the links are checked")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: name at least one log file", errUsage)
	}
	var key []byte
	if keyFile != "" {
		if key, err = readAuditKey(keyFile); err != nil {
			return err
		}
	}
	v, err := audit.Verify(files, key)
	if err != nil {
		return err
	}
	for _, n := range v.Notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	if !v.OK() {
		fmt.Fprintf(stdout, "BROKEN: %s\n", v.Problem)
		fmt.Fprintf(stdout, "the chain held for %d records before that\n", v.Records)
		return errChainBroken
	}
	keyed := "HMACs checked"
	if !v.Keyed {
		keyed = "links only, HMACs NOT checked"
	}
	fmt.Fprintf(stdout, "OK: %d records in %d files, seq %d to %d (%s)\n", v.Records, len(v.Files), v.FirstSeq, v.LastSeq, keyed)
	return nil
}

func runAuditReport(args []string, stdout, stderr io.Writer) error {
	var since, until, principal string
	var asJSON bool
	s := newSettings("audit report", "Summarize who asked what.", stderr)
	s.fs.StringVar(&since, "since", "", "only records at or after this time (RFC 3339, or a duration ago such as 24h)")
	s.fs.StringVar(&until, "until", "", "only records before this time (RFC 3339, or a duration ago)")
	s.fs.StringVar(&principal, "principal", "", "only this principal")
	s.fs.BoolVar(&asJSON, "json", false, "write JSON instead of a table")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: name at least one log file", errUsage)
	}
	f := audit.Filter{Principal: principal}
	if f.Since, err = parseWhen(since); err != nil {
		return err
	}
	if f.Until, err = parseWhen(until); err != nil {
		return err
	}
	sum, err := audit.Summarize(files, f)
	if err != nil {
		return err
	}
	if asJSON {
		return sum.WriteJSON(stdout)
	}
	return sum.WriteTable(stdout)
}

func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time nor a duration", errUsage, s)
}

// watchPolicy reads the policy file again every interval, and at SIGHUP,
// until ctx ends, logging each change and each problem once.
func watchPolicy(ctx context.Context, store *policy.FileStore, interval time.Duration, log *zap.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-hup:
		}
		before := store.Problem()
		changed, err := store.Reload()
		switch {
		case err != nil && store.Problem() != before:
			log.Error(store.Problem(), zap.Error(err))
		case changed:
			log.Info("policy file reloaded")
		}
	}
}
