package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

func find(rs []result, mode string, c int) *result {
	for i := range rs {
		if rs[i].mode == mode && rs[i].concurrency == c {
			return &rs[i]
		}
	}
	return nil
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(l[strings.Index(l, ":")+1:])
		}
	}
	return "unknown"
}

func writeReport(path, svgPath string, rs []result, conc []int, coalesced string, d time.Duration, rounds int, sampler string) error {
	var b strings.Builder
	reportIntro(&b, svgPath, d, rounds, sampler)
	reportTable(&b, rs)
	reportRatios(&b, rs, conc)
	reportTargets(&b, rs)
	reportTargetsShared(&b, rs, conc, coalesced)
	reportHopNote(&b, rs)
	b.WriteString("\n## Reproduce\n\n```sh\nmake bench            # BENCH_DURATION=5s by default\nbin/porthole-bench -concurrency 1 -profile cpu.prof -out /tmp/bench.md -svg /tmp/bench.svg   # after make bench: a CPU profile of porthole as it serves (the report goes aside)\nmake bench-links      # each link alone: bearer lookup, audit record, redaction per KiB, query screening, strict decoding, a shared-limit charge, the SDK's spans\nmake bench-scale      # SCALE_DURATION=20s: how the cost grows with the work (writes its own section below)\nmake soak             # SOAK=60s: 64 clients, Temporal stopped and restarted, slow Temporal, a stalled audit sink, three replicas sharing Redis with Redis stopped and restarted\nmake fuzz             # FUZZTIME=10s per fuzz target\n```\n\n" +
		"`make test` runs the soak and fault tests for 2 s each and every fuzz target's seed corpus; `.ci/run` adds 5 s of fuzzing per target.\n")
	b.WriteString(measuredElsewhere(path))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(svgPath, []byte(chart(rs, conc)), 0o644)
}

// reportIntro is the report's heading: when, where and how it was
// measured, and what each mode is.
func reportIntro(b *strings.Builder, svgPath string, d time.Duration, rounds int, sampler string) {
	rev, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	fmt.Fprintf(b, `# Performance

Measured by `+"`make bench`"+` (cmd/porthole-bench) on %s, commit %s:
%d cores (%s), %s, %s per mode and concurrency in %d rounds, the modes
taking turns, all side by side in one run against one real Temporal dev
server (visibility throttle raised). The load generator, the servers and
Temporal share the cores, so compare ratios within this run, not absolute
figures across runs.

Modes: **sdk** calls the Temporal SDK's DescribeWorkflowExecution directly
(the floor); **hop** is no MCP at all, a plain HTTP handler making the same
read and answering a few bytes (the floor for any server between a client
and Temporal); **bare** is a go-sdk stateless streamable HTTP server with the
same describe_workflow tool and no hardening; **porthole** is the porthole
binary with its whole chain (bearer auth, strict decoding, rate limits set
high, audit to a file, redaction, policy) and its cache off; **cached** is
porthole answering from its cache; **oauth** is the porthole mode with an
OAuth access token from a real authorization server (oidc-provider, RS256
at+jwt by client credentials) instead of a static token; **redis** is the
porthole mode with its rate limits and failed-auth counts in a real Redis
(redis-server on loopback, PORTHOLE_REDIS_URL) instead of in the process;
**redis-rtt** is that Redis round trip alone, the charge porthole makes per
call (redislimit's script, with its client) made from the bench's process;
**traced** is the porthole mode tracing its calls (OpenTelemetry, sampler
%s, OTLP over HTTP) to a real Jaeger on loopback (Jaeger's own CPU is not counted);
**porthole-2026** is the porthole mode's porthole asked in protocol
2026-07-28's form (its headers and per-request `+"`_meta`"+`);
**profiled** is the porthole mode with a policy file giving its caller a
disclosure profile that withholds worker identities and runs the e-mail
detector on the free text it keeps; **pseudonymised** is the porthole mode
with a profile that shows workflow ids, run ids and worker identities as
pseudonyms, asked for the workflow by its pseudonym; **signed** is the
porthole mode with an audit signing key: at the default cadence (every
1,000 records, and a minute after the last when records were written
since) it signs a checkpoint (Ed25519), writes it to the log and appends
it, synced, to a checkpoint file beside the log; **merkle**
is the signed mode keeping its audit log as a Merkle tree too
(`+"`PORTHOLE_AUDIT_ORIGIN`"+`): each record a leaf, the tree's hashes in
`+"`<log>.tree`"+`, each checkpoint carrying the tree's signed C2SP note, so
merkle beside porthole is the tree and the checkpoints beside neither,
and merkle beside signed the tree alone;
**porthole-aa** is a second porthole exactly like the porthole mode's, the
A/A pair that shows what two runs of one mode differ by here; **echo** is the
bare server's echo tool, which reads nothing. HTTP modes use one keep-alive client posting
tools/call.

%s
![latency and throughput](%s)

| mode | concurrency | calls | errors | p50 ms | p90 ms | p99 ms | calls/s | server CPU/call | server alloc/call | RSS MiB | heap MiB |
|---|---|---|---|---|---|---|---|---|---|---|---|
`, time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(string(rev)), runtime.NumCPU(), cpuModel(), runtime.Version(), d, rounds, sampler, directCallsNote, filepath.Base(svgPath))
}

// directCallsNote says what most of the difference between porthole and
// bare is, for the report's opening.
const directCallsNote = `porthole answers a plain tools/call of its own tools (and, in the forms
before 2026-07-28, its upstreams') itself, through the MCP library's
middleware and handler interfaces but without its stateless
transport, which builds a server session for every request and decodes the
body about ten times, each with a fresh 32 KiB buffer (gateway/fastpath;
` + "`porthole_direct_calls_total`" + ` counts them). That is most of the
difference in CPU and garbage per call between porthole and bare below.
`

// reportTable is the table of every mode at every concurrency.
func reportTable(b *strings.Builder, rs []result) {
	for _, r := range rs {
		cpu, alloc, rss, heap := "", "", "", ""
		if r.mode != "sdk" && r.mode != "redis-rtt" {
			cpu = r.cpuPerCall.Round(time.Microsecond).String()
			alloc = fmt.Sprintf("%.0f KiB", r.allocPerCall/1024)
			rss = fmt.Sprintf("%.1f", r.rssMiB)
			heap = fmt.Sprintf("%.1f", r.heapMiB)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s | %s | %.0f | %s | %s | %s | %s |\n",
			r.mode, r.concurrency, r.calls, r.errors, ms(r.p50), ms(r.p90), ms(r.p99), r.throughput, cpu, alloc, rss, heap)
	}
}

// reportRatios is porthole's latency against the SDK's and the bare server's.
func reportRatios(b *strings.Builder, rs []result, conc []int) {
	b.WriteString("\n## Ratios\n\n| concurrency | porthole / sdk p50 | porthole / sdk p99 | porthole / bare p50 | porthole / bare p99 | bare / sdk p50 |\n|---|---|---|---|---|---|\n")
	for _, c := range conc {
		p, s, bare := find(rs, "porthole", c), find(rs, "sdk", c), find(rs, "bare", c)
		if p == nil || s == nil || bare == nil {
			continue
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", c, ratio(float64(p.p50), float64(s.p50)), ratio(float64(p.p99), float64(s.p99)),
			ratio(float64(p.p50), float64(bare.p50)), ratio(float64(p.p99), float64(bare.p99)), ratio(float64(bare.p50), float64(s.p50)))
	}
}

// reportTargets opens the targets' table: the chain beside bare, OAuth
// beside a static token.
func reportTargets(b *strings.Builder, rs []result) {
	b.WriteString("\n## Against the targets\n\n| target | measured |\n|---|---|\n")
	for _, c := range []int{1, 32} {
		p, bare := find(rs, "porthole", c), find(rs, "bare", c)
		if p != nil && bare != nil {
			fmt.Fprintf(b, "| whole chain at most 1.10× bare, p50 and p99, concurrency %d | p50 %s, p99 %s |\n", c,
				ratio(float64(p.p50), float64(bare.p50)), ratio(float64(p.p99), float64(bare.p99)))
		}
	}
	for _, c := range []int{1, 32} {
		if p, oa := find(rs, "porthole", c), find(rs, "oauth", c); p != nil && oa != nil {
			fmt.Fprintf(b, "| an OAuth access token at most +5%% p50 over a static token, concurrency %d | %s (p99 %s) |\n", c,
				ratio(float64(oa.p50), float64(p.p50)), ratio(float64(oa.p99), float64(p.p99)))
		}
	}
}

// reportTargetsShared is the rest of the targets: Redis, tracing, the
// floor, the cache, memory, CPU and garbage.
func reportTargetsShared(b *strings.Builder, rs []result, conc []int, coalesced string) {
	reportRedisTargets(b, rs)
	reportTracingTargets(b, rs)
	reportProfileTargets(b, rs)
	reportTreeTargets(b, rs, conc)
	reportFloorTargets(b, rs, conc, coalesced)
}

// reportRedisTargets are the limits shared in Redis beside local limits.
func reportRedisTargets(b *strings.Builder, rs []result) {
	if p, rd, rtt := find(rs, "porthole", 1), find(rs, "redis", 1), find(rs, "redis-rtt", 1); p != nil && rd != nil && rtt != nil {
		fmt.Fprintf(b, "| limits shared in Redis at most +0.3 ms p50 over local limits, concurrency 1 | %+.2f ms (%s → %s ms; the Redis round trip alone: p50 %s ms) |\n",
			float64((rd.p50-p.p50).Microseconds())/1000, ms(p.p50), ms(rd.p50), ms(rtt.p50))
	}
	if p, rd, rtt := find(rs, "porthole", 32), find(rs, "redis", 32), find(rs, "redis-rtt", 32); p != nil && rd != nil && rtt != nil {
		fmt.Fprintf(b, "| limits shared in Redis at 0.9× or more of local limits' throughput, concurrency 32 | %.2f× (%.0f vs %.0f calls/s; the round trip alone at 32: p50 %s ms) |\n",
			rd.throughput/p.throughput, rd.throughput, p.throughput, ms(rtt.p50))
	}
}

// reportTracingTargets are tracing on beside tracing off, with the A/A pair.
func reportTracingTargets(b *strings.Builder, rs []result) {
	for _, c := range []int{1, 32} {
		if p, tr, aa := find(rs, "porthole", c), find(rs, "traced", c), find(rs, "porthole-aa", c); p != nil && tr != nil && aa != nil {
			fmt.Fprintf(b, "| tracing on: porthole's CPU per call at most +8%%, p50 at most +0.05 ms (concurrency 1); concurrency %d | CPU %+.1f%% (%s vs %s), p50 %+.2f ms; A/A (tracing off, two portholes): CPU %+.1f%%, p50 %+.2f ms |\n", c,
				100*(float64(tr.cpuPerCall)/float64(p.cpuPerCall)-1), tr.cpuPerCall.Round(time.Microsecond), p.cpuPerCall.Round(time.Microsecond),
				float64((tr.p50-p.p50).Microseconds())/1000,
				100*(float64(aa.cpuPerCall)/float64(p.cpuPerCall)-1), float64((aa.p50-p.p50).Microseconds())/1000)
		}
	}
}

// reportProfileTargets are a disclosure profile beside the default, with
// the A/A pair.
func reportProfileTargets(b *strings.Builder, rs []result) {
	for _, c := range []int{1, 32} {
		if p, pr, aa := find(rs, "porthole", c), find(rs, "profiled", c), find(rs, "porthole-aa", c); p != nil && pr != nil && aa != nil {
			fmt.Fprintf(b, "| a disclosure profile: porthole's CPU per call at most +5%% over the default profile; concurrency %d | CPU %+.1f%% (%s vs %s), p50 %+.2f ms; A/A (two portholes, default profile): CPU %+.1f%% |\n", c,
				100*(float64(pr.cpuPerCall)/float64(p.cpuPerCall)-1), pr.cpuPerCall.Round(time.Microsecond), p.cpuPerCall.Round(time.Microsecond),
				float64((pr.p50-p.p50).Microseconds())/1000, 100*(float64(aa.cpuPerCall)/float64(p.cpuPerCall)-1))
		}
		if p, ps, aa := find(rs, "porthole", c), find(rs, "pseudonymised", c), find(rs, "porthole-aa", c); p != nil && ps != nil && aa != nil {
			fmt.Fprintf(b, "| pseudonyms: porthole's CPU per call at most +5%% over the default profile; concurrency %d | CPU %+.1f%% (%s vs %s), p50 %+.2f ms; A/A (two portholes, default profile): CPU %+.1f%% |\n", c,
				100*(float64(ps.cpuPerCall)/float64(p.cpuPerCall)-1), ps.cpuPerCall.Round(time.Microsecond), p.cpuPerCall.Round(time.Microsecond),
				float64((ps.p50-p.p50).Microseconds())/1000, 100*(float64(aa.cpuPerCall)/float64(p.cpuPerCall)-1))
		}
	}
}

// reportTreeTargets are the audit log kept as a Merkle tree, with its
// checkpoints, beside an audit log with neither, with the A/A pair, and
// beside checkpoints alone where the signed mode ran.
func reportTreeTargets(b *strings.Builder, rs []result, conc []int) {
	for _, c := range conc {
		p, m, aa := find(rs, "porthole", c), find(rs, "merkle", c), find(rs, "porthole-aa", c)
		if p == nil || m == nil || aa == nil {
			continue
		}
		alone := ""
		if s := find(rs, "signed", c); s != nil {
			alone = fmt.Sprintf("; the tree alone (merkle vs signed): CPU %+.1f%% (%s vs %s)", 100*(float64(m.cpuPerCall)/float64(s.cpuPerCall)-1),
				m.cpuPerCall.Round(time.Microsecond), s.cpuPerCall.Round(time.Microsecond))
		}
		fmt.Fprintf(b, "| the audit log as a Merkle tree: porthole's CPU per call at most +5%%; concurrency %d (merkle also signs a checkpoint per 1,000 records: the tree and its checkpoints beside neither) | CPU %+.1f%% (%s vs %s), p50 %+.2f ms%s; A/A (two portholes, neither): CPU %+.1f%% |\n", c,
			100*(float64(m.cpuPerCall)/float64(p.cpuPerCall)-1), m.cpuPerCall.Round(time.Microsecond), p.cpuPerCall.Round(time.Microsecond),
			float64((m.p50-p.p50).Microseconds())/1000, alone, 100*(float64(aa.cpuPerCall)/float64(p.cpuPerCall)-1))
	}
}

// reportFloorTargets are porthole over the SDK and the hop, the cache
// beside echo, coalescing, memory, and CPU and garbage beside bare.
func reportFloorTargets(b *strings.Builder, rs []result, conc []int, coalesced string) {
	if p, s, h, bare := find(rs, "porthole", 1), find(rs, "sdk", 1), find(rs, "hop", 1), find(rs, "bare", 1); p != nil && s != nil && h != nil && bare != nil {
		fmt.Fprintf(b, "| at most 0.5 ms p50 over a direct SDK call, concurrency 1 | +%s ms (hop: +%s ms, bare: +%s ms); over the hop: +%s ms |\n",
			ms(p.p50-s.p50), ms(h.p50-s.p50), ms(bare.p50-s.p50), ms(p.p50-h.p50))
	}
	top := conc[len(conc)-1]
	if ca, e := find(rs, "cached", top), find(rs, "echo", top); ca != nil && e != nil {
		fmt.Fprintf(b, "| cached answers at 80%% or more of the bare echo tool's throughput (concurrency %d) | %.0f%% |\n", top, 100*ca.throughput/e.throughput)
	}
	fmt.Fprintf(b, "| N identical concurrent reads cost Temporal one RPC | %s |\n", coalesced)
	if p := find(rs, "porthole", top); p != nil {
		fmt.Fprintf(b, "| RSS under 64 MiB at concurrency %d | %.1f MiB |\n", top, p.rssMiB)
	}
	for _, c := range conc {
		if p, bare := find(rs, "porthole", c), find(rs, "bare", c); p != nil && bare != nil {
			fmt.Fprintf(b, "| CPU and garbage per call, porthole vs bare, concurrency %d | %s vs %s; %.0f KiB vs %.0f KiB |\n", c,
				p.cpuPerCall.Round(time.Microsecond), bare.cpuPerCall.Round(time.Microsecond), p.allocPerCall/1024, bare.allocPerCall/1024)
		}
	}
}

// reportHopNote says, when porthole is past the 0.5 ms target, how much
// of that is the hop any server pays.
func reportHopNote(b *strings.Builder, rs []result) {
	if p, s, h := find(rs, "porthole", 1), find(rs, "sdk", 1), find(rs, "hop", 1); p != nil && s != nil && h != nil && p.p50-s.p50 > 500*time.Microsecond {
		fmt.Fprintf(b, "\n**The 0.5 ms target.** porthole adds +%s ms p50 over the direct SDK call at concurrency 1. "+
			"Part of that is the hop itself, which any server between the client and Temporal pays on this machine, "+
			"for the extra process a call passes through on %d shared cores: a plain HTTP handler with no MCP, no "+
			"authentication and no audit, making the same read, adds +%s ms in the same run. What porthole adds over "+
			"that floor, its whole chain and the MCP framing, is +%s ms.\n", ms(p.p50-s.p50), runtime.NumCPU(), ms(h.p50-s.p50), ms(p.p50-h.p50))
	}
}

// elsewhereHeading starts the part of the report that other commands
// measure (make soak): the bench does not measure it, so it carries it over
// from the report it replaces, unchanged.
const elsewhereHeading = "\n## Measured by other commands\n"

// measuredElsewhere is that part of the report at path, or "".
func measuredElsewhere(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(b), elsewhereHeading); i >= 0 {
		return string(b[i:])
	}
	return ""
}

// chart draws p50 latency and throughput per mode and concurrency as an
// SVG, as make bench-scale draws its curves (drawBars).
func chart(rs []result, conc []int) string {
	var modes []string // those measured (-modes may leave some out)
	for _, m := range []string{"porthole", "sdk", "bare", "cached", "hop", "echo"} {
		if slices.ContainsFunc(rs, func(r result) bool { return r.mode == m }) {
			modes = append(modes, m)
		}
	}
	lat := bars{title: "p50 latency (ms)", series: modes}
	tp := bars{title: "throughput (calls/s)", series: modes}
	for _, c := range conc {
		lat.groups, tp.groups = append(lat.groups, fmt.Sprintf("c=%d", c)), append(tp.groups, fmt.Sprintf("c=%d", c))
		var l, t []float64
		for _, m := range modes {
			var r result
			if found := find(rs, m, c); found != nil {
				r = *found
			}
			l, t = append(l, float64(r.p50.Microseconds())/1000), append(t, r.throughput)
		}
		lat.values, tp.values = append(lat.values, l), append(tp.values, t)
	}
	return drawBars([]bars{lat, tp}, 2, 450)
}
