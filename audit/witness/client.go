package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/porthole-dev/porthole/audit/merkle"
)

// Witness is a witness a log sends its checkpoints to: where it is, and
// the key its cosignatures are checked with.
type Witness struct {
	URL      string
	Verifier *Verifier
}

// ParseWitnesses reads a list of witnesses: entries separated by commas,
// each a URL and a cosignature/v1 verifier key separated by a space.
func ParseWitnesses(list string) ([]Witness, error) {
	var ws []Witness
	seen := map[string]bool{}
	for _, entry := range strings.Split(list, ",") {
		fields := strings.Fields(entry)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || !strings.HasPrefix(fields[0], "http://") && !strings.HasPrefix(fields[0], "https://") {
			return nil, fmt.Errorf("%s is not a witness's URL and verifier key", strconv.QuoteToASCII(entry))
		}
		v, err := NewVerifier(fields[1])
		if err != nil {
			return nil, fmt.Errorf("the witness at %s: %v", fields[0], err)
		}
		if seen[v.Name()] || seen[string(v.PublicKey())] {
			return nil, fmt.Errorf("the witness %s is named twice, or its key given twice", v.Name())
		}
		seen[v.Name()], seen[string(v.PublicKey())] = true, true
		ws = append(ws, Witness{URL: strings.TrimSuffix(fields[0], "/"), Verifier: v})
	}
	return ws, nil
}

// Status is how far a witness has cosigned a log.
type Status struct {
	Name string
	URL  string
	// Size is the tree size of the latest checkpoint it cosigned, and At
	// when porthole received that cosignature; 0 and zero before any.
	Size int64
	At   time.Time
	// Behind is the size of the latest checkpoint sent beyond Size, and
	// BehindSince when the oldest checkpoint it has not cosigned was sent;
	// zero when it has cosigned the latest.
	Behind      int64
	BehindSince time.Time
	// Err is why the last try failed, or "".
	Err string
}

// Sender sends each checkpoint of a log kept as a Merkle tree to its
// witnesses, each in a goroutine of its own, with a consistency proof from
// the size the witness last cosigned; it keeps the cosignatures in a file
// beside the trail and says how far each witness is. A witness down or
// slow holds nothing up: only its latest checkpoint waits for it.
type Sender struct {
	treeMu sync.Mutex
	tree   *merkle.Tree // read-only
	fileMu sync.Mutex
	file   *os.File // the cosignatures
	client *http.Client
	ws     []*sending
	quit   chan struct{}
	wg     sync.WaitGroup
}

// sending is one witness's side of a Sender.
type sending struct {
	w      Witness
	wake   chan struct{}
	mu     sync.Mutex
	status Status
	known  int64 // the size the witness last cosigned, as porthole knows it; -1 unknown
	next   []byte
	size   int64
	// firstAfter is when the first checkpoint given after the one being
	// tried was given: the oldest the witness has not cosigned, should
	// the try succeed.
	firstAfter time.Time
	trying     int64
}

// retryEvery is how often a witness whose last try failed is tried again.
var retryEvery = 2 * time.Second

// NewSender sends to ws, with proofs from the tree file at treePath,
// appending each cosigned checkpoint to the file at cosigPath.
func NewSender(ws []Witness, treePath, cosigPath string, client *http.Client) (*Sender, error) {
	tree, err := merkle.ReadTree(treePath)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(cosigPath, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		err = endTornLine(f)
	}
	if err != nil {
		tree.Close()
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	s := &Sender{tree: tree, file: f, client: client, quit: make(chan struct{})}
	for _, w := range ws {
		sw := &sending{w: w, wake: make(chan struct{}, 1), known: -1, status: Status{Name: w.Verifier.Name(), URL: w.URL}}
		s.ws = append(s.ws, sw)
		s.wg.Add(1)
		go s.run(sw)
	}
	return s, nil
}

// Send gives every witness the checkpoint note of a tree of size records
// (whose hashes the tree file holds, synced), in place of any it has not
// yet taken.
func (s *Sender) Send(cp []byte, size int64, now time.Time) {
	for _, sw := range s.ws {
		sw.mu.Lock()
		sw.next, sw.size = cp, size
		if sw.status.Behind == 0 {
			sw.status.BehindSince = now
		}
		if sw.trying != 0 && sw.firstAfter.IsZero() {
			sw.firstAfter = now
		}
		sw.status.Behind = size
		sw.mu.Unlock()
		select {
		case sw.wake <- struct{}{}:
		default:
		}
	}
}

// Statuses is how far each witness is.
func (s *Sender) Statuses() []Status {
	out := make([]Status, len(s.ws))
	for i, sw := range s.ws {
		sw.mu.Lock()
		out[i] = sw.status
		sw.mu.Unlock()
	}
	return out
}

// Close stops the goroutines and closes the files.
func (s *Sender) Close() error {
	close(s.quit)
	s.wg.Wait()
	s.tree.Close()
	return s.file.Close()
}

func (s *Sender) run(sw *sending) {
	defer s.wg.Done()
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-sw.wake:
		case <-retry.C:
		}
		sw.mu.Lock()
		cp, size, known := sw.next, sw.size, sw.known
		sw.trying, sw.firstAfter = size, time.Time{}
		sw.mu.Unlock()
		if cp == nil || size == known {
			continue
		}
		line, got, err := s.submit(sw.w, cp, size, known)
		if err == nil {
			// A cosignature counts once it is kept: what is not in the
			// file proves nothing to a reviewer.
			if err = s.keep(sw.w, cp, line, size); err != nil {
				err = fmt.Errorf("keeping its cosignature: %v", err)
			}
		}
		sw.settle(size, got, err)
	}
}

// settle takes in the outcome of a try: the size the witness holds, and
// on success that it cosigned size; a later checkpoint given meanwhile
// keeps it behind since that one was given.
func (sw *sending) settle(size, got int64, err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if got >= 0 {
		sw.known = got
	}
	sw.status.Err = ""
	if err != nil {
		sw.status.Err = err.Error()
		return
	}
	sw.status.Size, sw.status.At = size, time.Now()
	sw.status.Behind, sw.status.BehindSince = 0, time.Time{}
	if sw.size != size {
		sw.status.Behind, sw.status.BehindSince = sw.size, sw.firstAfter
	}
}

// submit sends the checkpoint with a proof from known (0 when unknown),
// and once more from the size a 409 names. It returns the cosignature line
// and the size the witness now holds (-1 when unknown).
func (s *Sender) submit(w Witness, cp []byte, size, known int64) (string, int64, error) {
	old := max(known, 0)
	for try := 0; try < 2; try++ {
		if old > size {
			return "", old, fmt.Errorf("the witness cosigned a tree of %d records and the log's is of %d: the log was cut or forked", old, size)
		}
		body, err := s.request(cp, old, size)
		if err != nil {
			return "", -1, err
		}
		status, text, err := s.post(w.URL, body)
		switch {
		case err != nil:
			return "", -1, err
		case status == http.StatusOK:
			line, err := checkCosignature(w, cp, text)
			if err != nil {
				return "", -1, err
			}
			return line, size, nil
		case status == http.StatusConflict:
			n, err := strconv.ParseInt(strings.TrimSuffix(text, "\n"), 10, 64)
			if err != nil || n == old {
				return "", -1, fmt.Errorf("the witness answered 409 without another size (%s)", strconv.QuoteToASCII(cut(text)))
			}
			old = n
		default:
			return "", -1, fmt.Errorf("the witness answered %d: %s", status, strconv.QuoteToASCII(cut(text)))
		}
	}
	return "", old, errors.New("the witness named a size twice")
}

// request is an add-checkpoint body from old to size.
func (s *Sender) request(cp []byte, old, size int64) ([]byte, error) {
	var proof tlog.TreeProof
	if old > 0 && old < size {
		s.treeMu.Lock()
		err := s.tree.Grow(size)
		if err == nil {
			proof, err = s.tree.ProveTree(size, old)
		}
		s.treeMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("proving the tree of %d records extends that of %d: %v", size, old, err)
		}
	}
	return RequestBody(old, proof, cp), nil
}

// RequestBody is an add-checkpoint request's body: the old size, the
// consistency proof's hashes, an empty line and the checkpoint.
func RequestBody(old int64, proof tlog.TreeProof, cp []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteByte('\n')
	b.Write(cp)
	return b.Bytes()
}

func (s *Sender) post(url string, body []byte) (int, string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.quit: // Close does not wait on a witness that hangs
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(text), err
}

// checkCosignature is the witness's cosignature line among what it
// answered: signature lines alone, each checked over the checkpoint's own
// text (an answer is never joined to the checkpoint, where an empty line
// could move where its text ends).
func checkCosignature(w Witness, cp []byte, answer string) (string, error) {
	split := bytes.LastIndex(cp, []byte("\n\n"))
	if split < 0 {
		return "", errors.New("the checkpoint is not a signed note")
	}
	text := string(cp[:split+1])
	for _, line := range strings.SplitAfter(answer, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "— ") || !strings.HasSuffix(line, "\n") {
			return "", fmt.Errorf("the witness's answer holds a line that is no signature: %s", strconv.QuoteToASCII(cut(line)))
		}
		c, ok, err := cosignatureOf(text, line, []*Verifier{w.Verifier})
		if err != nil {
			return "", err
		}
		if ok {
			return c.Line, nil
		}
	}
	return "", errors.New("the witness's answer holds no cosignature of its key")
}

// keep appends a cosigned checkpoint to the cosignatures file, synced.
func (s *Sender) keep(w Witness, cp []byte, line string, size int64) error {
	b, err := json.Marshal(Cosigned{Witness: w.Verifier.Name(), Size: size, Checkpoint: string(cp) + line})
	if err != nil {
		return err
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if _, err := s.file.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.file.Sync()
}

// Cosigned is a line of the cosignatures file: a checkpoint of the log
// with one witness's cosignature.
type Cosigned struct {
	Witness    string `json:"witness"`
	Size       int64  `json:"size"`
	Checkpoint string `json:"checkpoint"`
}

func cut(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// endTornLine ends a line a crash cut short, so that the next cosignature
// is a line of its own.
func endTornLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil || last[0] == '\n' {
		return err
	}
	_, err = f.Write([]byte("\n"))
	return err
}
