package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit/witness"
)

const witnessUsage = `Usage:
  porthole witness keygen --name NAME --private-key-file FILE --verifier-key-file FILE
      write a witness key: its signer key (mode 0600; the omniwitness takes
      it too) and its cosignature/v1 verifier key, for logs and reviewers
  porthole witness serve --key-file FILE --log-key VKEY... --state-dir DIR
                         [--listen ADDR]
      cosign the checkpoints of the logs named (each by the note verifier
      key porthole audit note-key prints) when each extends the last one
      cosigned for its log (C2SP tlog-witness: POST /add-checkpoint), and
      serve the latest cosigned (GET /checkpoint?origin=ORIGIN)
`

func runWitness(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, witnessUsage)
		return fmt.Errorf("%w: porthole witness keygen|serve", errUsage)
	}
	switch args[0] {
	case "keygen":
		return runWitnessKeygen(args[1:], stdout, stderr)
	case "serve":
		return runWitnessServe(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, witnessUsage)
		return nil
	}
	fmt.Fprint(stderr, witnessUsage)
	return fmt.Errorf("%w: unknown witness command %q", errUsage, args[0])
}

func runWitnessKeygen(args []string, stdout, stderr io.Writer) error {
	var name, privFile, vkeyFile string
	s := newSettings("witness keygen", "Write a witness's key pair.", stderr)
	s.fs.StringVar(&name, "name", "", "the witness's name, as its cosignatures carry it (such as witness.example.com/security-team)")
	s.fs.StringVar(&privFile, "private-key-file", "", "where to write the signer key (mode 0600): give it to porthole witness serve --key-file")
	s.fs.StringVar(&vkeyFile, "verifier-key-file", "", "where to write the verifier key: give it to porthole (PORTHOLE_AUDIT_WITNESSES) and to reviewers")
	if err := s.parse(args); err != nil {
		return err
	}
	if name == "" || privFile == "" || vkeyFile == "" {
		return fmt.Errorf("%w: witness keygen needs --name, --private-key-file and --verifier-key-file", errUsage)
	}
	skey, vkey, err := witness.GenerateKey(name)
	if err != nil {
		return fmt.Errorf("%w: --name: %v", errUsage, err)
	}
	if err := writeNew(privFile, []byte(skey+"\n"), 0o600); err != nil {
		return err
	}
	if err := writeNew(vkeyFile, []byte(vkey+"\n"), 0o644); err != nil {
		os.Remove(privFile)
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s: %s\n", privFile, vkeyFile, vkey)
	return nil
}

func runWitnessServe(args []string, stderr io.Writer) error {
	var keyFile, stateDir, listen string
	var logKeys fileList
	s := newSettings("witness serve", "Cosign audit logs' checkpoints (C2SP tlog-witness).", stderr)
	s.fs.StringVar(&keyFile, "key-file", "", "the witness's signer key (from porthole witness keygen)")
	s.fs.Var(&logKeys, "log-key", "the note verifier key of a log to witness (porthole audit note-key); once per log")
	s.fs.StringVar(&stateDir, "state-dir", "", "the directory of the witness's state: the latest checkpoint cosigned per log, and any second signed tree of a size it cosigned (a fork); keep it on a durable volume, never shared")
	s.fs.StringVar(&listen, "listen", "127.0.0.1:7380", "the address to serve on")
	if err := s.parse(args); err != nil {
		return err
	}
	if keyFile == "" || stateDir == "" || len(logKeys) == 0 {
		return fmt.Errorf("%w: witness serve needs --key-file, --state-dir and at least one --log-key", errUsage)
	}
	skey, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	cosigner, err := witness.NewCosigner(string(skey), nil)
	if err != nil {
		return fmt.Errorf("%w: --key-file %s: %v", errUsage, keyFile, err)
	}
	srv, err := witness.NewServer(cosigner, logKeys, stateDir)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer log.Sync()
	srv.OnRefusal = func(origin, why string) {
		log.Warn("witness refused a checkpoint the log signed", zap.String("origin", origin), zap.String("why", why))
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	log.Info("witness serving", zap.String("addr", ln.Addr().String()), zap.String("name", cosigner.Name()), zap.String("verifierKey", cosigner.VerifierKey()))
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
