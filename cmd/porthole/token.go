package main

import (
	"fmt"
	"io"

	"github.com/porthole-dev/porthole/gateway/tokens"
)

const tokenNewSummary = `Make a new token for the principal NAME, append NAME and the token's SHA-256 to
the tokens file (created with mode 0600 if missing), and print the token once on
stdout. porthole keeps only the digest: a lost token cannot be recovered, only
replaced.`

func runToken(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "new" {
		return fmt.Errorf("%w: porthole token new --name NAME --tokens-file FILE", errUsage)
	}
	var name, file string
	s := newSettings("token new", tokenNewSummary, stderr)
	s.fs.StringVar(&name, "name", "", "the principal's name, as it will appear in logs and audit records")
	s.string(&file, "tokens-file", "PORTHOLE_TOKENS_FILE", "", "the tokens file to append to")
	if err := s.parse(args[1:]); err != nil {
		return err
	}
	if name == "" || file == "" {
		return fmt.Errorf("%w: both --name and --tokens-file are required", errUsage)
	}
	token, err := tokens.Append(file, name)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	fmt.Fprintf(stderr, "porthole: appended the digest of a new token for %s to %s; the token above is shown only once\n", name, file)
	return nil
}
