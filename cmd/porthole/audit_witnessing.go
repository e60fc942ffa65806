package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit/review"
	"github.com/porthole-dev/porthole/audit/witness"
)

// witnessFlags are what verify and report are given of one trail: its
// origin, and its witnesses.
type witnessFlags struct {
	origin               string
	keys, urls, cosigned fileList
	quorum               int
}

// apply sets the origin and the witnesses in opts, naming what was read
// in evidence.
func (f *witnessFlags) apply(opts *review.VerifyOptions, evidence *[]string) (err error) {
	opts.Origin = f.origin
	opts.Witnessing, err = f.witnessing(f.origin, evidence)
	return err
}

func (f *witnessFlags) register(s *settings) {
	s.fs.StringVar(&f.origin, "origin", "", "the origin every signed tree checkpoint must name (PORTHOLE_AUDIT_ORIGIN): the trail meant, since one key may sign several; with the witnesses' keys, the files must be that one trail's")
	s.fs.Var(&f.keys, "witness-key", "a witness's cosignature/v1 verifier key (from porthole witness keygen), or a file holding one; once per witness")
	s.fs.IntVar(&f.quorum, "witness-quorum", 1, "how many of the witnesses given must have cosigned a tree for it to prove the series")
	s.fs.Var(&f.urls, "witness", "a witness's URL, asked for the latest checkpoint of --origin it cosigned; once per witness")
	s.fs.Var(&f.cosigned, "cosigned", "a file of cosigned checkpoints: the log's .cosignatures file, or a checkpoint as a witness serves it; may be given more than once")
}

// witnessing reads the witnesses' keys and the cosigned checkpoints, from
// files and from the witnesses themselves; nil when no key was given.
func (f *witnessFlags) witnessing(origin string, evidence *[]string) (*review.Witnessing, error) {
	if len(f.keys) == 0 {
		if len(f.urls)+len(f.cosigned) > 0 {
			return nil, fmt.Errorf("%w: --witness and --cosigned need the witnesses' keys (--witness-key)", errUsage)
		}
		return nil, nil
	}
	o := &review.Witnessing{Quorum: f.quorum}
	seen := map[string]bool{}
	for _, k := range f.keys {
		v, err := witness.NewVerifier(k)
		if b, ferr := os.ReadFile(k); err != nil && ferr == nil {
			v, err = witness.NewVerifier(string(b))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --witness-key %s: %v", errUsage, k, err)
		}
		// A cosignature does not sign the witness's name: one key given
		// under two names would count twice toward the quorum.
		if seen[string(v.PublicKey())] {
			return nil, fmt.Errorf("%w: --witness-key %s: that witness's key is given twice", errUsage, v.Name())
		}
		seen[string(v.PublicKey())] = true
		o.Keys = append(o.Keys, v)
	}
	if f.quorum < 1 || f.quorum > len(o.Keys) {
		return nil, fmt.Errorf("%w: --witness-quorum %d: between 1 and the %d witnesses given", errUsage, f.quorum, len(o.Keys))
	}
	if origin == "" {
		// One signing key may sign every replica's trail: the cosigned
		// checkpoints are those of the origin named.
		return nil, fmt.Errorf("%w: --witness-key needs --origin: witnesses cosign one trail's checkpoints", errUsage)
	}
	for _, u := range f.urls {
		cp, err := fetchCosigned(u, origin)
		if err != nil {
			return nil, fmt.Errorf("asking the witness %s: %v", u, err)
		}
		o.Cosigned = append(o.Cosigned, cp)
		*evidence = append(*evidence, "the latest checkpoint witness "+u+" cosigned")
	}
	for _, file := range f.cosigned {
		cps, err := readCosigned(file)
		if err != nil {
			return nil, fmt.Errorf("reading --cosigned %s: %v", file, err)
		}
		o.Cosigned = append(o.Cosigned, cps...)
		*evidence = append(*evidence, "cosigned checkpoints file "+file)
	}
	return o, nil
}

// fetchCosigned asks a porthole witness for the latest checkpoint of
// origin it cosigned.
func fetchCosigned(base, origin string) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(base, "/") + "/checkpoint?origin=" + url.QueryEscape(origin))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("it answered %d %s", resp.StatusCode, printable(strings.TrimSpace(string(b))))
	}
	return b, err
}

// readCosigned reads a file of cosigned checkpoints: JSON lines with a
// "checkpoint" (the cosignatures file porthole keeps), or one checkpoint
// as a witness serves it.
func readCosigned(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return [][]byte{b}, nil
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var c witness.Cosigned
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("line %d is not a cosigned checkpoint", n)
		}
		out = append(out, []byte(c.Checkpoint))
	}
	return out, sc.Err()
}
