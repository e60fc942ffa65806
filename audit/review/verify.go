package review

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
)

// Problem is the first place where a log's chain breaks.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line"`
	What string `json:"what"`
}

func (p *Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

// Verification is what Verify found.
type Verification struct {
	Files    []string `json:"files"` // in chain order
	Records  int      `json:"records"`
	FirstSeq uint64   `json:"firstSeq"`
	LastSeq  uint64   `json:"lastSeq"`
	Keyed    bool     `json:"keyed"`
	// Chain is the chain's identity, when its records name one.
	Chain string `json:"chain,omitempty"`
	// Signed says checkpoint signatures were checked with public keys.
	Signed bool `json:"signed"`
	// Checkpoints counts the witnessed checkpoints the series was held to;
	// ProvenTo is the latest of them: every record from FirstSeq to it is
	// proven present and unchanged. 0 when no checkpoint was given.
	Checkpoints int    `json:"checkpoints"`
	ProvenTo    uint64 `json:"provenTo"`
	// ProvenBy counts the checkpoints a record of the series matched, and
	// ProvenAt is when the latest was signed.
	ProvenBy int `json:"provenBy"`
	// LastRecord is the seq of the last record that is not a checkpoint
	// or an anchor: what a checkpoint must reach for nothing to be left
	// unproven.
	LastRecord uint64    `json:"lastRecord"`
	ProvenAt   time.Time `json:"provenAt,omitzero"`
	// Origin is the origin of the series' Merkle tree, when its
	// checkpoints carry signed notes of one (quoted unless plain).
	// TreeCheckpoints counts the notes whose tree was recomputed from the
	// records and matched, the largest of them of TreeSize records;
	// TreeUnchecked counts notes that were genuine but came before the
	// walk knew the tree (verification began after the series' start).
	Origin          string `json:"origin,omitempty"`
	TreeCheckpoints int    `json:"treeCheckpoints"`
	TreeSize        int64  `json:"treeSize"`
	TreeUnchecked   int    `json:"treeUnchecked"`
	// WitnessedTo is the largest size a quorum (WitnessedBy) of the
	// witnesses given each cosigned a tree of, or larger, every tree the
	// series' records make: records 1 to WitnessedTo are proven by them,
	// and were written before WitnessedAt, by when all of the quorum had
	// cosigned. 0 without one.
	WitnessedTo int64     `json:"witnessedTo"`
	WitnessedBy int       `json:"witnessedBy"`
	WitnessedAt time.Time `json:"witnessedAt,omitzero"`
	// Notes are chain events a reviewer should know of: chain starts and
	// their reasons, torn writes porthole acknowledged, a missing close,
	// and what could not be proven.
	Notes []string `json:"notes"`
	// Problem is the first break, or nil when the chain holds.
	Problem *Problem `json:"problem,omitempty"`
}

// OK reports whether the chain holds.
func (v *Verification) OK() bool { return v.Problem == nil }

// ProvenComplete reports whether the chain holds and every record of the
// series, to its last, is proven present and unchanged by a signed,
// witnessed checkpoint: what a scheduled check that nothing was cut from
// the trail asks.
func (v *Verification) ProvenComplete() bool {
	return v.OK() && v.ProvenTo != 0 && v.LastRecord <= v.ProvenTo
}

// LinksOnlyAfterCheckpoints reports whether records after the latest
// checkpoint were checked by their links only: no HMAC key was given, so
// whoever can edit the files could have rewritten them.
func (v *Verification) LinksOnlyAfterCheckpoints() bool {
	return !v.Keyed && v.ProvenTo != 0 && v.LastRecord > v.ProvenTo
}

// ReadByLinksOnly reports whether any record of the series was checked by
// its links only: no HMAC key was given, and no checkpoint proves it (none
// reaches the series, or records follow the latest). Every verdict that
// says "verified" of a series asks this.
func (v *Verification) ReadByLinksOnly() bool {
	return !v.Keyed && (v.ProvenTo == 0 || v.LastRecord > v.ProvenTo)
}

// Basis says what a verification rests on, a line each: whether the
// HMACs were checked, the chain, and how far the series is proven complete
// and what is not.
func (v *Verification) Basis() []string {
	var lines []string
	if v.Keyed {
		lines = append(lines, "HMACs checked: no record was changed by anyone without the HMAC key")
	} else {
		lines = append(lines, "links only, HMACs NOT checked: an editor of the files could have rewritten the whole chain")
	}
	if v.Chain != "" {
		// Quoted unless plain: a Verification made by hand may hold any
		// chain (the walk takes only a chain id porthole makes).
		lines = append(lines, "chain "+safe(v.Chain))
	}
	lines = append(lines, v.treeBasis()...)
	switch {
	case v.ProvenTo != 0:
		lines = append(lines, fmt.Sprintf("complete and unchanged from seq %d to %d: proven by %d signed checkpoint(s) of this chain, the latest signed at %s",
			v.FirstSeq, v.ProvenTo, v.ProvenBy, v.ProvenAt.UTC().Format(time.RFC3339)))
		switch {
		case v.LastRecord > v.ProvenTo && !v.Keyed:
			// Security: no HMAC and no checkpoint covers them; anyone
			// could have written them and recomputed their links.
			lines = append(lines, fmt.Sprintf("seq %d to %d: links only: NOT proven unchanged or complete (after the latest checkpoint, and no HMAC key was given: anyone could have written them)", v.ProvenTo+1, v.LastSeq))
		case v.LastRecord > v.ProvenTo:
			lines = append(lines, fmt.Sprintf("seq %d to %d: present, NOT proven complete (after the latest checkpoint)", v.ProvenTo+1, v.LastSeq))
		}
	case v.Signed:
		lines = append(lines, "checkpoint and pruned records' signatures checked; NOT proven complete: no witnessed checkpoint of this chain reaches it (--checkpoints)")
	default:
		lines = append(lines, "NOT proven complete: no checkpoints were checked (--public-key, --checkpoints)")
	}
	return lines
}

// VerifyOptions are what a verifier holds besides the logs.
type VerifyOptions struct {
	// Keys are the HMAC keys (every key the log was written under, across
	// rotations) and the public keys of the checkpoint signing keys. With
	// no HMAC key only the links are checked, which anyone able to edit the
	// files could rewrite; with no public key, checkpoints are not checked.
	Keys *audit.Keyring
	// Checkpoints are witnessed checkpoints (the witness file, or lines
	// collected from the operations log). Each must be signed by a public
	// key of Keys and be of the series' chain; each one the series reaches
	// must match the record it names; and the series must reach the
	// latest: so no record up to the latest checkpoint is missing.
	Checkpoints []audit.Checkpoint
	// FromCheckpoint, when not 0, is the sequence number of a signed
	// checkpoint (in Checkpoints, or a checkpoint record of the log) where
	// verification begins; records before it are not checked. When 0 the
	// series must begin at its chain's genesis, a new log's first record.
	FromCheckpoint uint64
	// Origin, when set, is the origin every tree note must name: the
	// trail the reviewer means (one signing key may sign several).
	Origin string
	// Witnessing, when not nil, holds the series' tree to the trees its
	// witnesses cosigned.
	Witnessing *Witnessing
	// TreeFile, when not nil, is the series' tree file (<log>.tree), which
	// `audit prove` makes proofs from: it is held to every tree note that
	// checks out, by its root and a consistency proof from the note before.
	TreeFile *merkle.Tree
}

// Verify checks one log or a rotated series with one HMAC key (nil for
// none). See VerifyWith.
func Verify(paths []string, key []byte) (*Verification, error) {
	var ring *audit.Keyring
	if key != nil {
		ring = audit.NewKeyring([][]byte{key}, nil)
	}
	return VerifyWith(paths, VerifyOptions{Keys: ring})
}

// VerifyWith checks one log or a rotated series of logs, in any order:
// files are put in chain order by the sequence number of their first
// record. It reports the first record that was edited, deleted, reordered,
// inserted or truncated; a series that does not begin at its genesis (or at
// the checkpoint named); a checkpoint that is forged, signed by an unknown
// key, of another chain, or that names a record the log does not hold as
// witnessed. An error means a file could not be read; a broken chain is
// reported in the result.
func VerifyWith(paths []string, opts VerifyOptions) (*Verification, error) {
	files, problem, err := readChainOrder(paths)
	if err != nil {
		return nil, err
	}
	return verifyFiles(files, problem, opts, nil)
}

// verifyFiles is VerifyWith of files read in chain order; problem is what
// reading them found. count, when not nil, is given every line of the
// files in the same pass, to the end even past a break, with what the line
// is as the walk checked it, with opts.Keys: the very bytes verified,
// parsed and HMAC-checked once (report counts what it verified: read
// twice, a file swapped between the reads would be counted unverified);
// c is lent for the call only. An error is a file that could not
// be read.
func verifyFiles(files []*audit.LogFile, problem *Problem, opts VerifyOptions, count func(c *audit.CheckedLine)) (*Verification, error) {
	v := &Verification{Keyed: opts.Keys.HasHMAC(), Signed: opts.Keys.HasSigning(), Notes: []string{}}
	if !v.Keyed {
		v.Notes = append(v.Notes, "no key was given: the HMACs were not checked, so an editor of the files could have rewritten the whole chain")
	}
	w := &chainWalk{v: v, ring: opts.Keys, from: opts.FromCheckpoint, recent: map[uint64]string{}, matched: map[uint64]bool{}, count: count, tree: treeWalk{file: opts.TreeFile, want: opts.Origin}}
	if problem != nil {
		v.Problem = problem
		return v, w.countOnly(files)
	}
	chain, err := seriesChain(files)
	if err != nil {
		return nil, err
	}
	// The checkpoints are chosen by the chain this first look found; the
	// walk holds the records to it (a file changed between the two reads
	// must not have its chain's checkpoints set aside unnoticed).
	w.indexedChain, w.checkpointsGiven = chain, len(opts.Checkpoints) > 0
	if p := w.indexCheckpoints(opts.Checkpoints, chain); p != nil {
		v.Problem = p
		return v, w.countOnly(files)
	}
	if p := w.indexCosigned(opts.Witnessing); p != nil {
		v.Problem = p
		return v, w.countOnly(files)
	}
	if v.Problem, err = w.walk(files); err != nil {
		return nil, err
	}
	v.LastRecord = w.lastSubstantiveSeq
	if v.Problem == nil {
		v.Problem = w.finish()
	}
	if v.Problem == nil {
		v.Problem = w.finishWitnessed()
	}
	return v, nil
}

// countOnly gives count every line, checked, when verification stopped
// before the walk: report still counts, as unverified, what it read.
func (w *chainWalk) countOnly(files []*audit.LogFile) error {
	if w.count == nil {
		return nil
	}
	p := w.newParser()
	for _, f := range files {
		err := f.Each(func(_ int, line []byte, _ bool) error {
			c := p.Check(line)
			w.count(&c)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readChainOrder reads the files and sorts them by their first record's
// sequence number. A file holding no record is a Problem, not an error:
// it was read, and what it holds breaks the chain.
func readChainOrder(paths []string) ([]*audit.LogFile, *Problem, error) {
	var files []*audit.LogFile
	var problem *Problem
	for _, p := range paths {
		f, hasRecord, err := audit.ReadLogFile(p)
		if err != nil {
			return nil, nil, err
		}
		if !hasRecord && problem == nil {
			problem = &Problem{File: p, Line: 1, What: "the file holds no audit record"}
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].First < files[j].First })
	return files, problem, nil
}

// chainWalk follows the chain through files in chain order, line by line,
// filling in v and stopping at the first break.
type chainWalk struct {
	v         *Verification
	ring      *audit.Keyring
	started   bool // a record has been accepted
	expectSeq uint64
	lastHash  string
	last      audit.Entry
	// lastSubstantive and lastSubstantiveSeq are the kind and sequence
	// number of the last record that is not a checkpoint or an anchor:
	// porthole witnesses its close record with a checkpoint after it,
	// which a rotation may precede with an anchor.
	lastSubstantive    audit.Kind
	lastSubstantiveSeq uint64
	// A line that is not a record may be a torn write that porthole
	// acknowledged with a chain-start on the next line; it is held here
	// until that line decides. tornAt is 0 when none is held.
	tornAt     int
	tornFile   string
	tornBefore string // hash of the line before the torn one

	chain string // the chain's identity, once a record names it
	// witnessed are the checkpoints given, by sequence number; latest is
	// the largest sequence number among them.
	witnessed map[uint64]audit.Checkpoint
	latest    uint64
	// from is the checkpoint verification begins at (0: genesis); fromOK
	// says a signed checkpoint of it matched.
	from   uint64
	fromOK bool
	// recent are the line hashes of the last records, by sequence number,
	// which the log's own checkpoint records are held to.
	recent map[uint64]string
	// prunedStart is the problem of a series that begins after its
	// genesis, until a signed pruned record naming the record before its
	// first (startSeq-1, hash startPrev) clears it.
	prunedStart *Problem
	startSeq    uint64
	startPrev   string
	// matched are the witnessed checkpoints a record of the walk matched;
	// sawV2 says a record of schema version 2 or later was read.
	matched map[uint64]bool
	sawV2   bool
	// count, when set, is given every line walked, checked (report's
	// counting).
	count func(c *audit.CheckedLine)
	// indexedChain is the chain the checkpoints were chosen by, and
	// checkpointsGiven whether any were.
	indexedChain     string
	checkpointsGiven bool
	tree             treeWalk
	wit              *witnessWalk // nil without Witnessing
}

// newParser is a parser of the walk's lines, for one goroutine.
func (w *chainWalk) newParser() *audit.LineParser {
	p := audit.NewLineParser(w.ring)
	p.Leaves = w.ring.HasSigning() // the tree is kept only when notes can be checked
	return p
}

// seriesChain is the chain identity the first record naming one names, or
// "" (a log written before version 2).
func seriesChain(files []*audit.LogFile) (string, error) {
	chain := ""
	for _, f := range files {
		err := f.Each(func(_ int, l []byte, _ bool) error {
			if e, err := audit.ParseLineKey(l, nil); err == nil && e.Chain != "" {
				chain = e.Chain
				return audit.ErrStopWalk
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if chain != "" {
			return chain, nil
		}
	}
	return "", nil
}

// indexCheckpoints checks the signature of each witnessed checkpoint of
// the series' chain and indexes them by sequence number. Checkpoints of
// other chains (the other replicas', collected from one cluster's
// operations log) are set aside and said so; none of the series' own, when
// some were given, is a problem.
func (w *chainWalk) indexCheckpoints(all []audit.Checkpoint, chain string) *Problem {
	w.witnessed = map[uint64]audit.Checkpoint{}
	var cps []audit.Checkpoint
	others := map[string]int{}
	for _, c := range all {
		if c.Chain == chain {
			cps = append(cps, c)
		} else {
			others[c.Chain]++
		}
	}
	if len(others) > 0 {
		w.v.Notes = append(w.v.Notes, fmt.Sprintf("%d checkpoint(s) of %d other chain(s) were set aside: they witness other logs (another replica's, or an earlier chain)", len(all)-len(cps), len(others)))
	}
	if len(all) > 0 && len(cps) == 0 {
		return &Problem{"checkpoints", 0, fmt.Sprintf("none of the %d checkpoints given is of this series' chain %q: they witness other logs", len(all), chain)}
	}
	for i, c := range cps {
		if !w.ring.HasSigning() {
			return &Problem{"checkpoints", i + 1, "checkpoints were given without a public key (--public-key) to check their signatures"}
		}
		if err := c.Check(w.ring); err != nil {
			return &Problem{"checkpoints", i + 1, fmt.Sprintf("the checkpoint of seq %d is not genuine: %v", c.Seq, err)}
		}
		if prev, ok := w.witnessed[c.Seq]; ok && (prev.Hash != c.Hash || prev.Chain != c.Chain) {
			return &Problem{"checkpoints", i + 1, fmt.Sprintf("two signed checkpoints of seq %d disagree: the log was forked", c.Seq)}
		}
		w.witnessed[c.Seq] = c
		w.latest = max(w.latest, c.Seq)
	}
	w.v.Checkpoints = len(w.witnessed)
	return nil
}

// walk checks every line of every file and returns the first break, or
// nil; with count, it reads on past the break, counting. An error is a
// file that could not be read.
func (w *chainWalk) walk(files []*audit.LogFile) (*Problem, error) {
	var problem *Problem
	for fi, f := range files {
		if problem == nil {
			w.v.Files = append(w.v.Files, f.Path)
		}
		err := f.EachChecked(w.newParser, func(i int, line []byte, c *audit.CheckedLine, last bool) error {
			if problem == nil {
				cutShort := fi == len(files)-1 && last && f.Partial
				problem = w.line(f.Path, i, fi, line, c, cutShort)
			}
			if w.count != nil {
				w.count(c)
			} else if problem != nil {
				return audit.ErrStopWalk
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if problem != nil {
		return problem, nil
	}
	if w.tornAt != 0 {
		return w.tornProblem(), nil
	}
	if w.started && w.lastSubstantive != audit.KindClose {
		w.v.Notes = append(w.v.Notes, "the log ends without a close record: porthole is still running, stopped without closing, or records were removed from the end")
	}
	return nil, nil
}

// finish holds the series to what the checkpoints witnessed, and says what
// is and is not proven.
func (w *chainWalk) finish() *Problem {
	if !w.started {
		if w.from != 0 {
			return &Problem{"", 0, fmt.Sprintf("the series does not hold the record of seq %d that --from-checkpoint names", w.from)}
		}
		return &Problem{"", 0, "the series holds no record"}
	}
	if w.prunedStart != nil {
		return w.prunedStart
	}
	if w.from != 0 && !w.fromOK {
		return &Problem{"", 0, fmt.Sprintf("no checkpoint signed by a key given witnesses seq %d, where --from-checkpoint begins", w.from)}
	}
	v := w.v
	switch {
	case len(w.witnessed) == 0:
		v.Notes = append(v.Notes, "no checkpoints were given (--checkpoints): nothing proves that records were not removed from the end of the series")
	case w.latest > v.LastSeq:
		c := w.witnessed[w.latest]
		return &Problem{"", 0, fmt.Sprintf("records %d to %d are missing: the checkpoint of %s witnessed seq %d (the end of the log was cut, or its newest file is missing)", v.LastSeq+1, w.latest, c.Time.UTC().Format(time.RFC3339), w.latest)}
	case w.latest < v.FirstSeq:
		v.Notes = append(v.Notes, "no checkpoint given witnesses a record of this series: nothing proves that records were not removed from its end")
	case !w.matched[w.latest]:
		return &Problem{"", 0, fmt.Sprintf("no record of the series is the record of seq %d that the latest checkpoint witnessed: records were removed and sequence numbers skipped", w.latest)}
	default:
		v.ProvenTo, v.ProvenAt = w.latest, w.witnessed[w.latest].Time
		for seq := range w.matched {
			if seq >= v.FirstSeq {
				v.ProvenBy++
			}
		}
		if w.lastSubstantiveSeq > w.latest {
			v.Notes = append(v.Notes, fmt.Sprintf("records %d to %d come after the latest checkpoint: that none was removed from the end after it cannot be proven", w.latest+1, v.LastSeq))
		}
	}
	return nil
}

// line checks the i'th line of the fi'th file. cutShort says it is the
// series' last line and lacks its newline.
func (w *chainWalk) line(path string, i, fi int, line []byte, c *audit.CheckedLine, cutShort bool) *Problem {
	n := i + 1
	e, err, hash := c.Entry, c.Err, c.Hash
	if errors.Is(err, audit.ErrNoKey) {
		return &Problem{path, n, err.Error() + ": give every key the log was written under (--key-file, once per key)"}
	}
	if err != nil {
		return w.notARecord(path, n, hash, err, cutShort)
	}
	if !w.started {
		skip, p := w.begin(path, n, e, hash)
		if skip {
			// Before where verification begins nothing is checked, and
			// so neither is a torn line held there.
			w.tornAt = 0
		}
		if skip || p != nil {
			return p
		}
	}
	if p := w.settleTorn(e); p != nil {
		return p
	}
	if e.V < 2 && w.sawV2 {
		return &Problem{path, n, "a record without a schema version after one with: porthole writes none; it was inserted"}
	}
	w.sawV2 = w.sawV2 || e.V >= 2
	if p := checkLink(path, n, i == 0, fi, w.started, e, w.expectSeq, w.lastHash); p != nil {
		return p
	}
	if p := w.treeEdge(path, n, e); p != nil {
		return p
	}
	if p := w.checkChainAndCheckpoints(path, n, e, hash); p != nil {
		return p
	}
	w.accept(path, n, e, hash)
	w.treeLeaf(c.Leaf, e.Kind)
	if p := w.checkCosigned(path, n); p != nil {
		return p
	}
	return w.witnessedNote(e.Seq)
}

// accept takes a record that checked out into the walk: a note for a new
// chain, the counts, and what the next record must follow.
func (w *chainWalk) accept(path string, n int, e audit.Entry, hash string) {
	if e.Kind == audit.KindChainStart {
		// Security: the reason and the chains below are the records',
		// which in a log read by its links alone anyone could have
		// written, and `audit verify` prints notes and problems to a
		// terminal: quoted unless plain.
		w.v.Notes = append(w.v.Notes, fmt.Sprintf("%s:%d: a new chain starts at seq %d: %s", path, n, e.Seq, safe(e.Reason)))
	}
	if !w.started {
		w.v.FirstSeq, w.started = e.Seq, true
	}
	w.v.Records++
	w.v.LastSeq = e.Seq
	if e.Kind != audit.KindCheckpoint && e.Kind != audit.KindAnchor {
		w.lastSubstantive, w.lastSubstantiveSeq = e.Kind, e.Seq
	}
	w.expectSeq, w.lastHash, w.last = e.Seq+1, hash, e
	w.recent[e.Seq] = hash
	delete(w.recent, e.Seq-recentRecords)
}

// recentRecords is how many records back a checkpoint record may name.
const recentRecords = 8

// begin decides where verification begins: at the genesis of the chain,
// or, with --from-checkpoint, at the record it names, skipping those
// before it.
func (w *chainWalk) begin(path string, n int, e audit.Entry, hash string) (skip bool, p *Problem) {
	if w.from == 0 {
		if e.Kind == audit.KindChainStart && e.Prev == "" && e.Seq == 1 {
			return false, nil
		}
		// Not the genesis: only a signed pruned record later in the
		// series, naming the record before this one, accounts for what
		// is missing (checked in finish). The chain is taken up here.
		w.prunedStart = &Problem{path, n, fmt.Sprintf("the series begins at seq %d, not at its genesis (a new log's first record), and no pruned record signed by a key given names what came before it: earlier records or files are missing; or name a checkpoint to verify from (--from-checkpoint)", e.Seq)}
		w.startSeq, w.startPrev = e.Seq, e.Prev
		w.started, w.v.FirstSeq, w.lastHash, w.expectSeq = true, e.Seq, e.Prev, e.Seq
		w.recent[e.Seq-1] = e.Prev // what a checkpoint just after the start may name
		return false, nil
	}
	switch {
	case e.Seq < w.from:
		return true, nil
	case e.Seq > w.from:
		return false, &Problem{path, n, fmt.Sprintf("the series does not hold the record of seq %d that --from-checkpoint names", w.from)}
	}
	if c, ok := w.witnessed[w.from]; ok {
		if c.Hash != hash {
			return false, &Problem{path, n, fmt.Sprintf("the record of seq %d is not the one its checkpoint witnessed", w.from)}
		}
		w.fromOK, w.chain = true, c.Chain
	}
	// The chain is taken up here: its link to what came before is not
	// checked.
	w.started, w.v.FirstSeq, w.lastHash, w.expectSeq = true, e.Seq, e.Prev, e.Seq
	w.recent[e.Seq-1] = e.Prev
	return false, nil
}

// checkChainAndCheckpoints holds a record to its chain's identity, to a
// witnessed checkpoint of its sequence number, and, for a checkpoint
// record, to its signature and the record it names; and reports the
// records a chain-start says are missing.
func (w *chainWalk) checkChainAndCheckpoints(path string, n int, e audit.Entry, hash string) *Problem {
	if p := w.checkChain(path, n, e); p != nil {
		return p
	}
	if p := w.checkWitnessed(path, n, e, hash); p != nil {
		return p
	}
	if e.MissingTo != 0 {
		return &Problem{path, n, fmt.Sprintf("records %d to %d are missing: porthole found the log shorter than its latest witnessed checkpoint when it started (verify from a later checkpoint with --from-checkpoint)", e.MissingFrom, e.MissingTo)}
	}
	if e.Kind == audit.KindCheckpoint && e.Checkpoint != nil {
		return w.checkpointRecord(path, n, *e.Checkpoint)
	}
	if e.Kind == audit.KindPruned && e.Pruned != nil {
		return w.prunedRecord(path, n, *e.Pruned)
	}
	return nil
}

// checkChain holds a record that names its chain to a chain id porthole
// makes, the series' own, and the one the checkpoints were chosen for.
func (w *chainWalk) checkChain(path string, n int, e audit.Entry) *Problem {
	if e.Chain == "" {
		return nil
	}
	if !isChainID(e.Chain) {
		// Security: a chain id reaches the verdict, verify's output and
		// the report's header; one a forger wrote (links only) could
		// carry terminal escapes or bidi overrides, so it is not echoed.
		return &Problem{path, n, "the record names a chain that is not a chain id porthole makes (32 hex digits): it was forged or corrupted"}
	}
	if w.chain != "" && e.Chain != w.chain {
		return &Problem{path, n, fmt.Sprintf("the record names chain %s, but the series is chain %s: logs of different chains (another replica's?) are mixed", safe(e.Chain), safe(w.chain))}
	}
	if w.checkpointsGiven && e.Chain != w.indexedChain {
		return &Problem{path, n, fmt.Sprintf("the record names chain %s, but the checkpoints were chosen for chain %q when the files were first read: the files changed while they were verified", safe(e.Chain), w.indexedChain)}
	}
	w.chain, w.v.Chain = e.Chain, e.Chain
	return nil
}

// checkWitnessed holds a record a checkpoint witnessed to that
// checkpoint: of this series' chain, with this very line's hash.
func (w *chainWalk) checkWitnessed(path string, n int, e audit.Entry, hash string) *Problem {
	c, ok := w.witnessed[e.Seq]
	if !ok {
		return nil
	}
	if w.chain != "" && c.Chain != w.chain {
		return &Problem{path, n, fmt.Sprintf("the checkpoint of seq %d is of chain %s, not of this series' chain %s: it witnesses another log", e.Seq, safe(c.Chain), safe(w.chain))}
	}
	if c.Hash != hash {
		return &Problem{path, n, fmt.Sprintf("the record of seq %d is not the one the checkpoint of %s witnessed: it was edited or replaced", e.Seq, c.Time.UTC().Format(time.RFC3339))}
	}
	w.matched[e.Seq] = true
	return nil
}

// prunedRecord checks a pruned record's signature and chain, and clears
// the problem of a series that begins where it says the removed records
// ended.
func (w *chainWalk) prunedRecord(path string, n int, p audit.Checkpoint) *Problem {
	if !w.ring.HasSigning() {
		return nil // without a public key it accounts for nothing
	}
	if err := p.CheckAs(audit.LabelPruned, w.ring); err != nil {
		return &Problem{path, n, fmt.Sprintf("the pruned record is not genuine: %v", err)}
	}
	if p.Chain != w.chain {
		return &Problem{path, n, fmt.Sprintf("the pruned record is of chain %s, not %s", safe(p.Chain), safe(w.chain))}
	}
	if w.prunedStart != nil && p.Seq+1 == w.startSeq && p.Hash == w.startPrev {
		w.prunedStart = nil
		w.v.Notes = append(w.v.Notes, fmt.Sprintf("%s:%d: records up to seq %d were pruned, by a signed pruned record of %s; the series verifies from seq %d", path, n, p.Seq, p.Time.UTC().Format(time.RFC3339), w.startSeq))
	}
	return nil
}

// checkpointRecord checks a checkpoint record of the log itself.
func (w *chainWalk) checkpointRecord(path string, n int, c audit.Checkpoint) *Problem {
	if !w.ring.HasSigning() {
		return nil
	}
	if err := c.Check(w.ring); err != nil {
		return &Problem{path, n, fmt.Sprintf("the checkpoint record is not genuine: %v", err)}
	}
	if c.Chain != w.chain {
		return &Problem{path, n, fmt.Sprintf("the checkpoint record is of chain %s, not %s", safe(c.Chain), safe(w.chain))}
	}
	if h, ok := w.recent[c.Seq]; !ok || h != c.Hash {
		return &Problem{path, n, fmt.Sprintf("the checkpoint record does not witness the record of seq %d as the log holds it", c.Seq)}
	}
	if c.Seq == w.from {
		w.fromOK = true
	}
	if c.Note != "" {
		return w.checkNote(path, n, c.Note)
	}
	return nil
}

// notARecord decides what a line that does not parse means: an edit when
// its HMAC is wrong, a truncation when it is the cut-short end of the
// series, and otherwise perhaps a torn write, which the next record decides.
func (w *chainWalk) notARecord(path string, n int, hash string, err error, cutShort bool) *Problem {
	if errors.Is(err, audit.ErrBadMAC) {
		return &Problem{path, n, "the record's HMAC does not match: it was edited, or inserted by someone without the key"}
	}
	if cutShort {
		return &Problem{path, n, "the log is truncated: its last line is cut short"}
	}
	if w.tornAt != 0 {
		return w.tornProblem()
	}
	w.tornAt, w.tornFile, w.tornBefore = n, path, w.lastHash
	w.lastHash = hash
	return nil
}

// settleTorn decides a held torn line by the record after it: only a
// chain-start linking to the line before the torn one acknowledges it.
func (w *chainWalk) settleTorn(e audit.Entry) *Problem {
	if w.tornAt == 0 {
		return nil
	}
	if e.Kind != audit.KindChainStart || e.Prev != w.tornBefore {
		return w.tornProblem()
	}
	w.v.Notes = append(w.v.Notes, fmt.Sprintf("%s:%d: a torn write, acknowledged by the chain-start on the next line", w.tornFile, w.tornAt))
	w.lastHash, w.tornAt = w.tornBefore, 0
	return nil
}

func (w *chainWalk) tornProblem() *Problem {
	return &Problem{w.tornFile, w.tornAt, "the line is not an audit record: it was edited or corrupted"}
}

// checkChainStart checks that a chain-start follows the record before it:
// it links to it, or starts a file of a version 1 series, and takes the
// next sequence number.
func checkChainStart(path string, line int, firstInFile bool, e audit.Entry, expectSeq uint64, lastHash string) *Problem {
	switch {
	case e.Prev == "" && e.V >= 2:
		return &Problem{path, line, "a second genesis (a chain-start linked to nothing) inside the series"}
	case e.Prev == "" && !firstInFile:
		return &Problem{path, line, "a chain-start that links to nothing, in the middle of a file"}
	case e.Prev != "" && e.Prev != lastHash:
		return &Problem{path, line, "the chain-start does not link to the line before it: records were removed or edited"}
	// Since schema version 2 a chain-start never reuses or skips a
	// sequence number; one that names missing records is reported by the
	// caller.
	case e.V >= 2 && e.Prev != "" && e.MissingTo == 0 && e.Seq != expectSeq:
		return &Problem{path, line, fmt.Sprintf("the chain-start has seq %d where %d was due: records were removed, or a sequence number was used twice", e.Seq, expectSeq)}
	}
	return nil
}

// checkLink checks that a record follows the one before it.
func checkLink(path string, line int, firstInFile bool, fileIndex int, started bool, e audit.Entry, expectSeq uint64, lastHash string) *Problem {
	if !started {
		return nil // the first record given starts what can be checked
	}
	if e.Kind == audit.KindChainStart {
		return checkChainStart(path, line, firstInFile, e, expectSeq, lastHash)
	}
	switch {
	case e.Seq > expectSeq && firstInFile && fileIndex > 0:
		return &Problem{path, line, fmt.Sprintf("records %d to %d are missing: a file of the series is missing", expectSeq, e.Seq-1)}
	case e.Seq > expectSeq:
		return &Problem{path, line, fmt.Sprintf("records %d to %d are missing: they were deleted", expectSeq, e.Seq-1)}
	case e.Seq < expectSeq:
		return &Problem{path, line, fmt.Sprintf("record %d comes after record %d: records were reordered or duplicated", e.Seq, expectSeq-1)}
	case e.Prev != lastHash && firstInFile && fileIndex > 0:
		return &Problem{path, line, "the first record does not link to the last record of " + filepath.Base(path) + "'s predecessor: a file is missing or was edited"}
	case e.Prev != lastHash:
		return &Problem{path, line, "the record does not link to the line before it: a record was deleted, inserted or reordered"}
	}
	return nil
}

// isChainID reports whether s is a chain identity as porthole makes one
// (newChainID): 32 lowercase hex digits.
func isChainID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
