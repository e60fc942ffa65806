package audit

import (
	"container/list"
	"fmt"
	"slices"
	"sync"
	"time"
)

// KindDenials summarises the denials of one client over one interval that
// were past its budget and so not written one by one.
const KindDenials Kind = "denials"

// MaxDenialGroups bounds the groups of one summary; denials of further
// outcomes, statuses or reasons are counted in the last group, whose reason
// says so.
const MaxDenialGroups = 16

// DenialGroup counts the denials of one outcome, status and reason in a
// summary.
type DenialGroup struct {
	Outcome Outcome
	Status  int
	Reason  string
	Count   int
}

// DenialBudget bounds the denial records one client can cause: the first
// Budget denials of a key (a client address, or a principal for its rate
// limit) in an interval are written one by one; past that they are counted,
// and one KindDenials record per key per interval summarises them (how
// many, the first and the last, by outcome, status and reason).
//
// Security: without it, every refused request wrote a record, so a client
// without a token could fill the disk with 401s (32 keep-alive connections
// wrote 124 MB in 15 s), and then every call was refused because its record
// could not be written. At most MaxKeys keys are tracked; past that the
// least recently seen key's summary is handed back to be written at once.
type DenialBudget struct {
	budget   int
	interval time.Duration
	maxKeys  int

	mu    sync.Mutex
	keys  map[string]*list.Element // of *denialTally
	order *list.List               // front: most recently seen
}

type denialTally struct {
	key         string
	start       time.Time // the interval began
	written     int
	first, last time.Time
	count       int
	clientAddr  string
	principal   string
	transport   string
	groups      []DenialGroup
}

// NewDenialBudget bounds denials to budget records per key per interval,
// tracking at most maxKeys keys. Each must be positive.
func NewDenialBudget(budget int, interval time.Duration, maxKeys int) (*DenialBudget, error) {
	if budget < 1 || interval <= 0 || maxKeys < 1 {
		return nil, fmt.Errorf("audit: a denial budget needs a positive budget, interval and number of keys; got %d, %s, %d", budget, interval, maxKeys)
	}
	return &DenialBudget{budget: budget, interval: interval, maxKeys: maxKeys, keys: map[string]*list.Element{}, order: list.New()}, nil
}

// Admit says whether the denial rec, of key, is written as it is; when not,
// it is counted. flush holds summaries to write now: the key's previous
// interval, or the key pushed out to make room.
func (b *DenialBudget) Admit(key string, rec Record, now time.Time) (write bool, flush []Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.keys[key]
	if ok && now.Sub(el.Value.(*denialTally).start) >= b.interval {
		flush = appendSummary(flush, el.Value.(*denialTally))
		b.forget(el)
		ok = false
	}
	if !ok {
		if b.order.Len() >= b.maxKeys {
			oldest := b.order.Back()
			flush = appendSummary(flush, oldest.Value.(*denialTally))
			b.forget(oldest)
		}
		el = b.order.PushFront(&denialTally{key: key, start: now})
		b.keys[key] = el
	}
	b.order.MoveToFront(el)
	t := el.Value.(*denialTally)
	if t.written < b.budget {
		t.written++
		return true, flush
	}
	t.add(rec, now)
	return false, flush
}

// Due hands back the summaries of the intervals that have ended by now,
// and forgets those keys.
func (b *DenialBudget) Due(now time.Time) []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Record
	for el := b.order.Back(); el != nil; {
		prev := el.Prev()
		if t := el.Value.(*denialTally); now.Sub(t.start) >= b.interval {
			out = appendSummary(out, t)
			b.forget(el)
		}
		el = prev
	}
	return out
}

// Drain hands back every summary there is, for a shutdown.
func (b *DenialBudget) Drain() []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Record
	for el := b.order.Back(); el != nil; el = b.order.Back() {
		out = appendSummary(out, el.Value.(*denialTally))
		b.forget(el)
	}
	return out
}

func (b *DenialBudget) forget(el *list.Element) {
	delete(b.keys, el.Value.(*denialTally).key)
	b.order.Remove(el)
}

func (t *denialTally) add(rec Record, now time.Time) {
	rec.Reason = capBytes(rec.Reason, MaxReasonBytes)
	if t.count == 0 {
		t.first, t.clientAddr, t.principal, t.transport = now, rec.ClientAddr, rec.Principal, rec.Transport
	}
	t.count, t.last = t.count+1, now
	i := slices.IndexFunc(t.groups, func(g DenialGroup) bool {
		return g.Outcome == rec.Outcome && g.Status == rec.Status && g.Reason == rec.Reason
	})
	switch {
	case i >= 0:
		t.groups[i].Count++
	case len(t.groups) < MaxDenialGroups-1:
		t.groups = append(t.groups, DenialGroup{Outcome: rec.Outcome, Status: rec.Status, Reason: rec.Reason, Count: 1})
	default:
		if len(t.groups) < MaxDenialGroups {
			t.groups = append(t.groups, DenialGroup{Reason: "other outcomes and reasons"})
		}
		t.groups[MaxDenialGroups-1].Count++
	}
}

// appendSummary appends t's summary, when it counted any denial.
func appendSummary(out []Record, t *denialTally) []Record {
	if t.count == 0 {
		return out
	}
	return append(out, Record{
		Kind: KindDenials, ClientAddr: t.clientAddr, Principal: t.principal, Transport: t.transport,
		Count: t.count, First: t.first, Last: t.last, Groups: slices.Clone(t.groups),
		Reason: "denials past the budget of one client in one interval, summarised",
	})
}
