package main

import (
	"crypto/ed25519"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/audit/merkle"
	"github.com/porthole-dev/porthole/audit/witness"
	"github.com/porthole-dev/porthole/gateway/tlsclient"
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
	// Signed checkpoints (audit.Config.Signer and the rest).
	signingKeyFile       string
	checkpointFile       string
	checkpointEvery      int
	checkpointInterval   time.Duration
	checkpointSameVolume bool
	origin               string
	// The witnesses (audit.Config.Witnesses and the rest).
	witnesses     string
	witnessQuorum int
	witnessMaxLag time.Duration
	// parsedWitnesses are the witnesses check read.
	parsedWitnesses []witness.Witness
	maxAge          time.Duration
	minFreeBytes    int64
}

// defaultAuditMinFreeBytes is the free space kept on the audit log's file
// system by default. What must fit in it is small (the result records of
// the calls in flight, denials within their budget, checkpoints, the close
// record: kilobytes); what it is against is a disk that fills while porthole
// writes, from the log or from anything else on the volume, between two
// checks. 64 MiB is small beside any volume worth keeping a trail on, and
// large beside what must fit (docs/audit.md, Health).
const defaultAuditMinFreeBytes = 64 << 20

func (a *auditSettings) register(s *settings) {
	s.string(&a.path, "audit-log", "PORTHOLE_AUDIT_LOG", "stderr", "audit log: a file path, or stdout or stderr")
	s.string(&a.keyFile, "audit-key-file", "PORTHOLE_AUDIT_KEY_FILE", "", "file holding the key (at least 32 bytes) of the audit records' HMAC; without it a random key is used and the log cannot be verified after exit")
	s.string(&a.fsync, "audit-fsync", "PORTHOLE_AUDIT_FSYNC", "interval", "always: fsync each record before the call proceeds; interval: within a second")
	numeric(s, &a.timeout, "audit-timeout", "PORTHOLE_AUDIT_TIMEOUT", 2*time.Second, false, "how long a call waits for its audit record before it is refused")
	numeric(s, &a.maxBytes, "audit-max-bytes", "PORTHOLE_AUDIT_MAX_BYTES", 100<<20, true, "rotate the audit file above this size; 0 never rotates")
	numeric(s, &a.denialBudget, "audit-denial-budget", "PORTHOLE_AUDIT_DENIAL_BUDGET", 10, false, "denial records written one by one per client address (per principal for its rate limit) per interval; past it they are summarised")
	numeric(s, &a.denialInterval, "audit-denial-interval", "PORTHOLE_AUDIT_DENIAL_INTERVAL", time.Minute, false, "the interval of the denial budget; one summary record per client per interval")
	numeric(s, &a.denialClients, "audit-denial-clients", "PORTHOLE_AUDIT_DENIAL_CLIENTS", 10000, false, "clients the denial budget tracks at once; past it the least recently seen is summarised at once")
	s.string(&a.signingKeyFile, "audit-signing-key-file", "PORTHOLE_AUDIT_SIGNING_KEY_FILE", "", "Ed25519 private key (PEM, from porthole audit keygen) that signs the audit log's checkpoints; without it no checkpoint is written")
	s.string(&a.checkpointFile, "audit-checkpoint-file", "PORTHOLE_AUDIT_CHECKPOINT_FILE", "", "the checkpoint file, on another volume than the audit log: each signed checkpoint is appended to it, a restart continues from it, and a reviewer verifies with it")
	numeric(s, &a.checkpointEvery, "audit-checkpoint-every", "PORTHOLE_AUDIT_CHECKPOINT_EVERY", audit.DefaultCheckpointEvery, false, "sign a checkpoint after this many records")
	numeric(s, &a.checkpointInterval, "audit-checkpoint-interval", "PORTHOLE_AUDIT_CHECKPOINT_INTERVAL", audit.DefaultCheckpointInterval, false, "sign a checkpoint this long after the last, when records were written since")
	numeric(s, &a.maxAge, "audit-max-age", "PORTHOLE_AUDIT_MAX_AGE", 0, true, "remove rotated audit files rotated longer ago than this, after a signed pruned record (needs the signing key); 0 keeps them")
	numeric(s, &a.minFreeBytes, "audit-min-free-bytes", "PORTHOLE_AUDIT_MIN_FREE_BYTES", defaultAuditMinFreeBytes, true, "refuse calls while the audit log's file system has less free space than this, keeping it for the records of calls already made; 0 never refuses (a file log only: a stream has no free space to check)")
	s.string(&a.witnesses, "audit-witnesses", "PORTHOLE_AUDIT_WITNESSES", "", "the witnesses each checkpoint of the tree is sent to (needs an origin): entries separated by commas, each a witness's URL and its cosignature/v1 verifier key separated by a space (from porthole witness keygen); their cosignatures are kept in <audit log>.cosignatures")
	numeric(s, &a.witnessQuorum, "audit-witness-quorum", "PORTHOLE_AUDIT_WITNESS_QUORUM", 1, true, "with PORTHOLE_AUDIT_WITNESS_MAX_LAG, how many witnesses must keep up for calls to be made")
	numeric(s, &a.witnessMaxLag, "audit-witness-max-lag", "PORTHOLE_AUDIT_WITNESS_MAX_LAG", 0, true, "refuse calls while fewer than PORTHOLE_AUDIT_WITNESS_QUORUM witnesses have cosigned every checkpoint sent longer ago than this; 0 never refuses (a witness down is only reported)")
	s.string(&a.origin, "audit-origin", "PORTHOLE_AUDIT_ORIGIN", "", "the origin of this audit log's Merkle tree: the name of this series of this trail (stable, known before it starts, one per replica, never used again once the trail is lost; docs/audit.md), under which each signed checkpoint carries a C2SP tlog-checkpoint note; the records are kept as a tree in <audit log>.tree; printable ASCII without spaces or +, at most 255 bytes; needs the signing key, a file audit log and PORTHOLE_AUDIT_CHECKPOINT_FILE; empty keeps no tree")
	s.bool(&a.checkpointSameVolume, "audit-checkpoint-same-volume", "PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME", "allow the checkpoint file on the audit log's own volume (for development: whoever can cut the log can then cut the checkpoint file too)")
}

// readSigningKey reads the checkpoint signing key.
func readSigningKey(path string) (ed25519.PrivateKey, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the audit signing key file: %w", err)
	}
	k, err := audit.ParseSigningKey(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: PORTHOLE_AUDIT_SIGNING_KEY_FILE %s: %v (make one with porthole audit keygen)", errUsage, path, err)
	}
	return k, b, nil
}

// checkCheckpointFile refuses a checkpoint file without a signing key, and
// one on the audit log's own volume unless that was allowed: a checkpoint
// file that sits beside the log is cut with it.
func (a *auditSettings) checkCheckpointFile(log *zap.Logger, signer ed25519.PrivateKey) error {
	switch {
	case a.checkpointFile != "" && signer == nil:
		return fmt.Errorf("%w: PORTHOLE_AUDIT_CHECKPOINT_FILE is set without PORTHOLE_AUDIT_SIGNING_KEY_FILE: there is nothing to sign checkpoints with", errUsage)
	case a.checkpointFile == "" && signer != nil:
		log.Warn("WARNING: PORTHOLE_AUDIT_CHECKPOINT_FILE is not set: checkpoints go only into the audit log and the operations log, so a restart cannot tell that the log's end was cut")
		return nil
	case a.checkpointFile != "" && (a.path == "stderr" || a.path == "stdout" || a.path == ""):
		return fmt.Errorf("%w: PORTHOLE_AUDIT_CHECKPOINT_FILE needs PORTHOLE_AUDIT_LOG to be a file: a chain on a stream starts anew at each start, and nothing of it can be continued or pruned", errUsage)
	case a.checkpointFile == "":
		return nil
	}
	same, err := sameVolume(filepath.Dir(a.path), filepath.Dir(a.checkpointFile))
	if err != nil {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_CHECKPOINT_FILE: %v", errUsage, err)
	}
	if same && !a.checkpointSameVolume {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_CHECKPOINT_FILE %s is on the audit log's own volume: whoever can cut the log could cut the checkpoint file too; put it on another volume (or set PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true for development)", errUsage, a.checkpointFile)
	}
	if same {
		log.Warn("WARNING: the audit checkpoint file is on the audit log's own volume (PORTHOLE_AUDIT_CHECKPOINT_SAME_VOLUME=true): it proves nothing a volume's owner could not undo")
	}
	return nil
}

// checkOrigin refuses an origin the tree cannot be kept under: one without
// the signing key (its checkpoints are signed notes) or a file log (the
// tree is a file beside it), and one that is no C2SP tlog-checkpoint
// origin and signed-note key name (printable ASCII, no space, no +).
func (a *auditSettings) checkOrigin(signer ed25519.PrivateKey) error {
	if a.origin == "" {
		return nil
	}
	if signer == nil || a.path == "" || a.path == "stderr" || a.path == "stdout" || a.checkpointFile == "" {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_ORIGIN needs PORTHOLE_AUDIT_SIGNING_KEY_FILE (each checkpoint is a note signed under the origin), a file PORTHOLE_AUDIT_LOG (the tree is kept beside it) and PORTHOLE_AUDIT_CHECKPOINT_FILE (a restart holds the trail to it, and no note leaves before the records it names are synced)", errUsage)
	}
	if err := merkle.CheckOrigin(a.origin); err != nil {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_ORIGIN=%s: %v", errUsage, strconv.QuoteToASCII(a.origin), err)
	}
	return nil
}

// checkWitnesses refuses witnesses without an origin (they cosign a
// tree), a list that does not parse, and a quorum no list can meet.
func (a *auditSettings) checkWitnesses() error {
	if a.witnesses == "" {
		if a.witnessMaxLag > 0 {
			return fmt.Errorf("%w: PORTHOLE_AUDIT_WITNESS_MAX_LAG is set without PORTHOLE_AUDIT_WITNESSES", errUsage)
		}
		return nil
	}
	if a.origin == "" {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_WITNESSES needs PORTHOLE_AUDIT_ORIGIN: witnesses cosign the checkpoints of a trail kept as a Merkle tree", errUsage)
	}
	ws, err := witness.ParseWitnesses(a.witnesses)
	if err != nil {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_WITNESSES: %v", errUsage, err)
	}
	if a.witnessQuorum < 1 || a.witnessQuorum > len(ws) {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_WITNESS_QUORUM=%d: between 1 and the %d witnesses given", errUsage, a.witnessQuorum, len(ws))
	}
	a.parsedWitnesses = ws
	return nil
}

// witnessClient is the HTTP client of the witnesses: porthole's TLS
// settings, and a timeout.
func witnessClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsclient.Config(), Proxy: http.ProxyFromEnvironment}}
}

// sameVolume reports whether two directories are on one file system.
func sameVolume(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev, nil
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

// check refuses settings that cannot stand together, before anything is
// opened.
func (a *auditSettings) check(log *zap.Logger, signer ed25519.PrivateKey) error {
	if err := a.checkCheckpointFile(log, signer); err != nil {
		return err
	}
	if err := a.checkOrigin(signer); err != nil {
		return err
	}
	if err := a.checkWitnesses(); err != nil {
		return err
	}
	if a.maxAge > 0 && (signer == nil || a.path == "" || a.path == "stderr" || a.path == "stdout" || a.maxBytes == 0) {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_MAX_AGE needs PORTHOLE_AUDIT_SIGNING_KEY_FILE (what remains verifies from a signed pruned record), a file PORTHOLE_AUDIT_LOG and a PORTHOLE_AUDIT_MAX_BYTES that rotates it (only rotated files are pruned)", errUsage)
	}
	if f := audit.FsyncPolicy(a.fsync); f != audit.FsyncAlways && f != audit.FsyncInterval {
		return fmt.Errorf("%w: PORTHOLE_AUDIT_FSYNC=%q: want always or interval", errUsage, a.fsync)
	}
	return nil
}

// open opens the audit log these settings describe, keyed with key, or with
// a random key (and a warning) when the operator gave none.
func (a *auditSettings) open(log, evidence *zap.Logger, key []byte, signer ed25519.PrivateKey) (*audit.Log, error) {
	cfg := audit.Config{Path: a.path, Fsync: audit.FsyncPolicy(a.fsync), Timeout: a.timeout, MaxBytes: a.maxBytes,
		Signer: signer, CheckpointPath: a.checkpointFile, CheckpointEvery: a.checkpointEvery, CheckpointInterval: a.checkpointInterval,
		Origin: a.origin, MaxAge: a.maxAge, MinFreeBytes: a.minFreeBytes,
		WitnessQuorum: a.witnessQuorum, WitnessMaxLag: a.witnessMaxLag, WitnessClient: witnessClient(),
		OnProblem: func(problem string, recovered bool) {
			// Once per episode: docs/audit.md, Health.
			if recovered {
				log.Info("the audit log recovered", zap.String("problem", problem))
				return
			}
			log.Error("the audit log is failing; /readyz is not ready until it recovers", zap.String("problem", problem))
		},
		OnPruned: func(files []string, err error) {
			if err != nil {
				log.Error("audit files past PORTHOLE_AUDIT_MAX_AGE could not be pruned", zap.Error(err))
				return
			}
			evidence.Info("audit files pruned", zap.Strings("files", files))
		},
		OnCheckpoint: func(c audit.Checkpoint, fileErr error) {
			// docs/audit.md: a reviewer collects these lines into a
			// checkpoints file. Logged even when the checkpoint file's
			// write failed.
			evidence.Info("audit checkpoint", zap.Any("checkpoint", c))
			if fileErr != nil {
				log.Error("the audit checkpoint could not be written to PORTHOLE_AUDIT_CHECKPOINT_FILE", zap.Uint64("seq", c.Seq), zap.Error(fileErr))
			}
		}}
	if err := a.check(log, signer); err != nil {
		return nil, err
	}
	cfg.Witnesses = a.parsedWitnesses
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

const auditUsage = `Usage:
  porthole audit verify [--key-file FILE]... [--public-key FILE]...
                        [--checkpoints FILE]... [--from-checkpoint SEQ]
                        [--tree FILE] [--origin ORIGIN]
                        [--witness-key VKEY... [--witness-quorum N]
                         [--witness URL]... [--cosigned FILE]...] LOG...
      check a log, or a rotated series in any order, from its genesis (or
      the checkpoint named); exit 1 at the first record that was edited,
      deleted, reordered, inserted or truncated, or when the series does
      not reach the latest checkpoint given with --checkpoints; with the
      witnesses' keys, also when the series is not the tree they cosigned,
      ends before any tree one of them cosigned, or no tree was cosigned
      by a quorum
  porthole audit prove (--seq SEQ | --request-id ID [--kind call|result])
                       [--tree FILE] [-o OUT] LOG...
      print a record of a trail kept as a Merkle tree (PORTHOLE_AUDIT_ORIGIN)
      with its inclusion proof against the latest signed checkpoint, as a
      C2SP tlog-proof whose extra data is the record's line
  porthole audit check-proof --public-key FILE... --origin ORIGIN PROOF
      check such a proof with the public key alone, without the trail;
      exit 1 when it does not check
  porthole audit note-key --public-key FILE --origin ORIGIN
      print the note verifier key of the log's signed tree checkpoints
      (<origin>+<key hash>+<key>), for tools other than porthole's
  porthole audit keygen --private-key-file FILE --public-key-file FILE
      write an Ed25519 key pair for signing checkpoints
  porthole audit prune --before T --key-file FILE --signing-key-file FILE
                       [--key-file FILE]... [--public-key FILE]... LOG...
      remove the oldest files of an archived series whose every record is
      before T, after appending a signed pruned record to its newest file
      (the first --key-file keys it); refuses a log porthole is writing
  porthole audit report [--key-file FILE]... [--public-key FILE]...
                        [--checkpoints FILE]... [--from-checkpoint SEQ]
                        [--origin ORIGIN [--witness-key VKEY... ...]]
                        [--unverified] [--since T] [--until T]
                        [--principal NAME] [--tool NAME]
                        [--arg NAME=VALUE | --arg NAME~TEXT]...
                        [--json | --html OUT.html] LOG...
      verify the files as verify does (each chain, one per replica, as a
      series of its own; with --origin and the witnesses' flags, as verify
      takes them, one trail held to what its witnesses cosigned), then say
      who asked what: calls per principal and
      tool, denials by reason and address, first and last seen (T is
      RFC 3339, or a duration ago like 24h); exit 1, writing no report,
      when they do not verify, unless --unverified.
      --tool and --arg count only calls of that tool, holding an argument
      of that name whose value equals VALUE (or contains TEXT), and their
      results; denials are then left out.
      --html writes one self-contained page (mode 0600: it holds personal
      data) with the verdict, charts, tables and up to 10,000 records
`
