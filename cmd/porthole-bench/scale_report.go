package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// scaleReport is what `porthole-bench scale` measured.
type scaleReport struct {
	opts       scaleOptions
	sizes      scaleSizes
	history    []historyPoint
	list       []listPoint
	principals []principalsPoint
	answers    []answerPoint
	anchor     *anchorResult // porthole's redactor beside gitleaks, with the answer-size curve
	trails     []trailPoint
	askedAgain int64  // pages asked a second time (again)
	commit     string // the checkout's commit when the run began
}

// The bench-scale section of docs/performance.md lies between these lines;
// `porthole-bench scale` replaces it and keeps the rest, and `make bench`
// carries it over with the rest of "Measured by other commands".
const (
	scaleBegin = "<!-- make bench-scale: begin -->\n"
	scaleEnd   = "<!-- make bench-scale: end -->\n"
)

func (rep *scaleReport) write(path, svgPath string) error {
	section := scaleBegin + rep.markdown(filepath.Base(svgPath)) + scaleEnd
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	i, j := strings.Index(doc, scaleBegin), strings.Index(doc, scaleEnd)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + section + doc[j+len(scaleEnd):]
	case doc == "":
		doc = section
	default:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Println("== wrote", path, "and", svgPath)
	return os.WriteFile(svgPath, []byte(rep.chart()), 0o644)
}

func (rep *scaleReport) markdown(svgName string) string {
	var b strings.Builder
	rep.headingMD(&b, svgName)
	rep.historiesMD(&b)
	rep.listsMD(&b)
	rep.principalsMD(&b)
	rep.answersMD(&b)
	rep.trailsMD(&b)
	b.WriteString("\n")
	return b.String()
}

// headingMD is the section's heading: when, where and how it was measured.
func (rep *scaleReport) headingMD(b *strings.Builder, svgName string) {
	what := "every size"
	if rep.opts.smallest {
		what = "the smallest size of each curve only (`-smallest`)"
	}
	fmt.Fprintf(b, `### How the cost grows with the work (make bench-scale)

Measured by `+"`make bench-scale`"+` (`+"`porthole-bench scale`"+`) on %s, commit %s: %d cores
(%s), %s, %s per side of each point in %d rounds (the principals curve in as many as makes each of its sides first equally often), the sides taking turns,
%s%s, against one real Temporal dev server (throttles raised) whose database
was seeded once into the cache (`+"`--db-filename`"+`), porthole's rate limits set
too high to reach. porthole, the SDK, the load and Temporal share the cores:
compare the sides of a point, not figures across runs.

![bench-scale](%s)

`, time.Now().UTC().Format("2006-01-02"), rep.commit, runtime.NumCPU(), cpuModel(), runtime.Version(),
		rep.opts.duration, rep.opts.rounds, what, baselineNote(rep.opts.baseline), svgName)

}

// historiesMD is the histories' curve.
func (rep *scaleReport) historiesMD(b *strings.Builder) {
	b.WriteString("**Histories** (target: porthole at least 0.8× the SDK): each seeded workflow's whole history walked at the largest page size (500 events), one walk after another, through porthole's `get_workflow_history` and through the workflow service's own paging, called with the SDK's client (`GetWorkflowExecutionHistory`, `MaximumPageSize` 500, each next-page token in turn).\n\n")
	before := rep.opts.baseline != ""
	if before {
		b.WriteString("| events | porthole, events/s | SDK, events/s | ratio | porthole CPU per 1,000 events | before (the baseline): events/s, ratio, CPU per 1,000 events |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| events | porthole, events/s | SDK, events/s | ratio | porthole CPU per 1,000 events |\n|---|---|---|---|---|\n")
	}
	for _, p := range rep.history {
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %s | %s |", thousands(p.events), p.porthole.perSecond(), p.sdk.perSecond(),
			ratio(p.porthole.perSecond(), p.sdk.perSecond()), p.porthole.cpuPer(1000).Round(time.Microsecond))
		if before {
			fmt.Fprintf(b, " %.0f, %s, %s |", p.before.perSecond(), ratio(p.before.perSecond(), p.sdk.perSecond()),
				p.before.cpuPer(1000).Round(time.Microsecond))
		}
		b.WriteString("\n")
	}
}

// listsMD is the lists' curve, and the pages asked again.
func (rep *scaleReport) listsMD(b *strings.Builder) {
	fmt.Fprintf(b, "\n**Lists** (target: at least 0.8× the SDK): pages of `list_workflows` over the namespace's %s seeded workflows (the list's and the histories'), each side going on from its last page, through porthole and through `ListWorkflowExecutions` at the same page size.\n\n", thousands(rep.sizes.workflows+len(rep.sizes.histories)))
	b.WriteString("| page size | porthole, workflows/s | SDK, workflows/s | ratio | porthole CPU per page |\n|---|---|---|---|---|\n")
	for _, p := range rep.list {
		fmt.Fprintf(b, "| %d | %.0f | %.0f | %s | %s |\n", p.page, p.porthole.perSecond(), p.sdk.perSecond(), ratio(p.porthole.perSecond(), p.sdk.perSecond()), p.porthole.cpuPerCall().Round(time.Microsecond))
	}
	fmt.Fprintf(b, "\nPages asked a second time after the dev server failed one (history and list, every side alike, the warm-up included): %d.\n", rep.askedAgain)
}

// principalsMD is the principals' curve.
func (rep *scaleReport) principalsMD(b *strings.Builder) {
	fmt.Fprintf(b, "\n**Principals** (target: with 100,000 at least 0.9× the calls/s with one): one porthole per tokens file, %d clients each calling `describe_workflow` answered from the cache, with the last principal's token.\n\n", rep.opts.conc)
	b.WriteString("| principals | calls/s | ratio to one | porthole CPU per call |\n|---|---|---|---|\n")
	for _, p := range rep.principals {
		name := thousands(p.principals)
		if p.aa {
			name += " (A/A: a second porthole alike)"
		}
		fmt.Fprintf(b, "| %s | %.0f | %s | %s |\n", name, p.calls.perSecond(), ratio(p.calls.perSecond(), rep.principals[0].calls.perSecond()), p.calls.cpuPerCall().Round(time.Microsecond))
	}
}

// answersMD is the answer-size curve.
func (rep *scaleReport) answersMD(b *strings.Builder) {
	before := rep.opts.baseline != ""
	b.WriteString("\n**Answer size** (targets: at most 15 µs of CPU added per KiB at 64 KiB and at 1 MiB, and the figure at 1 MiB at most 1.2× the figure at 64 KiB): an upstream on the roster (the bench's own go-sdk server, `maxResultBytes` 1 MiB) answers a text of each size; porthole quotes, redacts, renders and audits it. Added CPU per KiB is porthole's CPU per call less its CPU for a 16-byte answer, over the KiB added; at 1 and 4 KiB that difference is small beside the run's noise. On the wire is the size of porthole's whole JSON-RPC response. A third porthole, measured beside, has every personal-data detector on (`" + personalKinds + "`), which no target covers.\n\n")
	if before {
		b.WriteString("| answer | on the wire | porthole CPU per call | added per KiB | calls/s | with personal-data detectors: CPU per call, added per KiB | before (the baseline): CPU per call, added per KiB |\n|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| answer | on the wire | porthole CPU per call | added per KiB | calls/s | with personal-data detectors: CPU per call, added per KiB |\n|---|---|---|---|---|---|\n")
	}
	for _, p := range rep.answers {
		per, perBefore, perPersonal := "(the base)", "(the base)", "(the base)"
		size := "16 B"
		if p.kib > 0 {
			per = fmt.Sprintf("%.2f µs", addedPerKiB(rep.answers[0].calls, p.calls, p.kib))
			perBefore = fmt.Sprintf("%.2f µs", addedPerKiB(rep.answers[0].before, p.before, p.kib))
			perPersonal = fmt.Sprintf("%.2f µs", addedPerKiB(rep.answers[0].personal, p.personal, p.kib))
			size = fmt.Sprintf("%s KiB", thousands(p.kib))
		}
		fmt.Fprintf(b, "| %s | %s B | %s | %s | %.0f | %s, %s |", size, thousands(p.served), p.calls.cpuPerCall().Round(time.Microsecond), per, p.calls.perSecond(),
			p.personal.cpuPerCall().Round(time.Microsecond), perPersonal)
		if before {
			fmt.Fprintf(b, " %s, %s |", p.before.cpuPerCall().Round(time.Microsecond), perBefore)
		}
		b.WriteString("\n")
	}
	if a, z := rep.answerAt(64), rep.answerAt(1024); a != nil && z != nil {
		fmt.Fprintf(b, "\nAt 1 MiB, %.2f× the added CPU per KiB at 64 KiB.\n", addedPerKiB(rep.answers[0].calls, z.calls, z.kib)/addedPerKiB(rep.answers[0].calls, a.calls, a.kib))
	}
	if rep.anchor != nil {
		rep.anchor.markdown(b)
	}
}

// markdown is the redaction anchor's paragraph and tables.
func (a *anchorResult) markdown(b *strings.Builder) {
	kinds := a.kinds()
	fmt.Fprintf(b, "\n**Redaction beside gitleaks** (target: porthole at least as fast as gitleaks, and finding every planted secret it claims to detect): one text of %s bytes, the answer text above with %d secrets planted between its lines, %d of each of %d kinds (every kind porthole's redactor detects, its personal-data kinds among them, with two forms of the GitHub and Slack tokens, and an exact secret it is given), made from crypto/rand afresh for the run. ", thousands(a.porthole.bytes), len(a.planted), plantingsPerKind, len(kinds))
	fmt.Fprintf(b, "porthole's redactor (`redact.New` with the exact secret, `WithPersonal` with every personal-data kind) redacts it with `String`, in porthole-bench's process; gitleaks %s (`detect.NewDetectorDefaultConfig`: its default rules, and no decoding passes, where the `gitleaks` command decodes to depth 5) finds what is in it with `DetectString`, in a binary of its own (`cmd/porthole-bench/gitleaks`, a module of its own). Each scans the whole text again and again in one goroutine for %s, one side after the other, while the bench measures nothing else. ", a.gitleaksVersion, a.duration)
	b.WriteString("Throughput is the text's bytes times the scans, over the time they took; porthole's includes writing the redacted text, gitleaks' only listing its findings. A planted secret counts as found by porthole when the redacted text no longer holds it, and by gitleaks when one of its findings' secret or match holds it, or the finding's secret (8 bytes or more) lies inside it; a kind counts as found when all its plantings are (where some are, the table says how many).\n\n")
	b.WriteString("| side | MB/s | scans | planted secrets found |\n|---|---|---|---|\n")
	fmt.Fprintf(b, "| porthole, redacting | %.1f | %d | %d of %d |\n", a.porthole.mbPerSecond(), a.porthole.scans, a.porthole.foundCount(), len(a.planted))
	fmt.Fprintf(b, "| gitleaks, detecting | %.1f | %d | %d of %d |\n", a.gitleaks.mbPerSecond(), a.gitleaks.scans, a.gitleaks.foundCount(), len(a.planted))
	fmt.Fprintf(b, "\nporthole at %s gitleaks' throughput.\n\n", ratio(a.porthole.mbPerSecond(), a.gitleaks.mbPerSecond()))
	b.WriteString("| kind | found by porthole | found by gitleaks |\n|---|---|---|\n")
	// yes, or no with the plantings found where some were.
	cell := func(s anchorSide, kind string) string {
		switch found, of := a.kindCount(s, kind); {
		case found == of:
			return "yes"
		case found > 0:
			return fmt.Sprintf("no (%d of %d)", found, of)
		default:
			return "no"
		}
	}
	for _, k := range kinds {
		fmt.Fprintf(b, "| %s | %s | %s |\n", k, cell(a.porthole, k), cell(a.gitleaks, k))
	}
}

// trailsMD is the audit trails' curve.
func (rep *scaleReport) trailsMD(b *strings.Builder) {
	before := rep.opts.baseline != ""
	b.WriteString("\n**Audit trails** (targets: at least 100 MB/s, peak memory independent of the size and at most 64 MiB at 1 GB; a trail kept as a Merkle tree verified with the public key within 10% of a plain trail's throughput, in the same memory bound): two unrotated logs of each size written by porthole's own writer (calls with three arguments and their results from 50 principals, a denial every 50 calls), a plain one and one kept as a Merkle tree (`audit.Config.Origin`, its hashes in `<log>.tree`, a signed checkpoint carrying the tree's note every 1,000 records, the default); then `porthole audit verify --key-file` over the plain trail and `porthole audit verify --key-file --public-key` over the tree trail (which checks each checkpoint's signature and recomputes its tree from the records), taking turns, and `porthole audit report --key-file` over the plain trail. ")
	fmt.Fprintf(b, "The verifies take turns, at least %d and more until each has verified for %s in all (the turns in the first column); a verify's time is its mean over its turns, its peak the highest; report runs once. MB/s is of the trail each reads; tree / plain is the tree trail's verify MB/s over the plain trail's. Peak memory is the process's peak RSS (VmHWM), read from /proc while it runs.\n\n", rep.opts.rounds, rep.opts.duration)
	if before {
		b.WriteString("| trail | verify: time, MB/s, peak | tree trail, verify with the public key: time, MB/s, peak | tree / plain | report: time, MB/s, peak | before (the baseline): verify, plain trail | before: report |\n|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| trail | verify: time, MB/s, peak | tree trail, verify with the public key: time, MB/s, peak | tree / plain | report: time, MB/s, peak |\n|---|---|---|---|---|\n")
	}
	cell := func(t timing, bytes int64) string {
		return fmt.Sprintf("%s, %.0f MB/s, %.0f MiB", t.took.Round(10*time.Millisecond), t.mbPerSecond(bytes), t.peakMiB)
	}
	for _, p := range rep.trails {
		fmt.Fprintf(b, "| %s MB, %d turns | %s | %s | %s | %s |", thousands(int(p.bytes/1e6)), p.turns, cell(p.verify, p.bytes), cell(p.verifyTree, p.treeBytes), p.treeRatio(), cell(p.report, p.bytes))
		if before {
			fmt.Fprintf(b, " %s | %s |", cell(p.verifyBefore, p.bytes), cell(p.reportBefore, p.bytes))
		}
		b.WriteString("\n")
	}
}

// baselineNote names the baseline binary in the report's opening, or "".
func baselineNote(bin string) string {
	if bin == "" {
		return ""
	}
	return fmt.Sprintf(" (and an earlier porthole, %s, measured beside it in the history, answer-size and trail curves: the \"before\" columns)", filepath.Base(bin))
}

func (rep *scaleReport) answerAt(kib int) *answerPoint {
	for i := range rep.answers {
		if rep.answers[i].kib == kib {
			return &rep.answers[i]
		}
	}
	return nil
}

// thousands writes n with commas: 20,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// bars is one panel of the chart: groups of bars, one bar per series.
type bars struct {
	title  string
	groups []string
	series []string
	values [][]float64 // [group][series]
}

// chart draws the curves as panels of grouped bars, porthole beside the
// SDK (or beside its own base), one SVG.
func (rep *scaleReport) chart() string {
	var panels []bars
	h := bars{title: "history, events/s", series: []string{"porthole", "SDK"}}
	for _, p := range rep.history {
		h.groups = append(h.groups, thousands(p.events)+" ev")
		h.values = append(h.values, []float64{p.porthole.perSecond(), p.sdk.perSecond()})
	}
	l := bars{title: "list, workflows/s", series: []string{"porthole", "SDK"}}
	for _, p := range rep.list {
		l.groups = append(l.groups, fmt.Sprintf("page %d", p.page))
		l.values = append(l.values, []float64{p.porthole.perSecond(), p.sdk.perSecond()})
	}
	pr := bars{title: "cached calls/s by principals", series: []string{"porthole"}}
	for _, p := range rep.principals {
		g := thousands(p.principals)
		if p.aa {
			g += " A/A"
		}
		pr.groups = append(pr.groups, g)
		pr.values = append(pr.values, []float64{p.calls.perSecond()})
	}
	an := bars{title: "added CPU per KiB of answer, µs", series: []string{"porthole"}}
	for i, p := range rep.answers {
		if i == 0 {
			continue
		}
		an.groups = append(an.groups, fmt.Sprintf("%d KiB", p.kib))
		an.values = append(an.values, []float64{max(0, addedPerKiB(rep.answers[0].calls, p.calls, p.kib))})
	}
	tr := bars{title: "audit trail, MB/s", series: []string{"verify", "tree", "report"}}
	mem := bars{title: "audit trail, peak MiB", series: []string{"verify", "tree", "report"}}
	for _, p := range rep.trails {
		g := fmt.Sprintf("%d MB", p.mb)
		tr.groups, mem.groups = append(tr.groups, g), append(mem.groups, g)
		tr.values = append(tr.values, []float64{p.verify.mbPerSecond(p.bytes), p.verifyTree.mbPerSecond(p.treeBytes), p.report.mbPerSecond(p.bytes)})
		mem.values = append(mem.values, []float64{p.verify.peakMiB, p.verifyTree.peakMiB, p.report.peakMiB})
	}
	panels = append(panels, h, l, pr, an, tr, mem)
	return drawBars(panels, 3, 300)
}

// drawBars draws panels of grouped bars, cols to a row, each pw wide,
// as one SVG: a bar per series in each group, its value over it, and a
// legend of the series in each panel.
func drawBars(panels []bars, cols, pw int) string {
	const ph, pad = 220, 40
	rows := (len(panels) + cols - 1) / cols
	w, hgt := cols*pw, rows*ph
	colors := []string{"#d9534f", "#888", "#4a90d9", "#5cb85c", "#9b59b6", "#f0ad4e"}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="10">`, w, hgt)
	s.WriteString(`<rect width="100%" height="100%" fill="white"/>`)
	for i, p := range panels {
		x0, y0 := (i%cols)*pw+pad/2, (i/cols)*ph
		fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="12">%s</text>`, x0, y0+16, p.title)
		var top float64
		for _, g := range p.values {
			for _, v := range g {
				top = max(top, v)
			}
		}
		base := y0 + ph - pad
		plotH := float64(ph - pad - 40)
		gw := float64(pw-pad) / float64(max(1, len(p.groups)))
		bw := gw / float64(len(p.series)+1)
		for gi, g := range p.groups {
			gx := float64(x0) + float64(gi)*gw
			fmt.Fprintf(&s, `<text x="%.0f" y="%d">%s</text>`, gx+2, base+14, g)
			for si, v := range p.values[gi] {
				bh := 0.0
				if top > 0 {
					bh = v / top * plotH
				}
				x := gx + float64(si)*bw
				fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.1f</title></rect>`,
					x, float64(base)-bh, bw*0.9, bh, colors[si%len(colors)], p.series[si], g, v)
				if bw >= 16 { // a label over a narrower bar would run into its neighbour's
					fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" font-size="8">%s</text>`, x, float64(base)-bh-2, short(v))
				}
			}
		}
		fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, x0, base, x0+pw-pad, base)
		for si, name := range p.series {
			fmt.Fprintf(&s, `<rect x="%d" y="%d" width="8" height="8" fill="%s"/><text x="%d" y="%d">%s</text>`,
				x0+si*70, y0+22, colors[si%len(colors)], x0+si*70+11, y0+30, name)
		}
	}
	s.WriteString(`</svg>`)
	return s.String()
}

// short is v in a few characters, for a bar's label.
func short(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}
