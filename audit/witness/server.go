package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

// maxRequestBytes bounds an add-checkpoint request: 63 proof lines and a
// checkpoint with a few signatures fit many times over.
const maxRequestBytes = 64 << 10

// Server is a witness: it cosigns the checkpoints of the logs it was
// configured with (C2SP tlog-witness add-checkpoint), and serves the
// latest it cosigned of each.
type Server struct {
	cosigner *Cosigner
	logs     map[string]note.Verifier // by origin
	store    store
	// OnRefusal, when set, is told of each refused checkpoint that the
	// log's key signed (a shrink or a fork), which is also kept.
	OnRefusal func(origin, why string)
	// mu makes each check of a log's latest checkpoint and its update one
	// step: two requests at once must not roll a log back.
	mu sync.Mutex
	// lock holds the state directory's lock for the server's life.
	lock *os.File
}

// Close lets another witness take the state.
func (s *Server) Close() error { return s.lock.Close() }

// NewServer is a witness that signs with cosigner, keeps its state in
// dir, and witnesses the logs whose note verifier keys are logKeys (each
// named by its log's origin, as `porthole audit note-key` prints it).
func NewServer(cosigner *Cosigner, logKeys []string, dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// One witness per state: two would roll each other's back.
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another witness holds the state %s: %v", dir, err)
	}
	s := &Server{lock: lock, cosigner: cosigner, logs: map[string]note.Verifier{}, store: store{dir}}
	for _, k := range logKeys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("a log's key %s: %v", strconv.QuoteToASCII(k), err)
		}
		if err := merkle.CheckOrigin(v.Name()); err != nil {
			return nil, fmt.Errorf("a log's origin: %v", err)
		}
		if _, dup := s.logs[v.Name()]; dup {
			return nil, fmt.Errorf("two keys of the log %s: a log has one", v.Name())
		}
		s.logs[v.Name()] = v
	}
	if len(s.logs) == 0 {
		return nil, errors.New("a witness needs the key of at least one log")
	}
	return s, nil
}

// Handler serves POST /add-checkpoint (C2SP tlog-witness) and GET
// /checkpoint?origin=ORIGIN, the latest checkpoint cosigned for a log with
// the log's signature and the witness's cosignature (C2SP leaves how a
// witness serves what it cosigned open: this is porthole's).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", s.addCheckpoint)
	mux.HandleFunc("GET /checkpoint", s.latestCheckpoint)
	return mux
}

// request is an add-checkpoint request body.
type request struct {
	old   int64
	proof tlog.TreeProof
	note  []byte
}

// parseRequest reads "old N", the proof's lines, an empty line and the
// checkpoint.
func parseRequest(body []byte) (*request, error) {
	// The first empty line ends the proof: the checkpoint's own empty
	// line comes after its text.
	head, rest, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return nil, errors.New("no empty line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	oldText, found := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseInt(oldText, 10, 64)
	if !found || err != nil || old < 0 || strconv.FormatInt(old, 10) != oldText {
		return nil, errors.New(`the first line is not "old <size>"`)
	}
	if len(lines)-1 > 63 {
		return nil, errors.New("more than 63 consistency proof lines")
	}
	r := &request{old: old, note: rest}
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != len(tlog.Hash{}) {
			return nil, errors.New("a consistency proof line is not a base64 hash")
		}
		r.proof = append(r.proof, tlog.Hash(h))
	}
	return r, nil
}

// problem is a refusal: its HTTP status, its reason, and whether it is
// evidence of the log's misbehaviour, to be kept.
type problem struct {
	status int
	why    string
	keep   bool
	body   string // 409's text/x.tlog.size
}

func (s *Server) addCheckpoint(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "the request is too large or cut short", http.StatusBadRequest)
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	line, p := s.add(req)
	if p != nil {
		if p.status == http.StatusConflict {
			w.Header().Set("Content-Type", "text/x.tlog.size")
			w.WriteHeader(p.status)
			io.WriteString(w, p.body)
			return
		}
		http.Error(w, p.why, p.status)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, line)
}

// add checks a request against the log's latest cosigned checkpoint and,
// when it extends it, keeps the new one and returns its cosignature line.
func (s *Server) add(req *request) (string, *problem) {
	origin, _, _ := bytes.Cut(req.note, []byte("\n"))
	v, ok := s.logs[string(origin)]
	if !ok {
		return "", &problem{status: http.StatusNotFound, why: "this witness does not witness that log"}
	}
	n, err := note.Open(req.note, note.VerifierList(v))
	if err != nil {
		return "", &problem{status: http.StatusForbidden, why: "the checkpoint is not signed by the log's key"}
	}
	cp, err := merkle.ParseText(n.Text)
	if err != nil || cp.Size == 0 {
		// porthole's trees never have no records: the tree of none would
		// be cosigned, and no proof extends it (tlog proves from 1 up).
		return "", &problem{status: http.StatusBadRequest, why: "the checkpoint is malformed, or of no records"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last, err := s.store.read(cp.Origin)
	if err != nil {
		return "", &problem{status: http.StatusInternalServerError, why: "the witness cannot read its state"}
	}
	if p := s.check(req, cp, last); p != nil {
		if p.keep {
			s.keep(cp.Origin, req, p.why)
		}
		return "", p
	}
	// Kept and served: the text, the log's signatures that verified, and
	// this witness's own; any other line of the request is dropped, so
	// that none can spoil what a reviewer is served.
	signed, err := note.Sign(&note.Note{Text: n.Text, Sigs: n.Sigs}, s.cosigner)
	if err != nil {
		return "", &problem{status: http.StatusInternalServerError, why: "the witness cannot sign"}
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(signed), "\n"), "\n")
	line := lines[len(lines)-1] + "\n"
	if last == nil || cp.Size > last.Size {
		if err := s.store.write(latest{Origin: cp.Origin, Size: cp.Size, Root: cp.Root[:], Checkpoint: string(signed)}); err != nil {
			return "", &problem{status: http.StatusInternalServerError, why: "the witness cannot keep its state"}
		}
	}
	return line, nil
}

// check holds a checkpoint to the log's latest cosigned one (last, nil
// when none): the request must name its size, and the checkpoint extend
// it by a consistency proof, or be it again.
func (s *Server) check(req *request, cp merkle.Checkpoint, last *latest) *problem {
	lastSize := int64(0)
	if last != nil {
		lastSize = last.Size
	}
	// Only a second tree of a size already cosigned is kept, as evidence:
	// both are the log's signed trees, and nothing else anyone may send
	// proves that the log misbehaved (an old size, a stale checkpoint, a
	// proof are the sender's words, and would fill the file for anyone).
	switch {
	case req.old > cp.Size:
		return &problem{status: http.StatusBadRequest, why: fmt.Sprintf("a checkpoint of %d records after one of %d", cp.Size, req.old)}
	case req.old != lastSize:
		return &problem{status: http.StatusConflict, why: "the old size is not the latest cosigned", body: strconv.FormatInt(lastSize, 10) + "\n"}
	case last != nil && cp.Size == last.Size && !bytes.Equal(cp.Root[:], last.Root):
		return &problem{status: http.StatusConflict, why: "a second tree of the same size: the log forked", body: strconv.FormatInt(lastSize, 10) + "\n", keep: true}
	case (last == nil || cp.Size == last.Size) && len(req.proof) > 0:
		return &problem{status: http.StatusBadRequest, why: "a consistency proof where none is due"}
	case last != nil && cp.Size > last.Size:
		if err := tlog.CheckTree(req.proof, cp.Size, cp.Root, last.Size, tlog.Hash(last.Root)); err != nil {
			return &problem{status: http.StatusUnprocessableEntity, why: "the checkpoint does not extend the latest cosigned: the log forked, or the proof is wrong"}
		}
	}
	return nil
}

// keep remembers a refused checkpoint the log signed; a failure to keep
// it is told too.
func (s *Server) keep(origin string, req *request, why string) {
	err := s.store.remember(origin, refusal{Time: time.Now().UTC(), Why: why, Old: req.old, Checkpoint: string(req.note)})
	if s.OnRefusal != nil {
		if err != nil {
			why += " (and keeping it failed: " + err.Error() + ")"
		}
		s.OnRefusal(origin, why)
	}
}

func (s *Server) latestCheckpoint(w http.ResponseWriter, r *http.Request) {
	origin := r.URL.Query().Get("origin")
	if _, ok := s.logs[origin]; !ok {
		http.Error(w, "this witness does not witness that log", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	last, err := s.store.read(origin)
	s.mu.Unlock()
	switch {
	case err != nil:
		http.Error(w, "the witness cannot read its state", http.StatusInternalServerError)
	case last == nil:
		http.Error(w, "no checkpoint of that log was cosigned yet", http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, last.Checkpoint)
	}
}
