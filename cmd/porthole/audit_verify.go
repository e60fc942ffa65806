package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/review"
)

// fileList is a flag that may be given more than once.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// errChainBroken makes verify exit 1 without a usage message.
var errChainBroken = fmt.Errorf("the audit chain is broken")

// errNotComplete makes verify and report, with --require-complete, exit 3
// without a usage message: the chain holds, but a signed checkpoint does
// not prove every series complete to its last record.
var errNotComplete = fmt.Errorf("the audit trail is not proven complete")

// verifyFlags are the keys and checkpoints a verifier is given: verify and
// report take the same flags.
type verifyFlags struct {
	keyFiles, publicKeys, checkpointFiles fileList
	from                                  string
	requireComplete                       bool
	// evidence names what options read, a line each, for a page's header.
	evidence []string
}

func (v *verifyFlags) register(s *settings) {
	s.fs.Var(&v.keyFiles, "key-file", "an HMAC key the log was written under; once per key across rotations ($PORTHOLE_AUDIT_KEY_FILE when none is given); without any, only the links are checked")
	s.fs.Var(&v.publicKeys, "public-key", "a public key (from porthole audit keygen) of a key that signed checkpoints; once per key")
	s.fs.Var(&v.checkpointFiles, "checkpoints", "a file of signed checkpoints (the checkpoint file, or lines collected from the operations log); the series must reach the latest")
	s.fs.StringVar(&v.from, "from-checkpoint", "", "verify from the record a signed checkpoint of this sequence number names, not from the log's genesis")
	s.fs.BoolVar(&v.requireComplete, "require-complete", false, "exit 3 unless every series is proven complete to its last record by a signed checkpoint (--public-key, --checkpoints): for a scheduled check that nothing was cut from the end")
}

// options reads the keys and checkpoints named, with $PORTHOLE_AUDIT_KEY_FILE
// when no --key-file was given. Notes on what was given go to notes; what
// was read is kept in v.evidence.
func (v *verifyFlags) options(notes io.Writer) (review.VerifyOptions, error) {
	keyFiles := v.keyFiles
	fromEnv := false
	if env := os.Getenv("PORTHOLE_AUDIT_KEY_FILE"); len(keyFiles) == 0 && env != "" {
		keyFiles, fromEnv = fileList{env}, true
	}
	opts, evidence, err := verifyOptions(keyFiles, v.publicKeys, v.checkpointFiles, v.from, notes)
	if fromEnv && len(evidence) > 0 {
		evidence[0] += " ($PORTHOLE_AUDIT_KEY_FILE)"
	}
	v.evidence = evidence
	return opts, err
}

func runAuditVerify(args []string, stdout, stderr io.Writer) error {
	var vf verifyFlags
	s := newSettings("audit verify", "Check an audit log or a rotated series of logs.", stderr)
	vf.register(s)
	var treePath string
	var wf witnessFlags
	wf.register(s)
	s.fs.StringVar(&treePath, "tree", "", "the series' tree file (<log>"+audit.TreeSuffix+"), held to each signed tree checkpoint; a file named so among the logs is taken as it")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	files, treePath, err = takeTreeFile(files, treePath)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: name at least one log file", errUsage)
	}
	opts, err := vf.options(stdout)
	if err != nil {
		return err
	}
	if err := wf.apply(&opts, &vf.evidence); err != nil {
		return err
	}
	if treePath != "" {
		if opts.TreeFile, err = merkle.ReadTree(treePath); err != nil {
			return fmt.Errorf("reading the tree file: %w", err)
		}
		defer opts.TreeFile.Close()
	}
	v, err := review.VerifyWith(files, opts)
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
	fmt.Fprintf(stdout, "OK: %d records in %d files, seq %d to %d\n", v.Records, len(v.Files), v.FirstSeq, v.LastSeq)
	for _, line := range v.Basis() {
		fmt.Fprintln(stdout, "  "+line)
	}
	if vf.requireComplete && !v.ProvenComplete() {
		fmt.Fprintf(stdout, "NOT COMPLETE: no signed checkpoint proves the series to its last record (seq %d); --require-complete exits 3\n", v.LastRecord)
		return errNotComplete
	}
	return nil
}

// verifyOptions reads the keys and checkpoints a verifier was given, and
// names each, a line each: the key files with the ids of the keys read
// from them, the very keys the options hold (a page names these, not what
// a second read of the files would find).
func verifyOptions(keyFiles, publicKeys, checkpointFiles []string, from string, stdout io.Writer) (opts review.VerifyOptions, evidence []string, err error) {
	var keys [][]byte
	for _, f := range keyFiles {
		k, err := readAuditKey(f)
		if err != nil {
			return opts, nil, err
		}
		keys = append(keys, k)
		evidence = append(evidence, "HMAC key file "+f+" (key id "+audit.KeyID(k)+")")
	}
	var pubs []ed25519.PublicKey
	for _, f := range publicKeys {
		p, err := readPublicKey(f)
		if err != nil {
			return opts, nil, err
		}
		pubs = append(pubs, p)
		evidence = append(evidence, "checkpoint signing public key file "+f+" (key id "+audit.SigningKeyID(p)+")")
	}
	if len(keys)+len(pubs) > 0 {
		opts.Keys = audit.NewKeyring(keys, pubs)
	}
	for _, f := range checkpointFiles {
		cps, skipped, err := audit.ReadCheckpoints(f)
		if err != nil {
			return opts, nil, fmt.Errorf("reading --checkpoints: %w", err)
		}
		evidence = append(evidence, "checkpoints file "+f)
		for _, n := range skipped {
			fmt.Fprintf(stdout, "note: %s:%d is not a checkpoint (a checkpoint file write cut short, or not one of porthole's lines); it was not read\n", f, n)
		}
		opts.Checkpoints = append(opts.Checkpoints, cps...)
	}
	if from != "" {
		n, err := strconv.ParseUint(from, 10, 64)
		if err != nil || n == 0 {
			return opts, nil, fmt.Errorf("%w: --from-checkpoint %q is not a sequence number", errUsage, from)
		}
		opts.FromCheckpoint = n
		evidence = append(evidence, "verified from the record of the checkpoint of seq "+from+" (--from-checkpoint); records before it are not counted")
	}
	return opts, evidence, nil
}

// readPublicKey reads a checkpoint signing public key (--public-key).
func readPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := audit.ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: --public-key %s: %v", errUsage, path, err)
	}
	return p, nil
}

func runAuditKeygen(args []string, stdout, stderr io.Writer) error {
	var privFile, pubFile string
	s := newSettings("audit keygen", "Write an Ed25519 key pair for signing the audit log's checkpoints.", stderr)
	s.fs.StringVar(&privFile, "private-key-file", "", "where to write the private key (PEM PKCS #8, mode 0600): give it to porthole as PORTHOLE_AUDIT_SIGNING_KEY_FILE")
	s.fs.StringVar(&pubFile, "public-key-file", "", "where to write the public key (PEM): give it to reviewers, for audit verify --public-key")
	if err := s.parse(args); err != nil {
		return err
	}
	if privFile == "" || pubFile == "" {
		return fmt.Errorf("%w: audit keygen needs --private-key-file and --public-key-file", errUsage)
	}
	priv, pub, err := audit.GenerateSigningKey()
	if err != nil {
		return err
	}
	// Never over a key that exists: it may be the one that signed a trail.
	if err := writeNew(privFile, priv, 0o600); err != nil {
		return err
	}
	if err := writeNew(pubFile, pub, 0o644); err != nil {
		os.Remove(privFile)
		return err
	}
	k, _ := audit.ParsePublicKey(pub)
	fmt.Fprintf(stdout, "wrote %s and %s (key id %s)\n", privFile, pubFile, audit.SigningKeyID(k))
	return nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists; porthole does not write a key over another", errUsage, path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func runAuditPrune(args []string, stdout, stderr io.Writer) error {
	var keyFiles, publicKeys fileList
	var before, signingKeyFile string
	s := newSettings("audit prune", "Remove the oldest files of an archived audit series, leaving a signed pruned record.", stderr)
	s.fs.StringVar(&before, "before", "", "remove the oldest files whose every record is before this time (RFC 3339, or a duration ago such as 8760h)")
	s.fs.Var(&keyFiles, "key-file", "the HMAC key the pruned record is written under (the first given), and any older key the series was written under")
	s.fs.StringVar(&signingKeyFile, "signing-key-file", "", "the Ed25519 private key that signs the pruned record")
	s.fs.Var(&publicKeys, "public-key", "a public key of a key that signed the series' checkpoints or pruned records before; once per key")
	files, err := parseInterspersed(s.fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 || before == "" || len(keyFiles) == 0 || signingKeyFile == "" {
		return fmt.Errorf("%w: audit prune needs --before, --key-file, --signing-key-file and the series' files", errUsage)
	}
	when, err := parseWhen(before)
	if err != nil {
		return err
	}
	signer, _, err := readSigningKey(signingKeyFile)
	if err != nil {
		return err
	}
	opts, _, err := verifyOptions(keyFiles, publicKeys, nil, "", stdout)
	if err != nil {
		return err
	}
	key, _ := readAuditKey(keyFiles[0])
	// A glob of audit.log* names the tree file too; pruning keeps it
	// whole (docs/audit.md).
	files = withoutTreeFiles(files)
	removed, err := review.Prune(files, when, opts, key, signer, time.Now())
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdout, "nothing to prune: no file of the series holds only records before", when.UTC().Format(time.RFC3339))
		return nil
	}
	for _, f := range removed {
		fmt.Fprintln(stdout, "removed", f)
	}
	return nil
}
