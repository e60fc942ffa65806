package review

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/porthole-dev/porthole/audit"
)

// A chart is an SVG drawn by porthole: rectangles and text, which the
// page's template writes with every value escaped. Colours are classes of
// the page's one style sheet, so the page needs no inline style attribute,
// which its Content-Security-Policy would refuse.
type chart struct {
	ID, Title     string
	Width, Height int
	Rects         []chartRect
	Texts         []chartText
	Axes          []chartLine
	Legend        []legendItem
	// Empty, when set, is said instead of drawing.
	Empty string
}

type chartRect struct {
	X, Y, W, H float64
	Class      string
	Tip        string // the rectangle's <title>: what a pointer over it shows
}

type chartText struct {
	X, Y   float64
	Anchor string // start, middle or end
	Text   string
}

type chartLine struct{ X1, Y1, X2, Y2 float64 }

type legendItem struct{ Class, Label string }

// chartLabelRunes is the most of a name a chart's label, and a time
// chart's rectangle's tip, show; a bar chart's tip shows up to
// maxPageNoteText bytes of it, and the tables their own caps.
const chartLabelRunes = 32

// label is a name as a chart shows it: cut, and quoted when it is not
// plain printable ASCII (so a bidi override is shown as \u202e, not
// obeyed).
func label(s string) string {
	if utf8.RuneCountInString(s) <= chartLabelRunes {
		return safe(s)
	}
	r := []rune(s)
	return safe(string(r[:chartLabelRunes])) + "…"
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// stack is one series of a stacked time chart.
type stack struct {
	label, class string
	count        func(Bucket) int
}

// timeChart draws stacked bars, one per bucket of tl, one segment per
// series.
func timeChart(id, title string, tl Timeline, series []stack, empty string) chart {
	const w, h, left, right, top, bottom = 760, 250, 44, 12, 12, 36
	c := chart{ID: id, Title: title, Width: w, Height: h}
	peak, totals := 0, make([]int, len(series))
	for _, b := range tl.Buckets {
		total := 0
		for i, s := range series {
			n := s.count(b)
			total += n
			totals[i] += n
		}
		peak = max(peak, total)
	}
	for i, s := range series {
		if totals[i] > 0 {
			c.Legend = append(c.Legend, legendItem{s.class, s.label})
		}
	}
	if peak == 0 {
		c.Empty = empty
		return c
	}
	plotW, plotH := float64(w-left-right), float64(h-top-bottom)
	slot := plotW / float64(len(tl.Buckets))
	base := float64(h - bottom)
	for i, b := range tl.Buckets {
		y := base
		for _, s := range series {
			n := s.count(b)
			if n == 0 {
				continue
			}
			bh := plotH * float64(n) / float64(peak)
			y -= bh
			c.Rects = append(c.Rects, chartRect{X: round1(left + float64(i)*slot + slot*0.1), Y: round1(y), W: round1(max(slot*0.8, 0.5)), H: round1(bh),
				Class: s.class, Tip: fmt.Sprintf("%s, %s: %d", bucketLabel(b.Start, tl.Width), label(s.label), n)})
		}
	}
	c.Axes = []chartLine{{left, base, w - right, base}, {left, top, left, base}}
	c.Texts = append(c.Texts,
		chartText{X: left - 4, Y: base, Anchor: "end", Text: "0"},
		chartText{X: left - 4, Y: top + 8, Anchor: "end", Text: fmt.Sprint(peak)},
		chartText{X: left, Y: base + 16, Anchor: "start", Text: bucketLabel(tl.Start, tl.Width)},
		chartText{X: w - right, Y: base + 16, Anchor: "end", Text: bucketLabel(tl.Start.Add(time.Duration(len(tl.Buckets))*tl.Width), tl.Width)},
		chartText{X: left + plotW/2, Y: base + 30, Anchor: "middle", Text: "UTC, one bar per " + widthLabel(tl.Width)},
	)
	return c
}

func bucketLabel(t time.Time, width time.Duration) string {
	switch {
	case width >= 24*time.Hour:
		return t.UTC().Format("2006-01-02")
	case width >= time.Minute:
		return t.UTC().Format("2006-01-02 15:04")
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func widthLabel(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d day(s)", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hour(s)", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minute(s)", d/time.Minute)
	}
	return fmt.Sprintf("%d second(s)", d/time.Second)
}

// barItem is one bar of a bar chart.
type barItem struct {
	name string // whole, as recorded
	n    int
}

// chartBars is the most bars a bar chart draws; the tables hold the rest.
const chartBars = 12

// barChart draws horizontal bars, largest first, at most chartBars.
func barChart(id, title, class string, items []barItem, empty string) chart {
	slices.SortStableFunc(items, func(a, b barItem) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return cmp.Compare(a.name, b.name)
	})
	const w, labelW, row, top = 760, 320, 22, 6
	shown := items[:min(len(items), chartBars)]
	c := chart{ID: id, Title: title, Width: w, Height: top*2 + row*max(len(shown), 1)}
	if len(shown) == 0 {
		c.Empty = empty
		return c
	}
	if len(items) > chartBars {
		c.Height += row
		c.Texts = append(c.Texts, chartText{X: labelW, Y: float64(top + row*len(shown) + 15), Anchor: "start",
			Text: fmt.Sprintf("and %d more, in the tables below", len(items)-chartBars)})
	}
	peak := shown[0].n
	barSpace := float64(w - labelW - 70)
	for i, it := range shown {
		y := float64(top + row*i)
		bw := max(barSpace*float64(it.n)/float64(max(peak, 1)), 1)
		c.Rects = append(c.Rects, chartRect{X: labelW, Y: y + 3, W: round1(bw), H: row - 6, Class: class, Tip: fmt.Sprintf("%s: %d", safe(cutName(it.name, maxPageNoteText)), it.n)})
		c.Texts = append(c.Texts,
			chartText{X: labelW - 6, Y: y + 16, Anchor: "end", Text: label(it.name)},
			chartText{X: round1(labelW + bw + 6), Y: y + 16, Anchor: "start", Text: fmt.Sprint(it.n)})
	}
	return c
}

// chartedPrincipals is how many principals the calls chart names; the
// rest are drawn together as others.
const chartedPrincipals = 6

// outcomeClasses are the outcomes a chart colours; any other is "other".
var outcomeClasses = []audit.Outcome{audit.OutcomeOK, audit.OutcomeToolError, audit.OutcomeDenied, audit.OutcomeRateLimited, audit.OutcomeInvalid,
	audit.OutcomeUnauthenticated, audit.OutcomeInternal, audit.OutcomeUnavailable}

// charts draws the page's charts from the summary and its detail.
func (s *Summary) charts() []chart {
	tl := s.Detail.Timeline
	out := []chart{
		timeChart("calls-over-time", "Calls per principal over time", tl, s.callSeries(), "No calls were counted."),
		timeChart("outcomes-over-time", "Outcomes over time (of the calls made, and denials)", tl, outcomeSeries(), "No outcomes were counted."),
		barChart("top-tools", "Top tools (calls)", "bar", s.toolItems(), "No calls were counted."),
	}
	if s.DenialsLeftOut {
		return out
	}
	reasons, addrs := map[string]barItem{}, map[string]barItem{}
	for _, d := range s.Denials {
		key := fmt.Sprintf("%d %s: %s", d.Status, d.Outcome, d.Reason)
		r := reasons[key]
		reasons[key] = barItem{name: key, n: r.n + d.Count}
		a := addrs[d.ClientAddr]
		addrs[d.ClientAddr] = barItem{name: d.ClientAddr, n: a.n + d.Count}
	}
	return append(out,
		barChart("denials-by-reason", "Denials by reason", "denybar", mapValues(reasons), "No denials were counted."),
		barChart("denials-by-address", "Denials by client address", "denybar", mapValues(addrs), "No denials were counted."))
}

// callSeries are the calls over time of the principals charted by name,
// and of the others together.
func (s *Summary) callSeries() []stack {
	var series []stack
	named := map[string]bool{}
	for i, p := range s.Principals[:min(len(s.Principals), chartedPrincipals)] {
		name := p.Principal
		named[name] = true
		series = append(series, stack{name, fmt.Sprint("s", i), func(b Bucket) int { return b.Calls[name] }})
	}
	if len(s.Principals) > chartedPrincipals {
		series = append(series, stack{fmt.Sprintf("%d others", len(s.Principals)-chartedPrincipals), "s6", func(b Bucket) int {
			n := 0
			for p, c := range b.Calls {
				if !named[p] {
					n += c
				}
			}
			return n
		}})
	}
	return series
}

// outcomeSeries are the outcomes over time, one series per class, and the
// rest together.
func outcomeSeries() []stack {
	var series []stack
	for _, o := range outcomeClasses {
		series = append(series, stack{string(o), "o-" + string(o), func(b Bucket) int { return b.Outcomes[o] }})
	}
	return append(series, stack{"other", "o-other", func(b Bucket) int {
		n := 0
		for o, c := range b.Outcomes {
			if !slices.Contains(outcomeClasses, o) {
				n += c
			}
		}
		return n
	}})
}

// toolItems are the calls of each tool, over every principal.
func (s *Summary) toolItems() []barItem {
	tools := map[string]int{}
	for _, p := range s.Principals {
		for _, t := range p.Tools {
			tools[t.Tool] += t.Calls
		}
	}
	var items []barItem
	for t, n := range tools {
		items = append(items, barItem{name: t, n: n})
	}
	return items
}

func mapValues(m map[string]barItem) []barItem {
	out := make([]barItem, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
