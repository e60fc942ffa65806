package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/temporal"
)

// dialGateway dials Temporal, opens the audit log and builds the MCP
// server. closeAll writes the audit log's close record and closes the
// connection; call it after serving ends.
func dialGateway(ctx context.Context, as *auditSettings, c *common) (g *gateway.Server, closeAll func(), err error) {
	log := c.log
	cfg := c.cfg
	cfg.Redactor = c.redactor // quoted text is redacted before it is cut
	tracing, stopTracing, err := c.tracing.startTracing(ctx, c.redactor, log)
	if err != nil {
		return nil, nil, err
	}
	if tracing != nil {
		cfg.TracerProvider = tracing.Provider
	}
	adapter, err := temporal.Dial(ctx, cfg, c.sdkLog)
	if err != nil {
		stopTracing()
		return nil, nil, err
	}
	auditLog, err := as.open(log, c.evidenceLog, c.auditKey, c.signingKey)
	if err != nil {
		adapter.Close()
		stopTracing()
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
		stopTracing() // exports the spans still batched
	}
	build := buildInfo()
	g, err = gateway.NewServer(adapter, gateway.Options{
		Namespace: adapter.Namespace(), Version: Version(), Build: &build, Logger: log, Audit: auditLog, Redactor: c.redactor,
		QueryRules: c.query, Policy: c.policy, CacheTTL: c.cacheTTL, CallTimeout: c.callTimeout, Roster: c.roster,
		DenialBudget: as.denialBudget, DenialInterval: as.denialInterval, DenialClients: as.denialClients,
		Tracing: tracing, PageTokens: c.pageTokens, Pseudonyms: c.pseudonyms,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closeGateway = g.Close
	if c.policy != nil {
		logMerges(c.policy, log)
		go watchPolicy(ctx, c.policy, c.policyEvery, log)
	}
	stopUpstreams = g.StartUpstreams(ctx)
	return g, closeAll, nil
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
			logMerges(store, log)
		}
	}
}

// logMerges says, for each pair of grants that can match one caller and
// name different disclosure profiles, what that caller gets.
func logMerges(store *policy.FileStore, log *zap.Logger) {
	for _, m := range store.Merges() {
		log.Warn("grants that can match one caller name different disclosure profiles; the caller gets the strictest choice of each", zap.String("merge", m))
	}
}
