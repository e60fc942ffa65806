package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/review"
)

// errProofRefused makes check-proof exit 1 without a usage message.
var errProofRefused = fmt.Errorf("the proof does not check")

// takeTreeFile takes the tree file out of the files named: one ending in
// audit.TreeSuffix (a glob of audit.log* names it), or the one --tree
// names. It returns the log files and the tree file's path, "" for none.
func takeTreeFile(files []string, named string) (logs []string, tree string, err error) {
	tree = named
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, audit.CosignaturesSuffix):
			// The witnesses' cosignatures: --cosigned reads them.
		case !strings.HasSuffix(f, audit.TreeSuffix):
			logs = append(logs, f)
		case tree != "" && tree != f:
			return nil, "", fmt.Errorf("%w: two tree files, %s and %s: a series has one", errUsage, tree, f)
		default:
			tree = f
		}
	}
	return logs, tree, nil
}

// withoutTreeFiles is files without those porthole keeps beside a log
// (its tree, its cosignatures), as a glob of audit.log* names them: for
// the commands that read the records alone.
func withoutTreeFiles(files []string) []string {
	return slices.DeleteFunc(slices.Clone(files), audit.BesideTheLog)
}

func runAuditProve(args []string, stdout, stderr io.Writer) error {
	var seq uint64
	var requestID, kind, treePath, out string
	s := newSettings("audit prove", "Print a record of a trail kept as a Merkle tree with its inclusion proof against the latest signed checkpoint.", stderr)
	s.fs.Uint64Var(&seq, "seq", 0, "the sequence number of the record to prove")
	s.fs.StringVar(&requestID, "request-id", "", "prove the record of this request id (its call record, or --kind's)")
	s.fs.StringVar(&kind, "kind", "call", "with --request-id, the kind of record to prove: call or result")
	s.fs.StringVar(&treePath, "tree", "", "the tree file (default: the log's name with "+audit.TreeSuffix+", beside the last file given, the name a rotated file was rotated from)")
	s.fs.StringVar(&out, "o", "", "write the proof to this file (default: standard output)")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	logs, treePath, err := takeTreeFile(files, treePath)
	switch {
	case err != nil:
		return err
	case len(logs) == 0:
		return fmt.Errorf("%w: name the log files of the series", errUsage)
	case (seq == 0) == (requestID == ""):
		return fmt.Errorf("%w: name the record with --seq or --request-id, one of them", errUsage)
	case kind != string(audit.KindCall) && kind != string(audit.KindResult):
		return fmt.Errorf("%w: --kind %s: call or result", errUsage, strconv.QuoteToASCII(kind))
	}
	if treePath == "" {
		// The tree file is the log's, beside the file porthole writes,
		// which a rotated file's name leads to.
		treePath = audit.RotatedFrom(logs[len(logs)-1]) + audit.TreeSuffix
	}
	tree, err := merkle.ReadTree(treePath)
	if err != nil {
		return fmt.Errorf("reading the tree file (--tree): %w", err)
	}
	defer tree.Close()
	p, err := review.Prove(logs, tree, review.Pick{Seq: seq, RequestID: requestID, Kind: audit.Kind(kind)})
	if err != nil {
		return err
	}
	if out == "" {
		_, err = stdout.Write(p.Marshal())
		return err
	}
	return writeNew(out, p.Marshal(), 0o600)
}

func runAuditCheckProof(args []string, stdout, stderr io.Writer) error {
	var publicKeys fileList
	var origin string
	s := newSettings("audit check-proof", "Check a record's proof (from porthole audit prove) with the log's public key alone.", stderr)
	s.fs.Var(&publicKeys, "public-key", "a public key (from porthole audit keygen) of a key that signs the log's checkpoints; once per key")
	s.fs.StringVar(&origin, "origin", "", "the origin the log's checkpoints name (PORTHOLE_AUDIT_ORIGIN): the proof must be of that trail, since one key may sign several")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 || len(publicKeys) == 0 || origin == "" {
		return fmt.Errorf("%w: audit check-proof --public-key FILE --origin ORIGIN PROOF", errUsage)
	}
	opts, _, err := verifyOptions(nil, publicKeys, nil, "", stdout)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	p, err := review.ParseRecordProof(b)
	if err != nil {
		fmt.Fprintf(stdout, "REFUSED: %s\n", printable(err.Error()))
		return errProofRefused
	}
	cp, e, err := p.Check(opts.Keys)
	if err == nil && cp.Origin != origin {
		err = fmt.Errorf("the checkpoint is of origin %s, not %s", strconv.QuoteToASCII(cp.Origin), strconv.QuoteToASCII(origin))
	}
	if err != nil {
		// Security: what the error quotes of the proof passed
		// merkle.CheckOrigin or is quoted; QuoteToASCII holds the rest.
		fmt.Fprintf(stdout, "REFUSED: %s\n", printable(err.Error()))
		return errProofRefused
	}
	// Security: the record's fields are the trail's, which whoever made
	// the proof wrote: quoted, never echoed raw to a terminal.
	fmt.Fprintf(stdout, "OK: record %d is leaf %d of the tree of %d records of origin %s, by a checkpoint signed with a key given\n", e.Seq, p.Index, cp.Size, strconv.QuoteToASCII(cp.Origin))
	fmt.Fprintf(stdout, "  kind %s, time %s, principal %s, tool %s, request %s\n", strconv.QuoteToASCII(string(e.Kind)), e.Time.UTC().Format(time.RFC3339Nano), strconv.QuoteToASCII(e.Principal), strconv.QuoteToASCII(e.Tool), strconv.QuoteToASCII(e.RequestID))
	fmt.Fprintf(stdout, "  record: %s\n", strconv.QuoteToASCII(string(p.Line)))
	return nil
}

func runAuditNoteKey(args []string, stdout, stderr io.Writer) error {
	var publicKey, origin string
	s := newSettings("audit note-key", "Print the note verifier key of a log's signed tree checkpoints, for tools other than porthole's.", stderr)
	s.fs.StringVar(&publicKey, "public-key", "", "the public key (from porthole audit keygen) of the key that signs the log's checkpoints")
	s.fs.StringVar(&origin, "origin", "", "the log's origin (PORTHOLE_AUDIT_ORIGIN)")
	if err := s.parse(args); err != nil {
		return err
	}
	if publicKey == "" || origin == "" {
		return fmt.Errorf("%w: audit note-key --public-key FILE --origin ORIGIN", errUsage)
	}
	pub, err := readPublicKey(publicKey)
	if err != nil {
		return err
	}
	vkey, err := merkle.VerifierKey(origin, pub)
	if err != nil {
		return fmt.Errorf("%w: --origin: %v", errUsage, err)
	}
	_, err = fmt.Fprintln(stdout, vkey)
	return err
}

// printable is s when it is printable ASCII, and else s quoted.
func printable(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
